// Package network is MercadoFresco's VPC: where Aurora, its RDS Proxy, the
// Valkey cache and every function that talks to them live.
//
// Four subnet groups per availability zone:
//
//   - datos (isolated): Aurora, the RDS Proxy, the Valkey cache. No route
//     out.
//   - aplicacion (isolated): functions that only talk to AWS inside the VPC
//     (the outbox publisher and cleanup, the secret rotation) and the
//     interface endpoints. No route out.
//   - salida (private with egress): functions that call services on the
//     internet (the payment gateway, the warehouse, the ERP, the secondary
//     e-mail provider), through NAT gateways.
//   - publica: the NAT gateways only (nothing else may be placed there).
//
// The NAT gateways are the one way out; how many is per environment
// (config.Environment.NatGateways; docs/design.md#network has the cost).
// Interface endpoints (EventBridge, Secrets Manager) and a DynamoDB gateway
// endpoint keep AWS traffic inside the VPC (and off the NAT's per-GB bill).
package network

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/mercadofresco/integration/constructs/removal"
)

// Subnet group names of the Network.
const (
	// SubnetsData hosts Aurora, the RDS Proxy and the Valkey cache.
	SubnetsData = "datos"
	// SubnetsApp hosts the functions without internet access and the VPC
	// endpoints.
	SubnetsApp = "aplicacion"
	// SubnetsEgress hosts the functions that call services on the internet.
	SubnetsEgress = "salida"
	// SubnetsPublic hosts the NAT gateways only.
	SubnetsPublic = "publica"
)

// Props configures New. The zero value is valid: no NAT (and so no egress
// subnets: a VPC without a way out).
type Props struct {
	// MaxAzs is the number of availability zones. Zero means every zone the
	// stack knows (config pins them: 2 in dev/staging, 3 in prod).
	MaxAzs float64
	// FlowLogKey encrypts the VPC flow log group and the log group of the
	// custom resource that strips the default security group. Nil means
	// AWS-owned keys.
	FlowLogKey awskms.IKey
	// FlowLogRetention of both log groups. Empty means one month.
	FlowLogRetention awslogs.RetentionDays
	// RemovalPolicy of both log groups, mapped by removal.For.
	RemovalPolicy awscdk.RemovalPolicy
	// NatGateways is the number of NAT gateways (0..MaxAzs). Zero creates
	// neither the NAT gateways nor the salida subnets: functions then have
	// no way to the internet.
	NatGateways float64
	// EventBus, when set, is the only bus the EventBridge endpoint carries
	// calls to (PutEvents by this account's principals): code in the VPC
	// cannot use the endpoint to reach another bus or account.
	EventBus awsevents.IEventBus
}

// Network is the VPC with its endpoints.
type Network struct {
	constructs.Construct
	// Vpc is the VPC.
	Vpc awsec2.Vpc
	// EventsEndpoint is the EventBridge interface endpoint.
	EventsEndpoint awsec2.InterfaceVpcEndpoint
	// SecretsEndpoint is the Secrets Manager interface endpoint.
	SecretsEndpoint awsec2.InterfaceVpcEndpoint
	// DynamoDBEndpoint is the DynamoDB gateway endpoint.
	DynamoDBEndpoint awsec2.GatewayVpcEndpoint
	// RestrictDefaultSGLogs is the log group of the CDK's custom resource
	// that strips the default security group's rules (otherwise Lambda
	// would create one without retention or key on its first run).
	RestrictDefaultSGLogs awslogs.LogGroup

	natGateways float64
}

// New creates the VPC. Invalid props are synthesis errors.
func New(scope constructs.Construct, id string, props *Props) *Network {
	if props == nil {
		props = &Props{}
	}
	this := constructs.NewConstruct(scope, jsii.String(id))
	n := &Network{Construct: this, natGateways: props.NatGateways}
	if props.NatGateways < 0 || props.NatGateways != float64(int(props.NatGateways)) || (props.MaxAzs > 0 && props.NatGateways > props.MaxAzs) {
		awscdk.Annotations_Of(this).AddError(jsii.String(fmt.Sprintf("network: NatGateways %v must be a whole number between 0 and the number of zones", props.NatGateways)))
		n.natGateways = 0
	}
	subnets := []*awsec2.SubnetConfiguration{
		{Name: jsii.String(SubnetsData), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED, CidrMask: jsii.Number(24)},
		{Name: jsii.String(SubnetsApp), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED, CidrMask: jsii.Number(22)},
	}
	if n.natGateways > 0 {
		subnets = append(subnets,
			&awsec2.SubnetConfiguration{Name: jsii.String(SubnetsEgress), SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS, CidrMask: jsii.Number(22)},
			// Small: it holds the NAT gateways and nothing else.
			&awsec2.SubnetConfiguration{Name: jsii.String(SubnetsPublic), SubnetType: awsec2.SubnetType_PUBLIC, CidrMask: jsii.Number(28), MapPublicIpOnLaunch: jsii.Bool(false)},
		)
	}
	retention := props.FlowLogRetention
	if retention == "" {
		retention = awslogs.RetentionDays_ONE_MONTH
	}
	logRemoval := removal.For(props.RemovalPolicy, removal.Data)
	var maxAzs *float64
	if props.MaxAzs > 0 {
		maxAzs = jsii.Number(props.MaxAzs)
	}
	flowLogs := awslogs.NewLogGroup(this, jsii.String("FlowLogs"), &awslogs.LogGroupProps{
		Retention:     retention,
		EncryptionKey: props.FlowLogKey,
		RemovalPolicy: logRemoval,
	})
	n.Vpc = awsec2.NewVpc(this, jsii.String("Vpc"), &awsec2.VpcProps{
		IpAddresses:         awsec2.IpAddresses_Cidr(jsii.String("10.40.0.0/16")),
		MaxAzs:              maxAzs,
		NatGateways:         jsii.Number(n.natGateways),
		SubnetConfiguration: &subnets,
		// The default security group of a VPC allows all traffic between its
		// members; nothing uses it, so strip its rules.
		RestrictDefaultSecurityGroup: jsii.Bool(true),
		FlowLogs: &map[string]*awsec2.FlowLogOptions{
			"Rechazado": {
				Destination: awsec2.FlowLogDestination_ToCloudWatchLogs(flowLogs, nil),
				TrafficType: awsec2.FlowLogTrafficType_REJECT,
			},
		},
	})
	n.RestrictDefaultSGLogs = awslogs.NewLogGroup(this, jsii.String("RestrictDefaultSGLogs"), &awslogs.LogGroupProps{
		Retention:     retention,
		EncryptionKey: props.FlowLogKey,
		RemovalPolicy: logRemoval,
	})
	// The handler is the CDK's stack-wide singleton: send its logs to that
	// group (the role it has writes to any group).
	provider := awscdk.Stack_Of(this).Node().TryFindChild(jsii.String("Custom::VpcRestrictDefaultSGCustomResourceProvider"))
	var handler awscdk.CfnResource
	if provider != nil {
		handler, _ = provider.Node().TryFindChild(jsii.String("Handler")).(awscdk.CfnResource)
	}
	if handler == nil {
		awscdk.Annotations_Of(this).AddError(jsii.String("network: cannot find the default security group's custom resource handler to give it a log group"))
	} else {
		handler.AddPropertyOverride(jsii.String("LoggingConfig.LogGroup"), n.RestrictDefaultSGLogs.LogGroupName())
		handler.Node().AddDependency(n.RestrictDefaultSGLogs)
	}
	app := &awsec2.SubnetSelection{SubnetGroupName: jsii.String(SubnetsApp)}
	n.EventsEndpoint = n.Vpc.AddInterfaceEndpoint(jsii.String("EventBridge"), &awsec2.InterfaceVpcEndpointOptions{
		Service: awsec2.InterfaceVpcEndpointAwsService_EVENTBRIDGE(),
		Subnets: app,
		// Open: false, callers are allowed explicitly (AllowFrom).
		Open: jsii.Bool(false),
	})
	if props.EventBus != nil {
		n.EventsEndpoint.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
			Actions:    jsii.Strings("events:PutEvents"),
			Resources:  jsii.Strings(*props.EventBus.EventBusArn()),
			Conditions: &map[string]interface{}{
				"StringEquals": map[string]interface{}{"aws:PrincipalAccount": awscdk.Stack_Of(this).Account()},
			},
		}))
	}
	n.SecretsEndpoint = n.Vpc.AddInterfaceEndpoint(jsii.String("SecretsManager"), &awsec2.InterfaceVpcEndpointOptions{
		Service: awsec2.InterfaceVpcEndpointAwsService_SECRETS_MANAGER(),
		Subnets: app,
		Open:    jsii.Bool(false),
	})
	// DynamoDB through a gateway endpoint (free): the consumers' idempotency
	// and stock tables are reached without the NAT.
	n.DynamoDBEndpoint = n.Vpc.AddGatewayEndpoint(jsii.String("DynamoDB"), &awsec2.GatewayVpcEndpointOptions{
		Service: awsec2.GatewayVpcEndpointAwsService_DYNAMODB(),
	})
	return n
}

// HasEgress reports whether the VPC has NAT gateways and salida subnets.
func (n *Network) HasEgress() bool { return n.natGateways > 0 }

// EgressSubnets selects the subnets for functions that call services on
// the internet. Without NAT gateways it selects the aplicacion subnets (and
// such functions cannot reach the internet; the construct that places them
// there should refuse, see HasEgress).
func (n *Network) EgressSubnets() *awsec2.SubnetSelection {
	if !n.HasEgress() {
		return n.AppSubnets()
	}
	return &awsec2.SubnetSelection{SubnetGroupName: jsii.String(SubnetsEgress)}
}

// AppSubnets selects the subnets for functions.
func (n *Network) AppSubnets() *awsec2.SubnetSelection {
	return &awsec2.SubnetSelection{SubnetGroupName: jsii.String(SubnetsApp)}
}

// DataSubnets selects the subnets for the database, its proxy and the cache.
func (n *Network) DataSubnets() *awsec2.SubnetSelection {
	return &awsec2.SubnetSelection{SubnetGroupName: jsii.String(SubnetsData)}
}
