// Package cache is the Valkey cache mercadofresco-catalogo (ElastiCache
// Serverless) that holds the circuit breakers' state every Lambda instance
// shares (lambdas/breaker), nothing else. It encrypts in transit (TLS) and
// at rest with the data key, lives in the VPC's isolated data subnets
// behind a security group that admits only the functions bound to it
// (Bind), and is reached without AUTH (the breaker keys carry no customer
// data). An environment that has the cache already imports it
// (Props.Import). docs/design.md#network.
package cache

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticache"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/alarm"
	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/removal"
	"github.com/mercadofresco/integration/lambdas/breaker/breakerapi"
)

// SpecName is the SPEC's name of the cache (environments add their suffix).
const SpecName = "mercadofresco-catalogo"

// Defaults of Props.
const (
	// DefaultMaxDataStorageGB caps the stored data: breaker states are a
	// few hundred bytes each, so 1 GB (the minimum) is far more than enough
	// and bounds the bill.
	DefaultMaxDataStorageGB = 1
	// DefaultMaxECPUPerSecond caps the processing units: each breaker call
	// is one small Lua script, ~1-2 ECPU; 450 orders in flight at peak make
	// a few hundred calls per second.
	DefaultMaxECPUPerSecond = 5000
	// Port is Valkey's port (ElastiCache Serverless listens on 6379).
	Port = 6379
)

// Import describes an existing cache of the environment.
type Import struct {
	// Endpoint is its host name; Port defaults to 6379.
	Endpoint string
	Port     float64
	// SecurityGroupID is the security group that guards it; Bind adds
	// ingress rules to it.
	SecurityGroupID string
}

// Props configures New. Vpc and Subnets are required unless Import is set;
// the Context's DataKey and Alerts when the cache is created.
type Props struct {
	core.Context
	// CacheName is the physical name. Nil means SpecName.
	CacheName *string
	// Import uses an existing cache instead of creating one.
	Import *Import
	// Vpc and Subnets place the cache (the network's data subnets).
	Vpc     awsec2.IVpc
	Subnets *awsec2.SubnetSelection
	// MaxDataStorageGB and MaxECPUPerSecond cap usage (and cost). Zero means
	// the defaults.
	MaxDataStorageGB, MaxECPUPerSecond float64
}

// Cache is the Valkey cache, created or imported.
type Cache struct {
	constructs.Construct
	// SecurityGroup guards the cache.
	SecurityGroup awsec2.ISecurityGroup
	// Resource is the created cache (nil when imported).
	Resource awselasticache.CfnServerlessCache
	// ThrottleAlarm exists when the cache was created here.
	ThrottleAlarm awscloudwatch.Alarm

	endpoint, port *string
	name           string
}

// New creates (or imports) the cache. Every problem is a synthesis error;
// the construct is still whole.
func New(scope constructs.Construct, id string, props *Props) *Cache {
	if props == nil {
		props = &Props{}
	}
	this := constructs.NewConstruct(scope, jsii.String(id))
	c := &Cache{Construct: this, name: SpecName}
	if props.CacheName != nil {
		c.name = *props.CacheName
	}
	v := core.Check(this, "cache")
	if imp := props.Import; imp != nil {
		v.If(imp.Endpoint == "" || imp.SecurityGroupID == "", "Import needs Endpoint and SecurityGroupID")
		port := imp.Port
		if port == 0 {
			port = Port
		}
		c.endpoint, c.port = jsii.String(imp.Endpoint), jsii.String(fmt.Sprint(port))
		c.SecurityGroup = awsec2.SecurityGroup_FromSecurityGroupId(this, jsii.String("SecurityGroup"), jsii.String(orPlaceholder(imp.SecurityGroupID, "sg-00000000")), &awsec2.SecurityGroupImportOptions{
			AllowAllOutbound: jsii.Bool(false),
		})
		return c
	}

	props.Require(v, core.DataKey|core.Alerts)
	vpc, subnets := core.RequireVpc(v, this, props.Vpc, props.Subnets, "the cache lives in its data subnets (or Import an existing cache)")
	storage := v.Count("MaxDataStorageGB", props.MaxDataStorageGB, DefaultMaxDataStorageGB, 1, 5000)
	ecpu := v.Count("MaxECPUPerSecond", props.MaxECPUPerSecond, DefaultMaxECPUPerSecond, 1000, 15000000)
	sg := awsec2.NewSecurityGroup(this, jsii.String("SecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              vpc,
		Description:      jsii.String(c.name + ": Valkey, reachable only from the functions bound to it"),
		AllowAllOutbound: jsii.Bool(false),
	})
	c.SecurityGroup = sg
	if subnets == nil {
		subnets = &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}
	}
	var subnetIDs []any
	if props.Vpc != nil {
		for _, id := range *vpc.SelectSubnets(subnets).SubnetIds {
			subnetIDs = append(subnetIDs, id)
		}
	}
	var keyID any
	if props.DataKey != nil {
		keyID = props.DataKey.KeyArn()
	}
	c.Resource = awselasticache.NewCfnServerlessCache(this, jsii.String("Resource"), &awselasticache.CfnServerlessCacheProps{
		Engine:              jsii.String("valkey"),
		MajorEngineVersion:  jsii.String("8"),
		ServerlessCacheName: jsii.String(c.name),
		Description:         jsii.String("MercadoFresco: circuit breaker state shared by every Lambda instance"),
		KmsKeyId:            keyID,
		SecurityGroupIds:    &[]any{sg.SecurityGroupId()},
		SubnetIds:           &subnetIDs,
		CacheUsageLimits: &awselasticache.CfnServerlessCache_CacheUsageLimitsProperty{
			DataStorage:   &awselasticache.CfnServerlessCache_DataStorageProperty{Maximum: jsii.Number(storage), Unit: jsii.String("GB")},
			EcpuPerSecond: &awselasticache.CfnServerlessCache_ECPUPerSecondProperty{Maximum: jsii.Number(ecpu)},
		},
		// Breaker state is rebuilt within one open period after a loss:
		// no snapshots to pay for.
		SnapshotRetentionLimit: jsii.Number(0),
	})
	// CloudFormation cannot snapshot a serverless cache on deletion.
	c.Resource.ApplyRemovalPolicy(removal.For(props.RemovalPolicy, removal.Data), nil)
	c.endpoint, c.port = c.Resource.AttrEndpointAddress(), c.Resource.AttrEndpointPort()

	c.ThrottleAlarm = alarm.New(this, "ThrottleAlarm", &alarm.Props{
		Metric: awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace:  jsii.String("AWS/ElastiCache"),
			MetricName: jsii.String("ThrottledCmds"),
			// Serverless caches publish their metrics under the dimension
			// "clusterId" (camelCase), not the node-based "CacheClusterId";
			// an alarm on the latter never receives data.
			DimensionsMap: &map[string]*string{"clusterId": jsii.String(c.name)},
			Period:        awscdk.Duration_Minutes(jsii.Number(5)),
			Statistic:     jsii.String("Sum"),
		}),
		Topic:       props.Alerts,
		Description: fmt.Sprintf("Valkey %s throttled commands (usage limits reached): circuit breakers fail open while it lasts. Raise MaxECPUPerSecond or look for a caller in a loop.", c.name),
		Threshold:   0,
		MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING, // no throttling reports nothing
	})
	return c
}

func orPlaceholder(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Endpoint is the cache's host name.
func (c *Cache) Endpoint() *string { return c.endpoint }

// Address is host:port, the form breakerapi.EnvRedisAddr takes.
func (c *Cache) Address() *string {
	return awscdk.Fn_Join(jsii.String(":"), &[]*string{c.endpoint, c.port})
}

// AllowFrom admits peer to the cache's port (and peer's egress to it). The
// rules are opened from peer's side, so that a peer in another stack gets
// them in its own stack (no dependency cycle with the network stack).
func (c *Cache) AllowFrom(peer awsec2.IConnectable, description string) {
	peer.Connections().AllowTo(c.SecurityGroup, awsec2.Port_Tcp(jsii.Number(Port)), jsii.String(description))
}

// Bind lets fn use the cache for its circuit breakers: the function's
// security groups are admitted to the cache's port and its environment gets
// the address (breakerapi.EnvRedisAddr) and TLS on. fn must be in the VPC.
func (c *Cache) Bind(fn awslambda.Function) {
	if core.Check(c.Construct, "cache").If(fn.IsBoundToVpc() == nil || !*fn.IsBoundToVpc(), "%s is not in the VPC; only a function in the VPC can reach the cache", *fn.Node().Path()) {
		return
	}
	c.AllowFrom(fn, "circuit breaker state: "+*fn.Node().Path())
	fn.AddEnvironment(jsii.String(breakerapi.EnvRedisAddr), c.Address(), nil)
	fn.AddEnvironment(jsii.String(breakerapi.EnvRedisTLS), jsii.String("true"), nil)
}
