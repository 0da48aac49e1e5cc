package datastore

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticache"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// SpecName is the SPEC's name of the cache (environments add their suffix).
const SpecName = "mercadofresco-catalogo"

// The cache's figures: its usage (and cost) caps and its port.
const (
	// MaxDataStorageGB caps the stored data: breaker states are a
	// few hundred bytes each, so 1 GB (the minimum) is far more than enough
	// and bounds the bill.
	MaxDataStorageGB = 1
	// MaxECPUPerSecond caps the processing units: each breaker call
	// is one small Lua script, ~1-2 ECPU; 450 orders in flight at peak make
	// a few hundred calls per second.
	MaxECPUPerSecond = 5000
	// Port is Valkey's port (ElastiCache Serverless listens on 6379).
	Port = 6379
)

// UserEngine is the engine of the user group and its users: a "redis"
// group is the one that may hold a "default" user without a password (the
// disabled one), and ElastiCache admits it on a Valkey cache.
const UserEngine = "redis"

// CacheProps configures NewCache. Vpc and Subnets are required unless Import is set;
// the Context's DataKey and Alerts when the cache is created.
type CacheProps struct {
	core.Context
	// CacheName is the physical name. Nil means SpecName.
	CacheName *string
	// Import uses an existing cache instead of creating one.
	Import *config.CacheImport
	// Vpc and Subnets place the cache (the network's data subnets).
	Vpc     awsec2.IVpc
	Subnets *awsec2.SubnetSelection
}

// Cache is the Valkey cache mercadofresco-catalogo (ElastiCache
// Serverless), created or imported (CacheProps.Import): it holds the
// circuit breakers' state every Lambda instance shares (lambdas/breaker),
// nothing else. It encrypts in transit and at rest, lives in the isolated
// data subnets behind a security group that admits only the functions bound
// to it (Bind). Each bound function authenticates with IAM as its own
// ElastiCache user, whose access string admits only its breakers' keys
// (lambdaapi.BreakerAccessString); the group's "default" user is disabled.
type Cache struct {
	constructs.Construct
	// SecurityGroup guards the cache.
	SecurityGroup awsec2.ISecurityGroup
	// Resource is the created cache (nil when imported).
	Resource awselasticache.CfnServerlessCache
	// ThrottleAlarm exists when the cache was created here.
	ThrottleAlarm awscloudwatch.Alarm
	// UserGroup holds the default user and one user per bound function
	// (created here also for an imported cache, which attaches it).
	UserGroup awselasticache.CfnUserGroup

	endpoint, port *string
	name           string
	users          map[string]*user // by the bound function's construct path
	userIDs        []*string
}

// user is the ElastiCache user of one bound function.
type user struct {
	id           string
	dependencies []string
	resource     awselasticache.CfnUser
}

// NewCache creates (or imports) the cache. Every problem is a synthesis error;
// the construct is still whole.
func NewCache(scope constructs.Construct, id string, props *CacheProps) *Cache {
	this, v, props := core.Begin(scope, id, "cache", props)
	c := &Cache{Construct: this, name: *cmp.Or(props.CacheName, jsii.String(SpecName))}
	if props.Import != nil {
		c.name = props.Import.Name
	}
	c.users = map[string]*user{}
	c.newUserGroup(v)
	if imp := props.Import; imp != nil {
		v.If(imp.Name == "" || imp.Endpoint == "" || imp.SecurityGroupID == "", "Import needs Name, Endpoint and SecurityGroupID")
		port := cmp.Or(imp.Port, Port)
		c.endpoint, c.port = jsii.String(imp.Endpoint), jsii.String(fmt.Sprint(port))
		c.SecurityGroup = awsec2.SecurityGroup_FromSecurityGroupId(this, jsii.String("SecurityGroup"), jsii.String(cmp.Or(imp.SecurityGroupID, "sg-00000000")), &awsec2.SecurityGroupImportOptions{
			AllowAllOutbound: jsii.Bool(false),
		})
		return c
	}

	props.Require(v, core.DataKey|core.Alerts)
	vpc, subnets := core.RequireVpc(v, this, props.Vpc, props.Subnets, "the cache lives in its data subnets (or Import an existing cache)")
	sg := awsec2.NewSecurityGroup(this, jsii.String("SecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              vpc,
		Description:      jsii.String(c.name + ": Valkey, reachable only from the functions bound to it"),
		AllowAllOutbound: jsii.Bool(false),
	})
	c.SecurityGroup = sg
	subnets = cmp.Or(subnets, &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED})
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
		UserGroupId:         c.UserGroup.Ref(),
		CacheUsageLimits: &awselasticache.CfnServerlessCache_CacheUsageLimitsProperty{
			DataStorage:   &awselasticache.CfnServerlessCache_DataStorageProperty{Maximum: jsii.Number(MaxDataStorageGB), Unit: jsii.String("GB")},
			EcpuPerSecond: &awselasticache.CfnServerlessCache_ECPUPerSecondProperty{Maximum: jsii.Number(MaxECPUPerSecond)},
		},
		// Breaker state is rebuilt within one open period after a loss:
		// no snapshots to pay for.
		SnapshotRetentionLimit: jsii.Number(0),
	})
	// CloudFormation cannot snapshot a serverless cache on deletion.
	c.Resource.ApplyRemovalPolicy(observability.RemovalFor(props.RemovalPolicy, observability.Data), nil)
	c.endpoint, c.port = c.Resource.AttrEndpointAddress(), c.Resource.AttrEndpointPort()

	// Serverless caches publish their metrics under the dimension
	// "clusterId" (camelCase), not the node-based "CacheClusterId"; an
	// alarm on the latter never receives data.
	throttled := observability.Metric("AWS/ElastiCache", "ThrottledCmds", map[string]*string{"clusterId": jsii.String(c.name)}, "Sum", "", nil)
	c.ThrottleAlarm = observability.NewAnyAlarm(this, "ThrottleAlarm", throttled, props.Alerts,
		fmt.Sprintf("Valkey %s throttled commands (usage limits reached): circuit breakers fail open while it lasts. Raise MaxECPUPerSecond or look for a caller in a loop.", c.name))
	return c
}

// Endpoint is the cache's host name.
func (c *Cache) Endpoint() *string { return c.endpoint }

// Address is host:port, the form lambdaapi.EnvBreakerRedisAddr takes.
func (c *Cache) Address() *string {
	return awscdk.Fn_Join(jsii.String(":"), &[]*string{c.endpoint, c.port})
}

// AllowFrom admits peer to the cache's port (and peer's egress to it). The
// rules are opened from peer's side, so that a peer in another stack gets
// them in its own stack (no dependency cycle with the network stack).
func (c *Cache) AllowFrom(peer awsec2.IConnectable, description string) {
	peer.Connections().AllowTo(c.SecurityGroup, awsec2.Port_Tcp(jsii.Number(Port)), jsii.String(description))
}

// DefaultUserID is the id of the disabled "default" user.
func (c *Cache) DefaultUserID() string { return c.name + "-default" }

// userGroupID is what ElastiCache accepts as a user group id.
var userGroupID = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

func (c *Cache) newUserGroup(v *core.Problems) {
	v.If(len(c.name) > 40 || !userGroupID.MatchString(c.name), "the cache name %q is also the user group's id: 1 to 40 lower-case letters, digits and single hyphens, starting with a letter", c.name)
	def := awselasticache.NewCfnUser(c.Construct, jsii.String("DefaultUser"), &awselasticache.CfnUserProps{
		Engine:             jsii.String(UserEngine),
		UserId:             jsii.String(c.DefaultUserID()),
		UserName:           jsii.String("default"),
		AccessString:       jsii.String(lambdaapi.CacheNoAccess),
		AuthenticationMode: map[string]any{"Type": "no-password-required"},
	})
	c.userIDs = []*string{def.Ref()}
	c.UserGroup = awselasticache.NewCfnUserGroup(c.Construct, jsii.String("UserGroup"), &awselasticache.CfnUserGroupProps{
		Engine:      jsii.String(UserEngine),
		UserGroupId: jsii.String(c.name),
		UserIds:     &c.userIDs,
	})
}

// userID is fn's physical name as an ElastiCache user id (lower case,
// letters, digits and single hyphens), or a unique name from its path when
// it has none. Function names are unique in the account and region, and so
// are these.
func userID(fn awslambda.Function) string {
	name := fn.PhysicalName()
	if name == nil || *awscdk.Token_IsUnresolved(name) {
		name = awscdk.Names_UniqueResourceName(fn, &awscdk.UniqueResourceNameOptions{MaxLength: jsii.Number(40), Separator: jsii.String("-")})
	}
	id := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, *name)
	for strings.Contains(id, "--") {
		id = strings.ReplaceAll(id, "--", "-")
	}
	return strings.Trim(id, "-")
}

// Bind lets fn use the cache for the circuit breakers of dependencies: the
// function's security groups are admitted to the cache's port; it gets its
// own ElastiCache user (IAM authentication, id and name UserID(fn)) whose
// access string admits only those breakers' keys
// (lambdaapi.BreakerAccessString); its role may elasticache:Connect to this cache
// as that user only; its environment gets the address, TLS on, the user
// and the cache's name (lambdaapi). fn must be in the VPC. Binding fn
// again adds dependencies to its user.
func (c *Cache) Bind(fn awslambda.Function, dependencies ...string) {
	v := core.Check(c.Construct, "cache")
	path := *fn.Node().Path()
	if v.If(fn.IsBoundToVpc() == nil || !*fn.IsBoundToVpc(), "%s is not in the VPC; only a function in the VPC can reach the cache", path) {
		return
	}
	if v.If(len(dependencies) == 0, "Bind(%s): name the dependencies whose breakers it runs", path) {
		return
	}
	u := c.users[path]
	if u == nil {
		u = &user{id: userID(fn)}
		for _, other := range c.users {
			if v.If(other.id == u.id, "%s and another bound function would share the ElastiCache user %s", path, u.id) {
				return
			}
		}
		v.If(!userGroupID.MatchString(u.id), "%s: no ElastiCache user id can be made of its name (%q)", path, u.id)
		c.users[path] = u
		u.resource = awselasticache.NewCfnUser(c.Construct, jsii.String("User-"+u.id), &awselasticache.CfnUserProps{
			Engine:             jsii.String(UserEngine),
			UserId:             jsii.String(u.id),
			UserName:           jsii.String(u.id), // IAM authentication: the name is the id
			AuthenticationMode: map[string]any{"Type": "iam"},
		})
		c.userIDs = append(c.userIDs, u.resource.Ref())
		c.UserGroup.SetUserIds(&c.userIDs)
		c.AllowFrom(fn, "circuit breaker state: "+path)
		stack := awscdk.Stack_Of(fn)
		arn := func(resource, name string) string {
			return *stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("elasticache"), Resource: jsii.String(resource),
				ResourceName: jsii.String(name), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
		}
		awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
			Grantee:      fn,
			Actions:      jsii.Strings("elasticache:Connect"),
			ResourceArns: jsii.Strings(arn("serverlesscache", c.name), arn("user", u.id)),
		})
		fn.AddEnvironment(jsii.String(lambdaapi.EnvBreakerRedisAddr), c.Address(), nil)
		fn.AddEnvironment(jsii.String(lambdaapi.EnvBreakerRedisTLS), jsii.String("true"), nil)
		fn.AddEnvironment(jsii.String(lambdaapi.EnvBreakerRedisUser), jsii.String(u.id), nil)
		fn.AddEnvironment(jsii.String(lambdaapi.EnvBreakerCacheName), jsii.String(c.name), nil)
	}
	for _, d := range dependencies {
		if !slices.Contains(u.dependencies, d) {
			u.dependencies = append(u.dependencies, d)
		}
	}
	access, err := lambdaapi.BreakerAccessString(lambdaapi.BreakerKeyPrefix, u.dependencies...)
	if v.If(err != nil, "Bind(%s): %v", path, err) {
		return
	}
	u.resource.SetAccessString(jsii.String(access))
}
