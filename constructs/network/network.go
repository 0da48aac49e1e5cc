// Package network is MercadoFresco's VPC, four subnet groups per zone:
// datos (isolated: Aurora, the RDS Proxy, the Valkey cache), aplicacion
// (isolated: the functions that talk to AWS only, and the interface
// endpoints), salida (private with egress: the functions that call services
// on the internet, through NAT) and publica (the NAT gateways only). The
// number of NAT gateways is the environment's; without them there is no
// salida and no way out. Interface endpoints (EventBridge, limited to
// PutEvents on the app's bus; Secrets Manager) and a DynamoDB gateway
// endpoint keep AWS traffic in the VPC. docs/design.md#network.
package network

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/synthesized"
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
// subnets). The Context's DataKey (nil: AWS-owned keys), LogRetention and
// RemovalPolicy apply to the flow log group and to the log group of the
// custom resource that strips the default security group.
type Props struct {
	core.Context
	// MaxAzs is the number of availability zones. Zero means every zone the
	// stack knows (config pins them: 2 in dev/staging, 3 in prod).
	MaxAzs float64
	// NatGateways is the number of NAT gateways (0..MaxAzs). Zero creates
	// neither the NAT gateways nor the salida subnets.
	NatGateways float64
	// EventBus, when set, is the only bus the EventBridge endpoint carries
	// calls to (PutEvents by this account's principals).
	EventBus awsevents.IEventBus
	// RejectedTrafficOnly makes the VPC's flow log record only the
	// rejected traffic (cheaper, for throwaway environments); false
	// records ALL traffic, accepted included.
	RejectedTrafficOnly bool
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
	this, v, props := core.Begin(scope, id, "network", props)
	n := &Network{Construct: this, natGateways: props.NatGateways}
	if v.If(props.NatGateways < 0 || props.NatGateways != float64(int(props.NatGateways)) || (props.MaxAzs > 0 && props.NatGateways > props.MaxAzs),
		"NatGateways %v must be a whole number between 0 and the number of zones", props.NatGateways) {
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
	var maxAzs *float64
	if props.MaxAzs > 0 {
		maxAzs = jsii.Number(props.MaxAzs)
	}
	flowLogs := props.LogGroup(this, "FlowLogs", nil)
	// The flow log's role trusts the flow logs of this account only
	// (aws:SourceAccount, aws:SourceArn): no other account's flow log can
	// write through it.
	stack := awscdk.Stack_Of(this)
	flowLogRole := awsiam.NewRole(this, jsii.String("FlowLogsRole"), &awsiam.RoleProps{
		Description: jsii.String("VPC flow logs of this account: write to the flow log group"),
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("vpc-flow-logs.amazonaws.com"), &awsiam.ServicePrincipalOpts{Conditions: &map[string]interface{}{
			"StringEquals": map[string]interface{}{"aws:SourceAccount": stack.Account()},
			"ArnLike": map[string]interface{}{"aws:SourceArn": stack.FormatArn(&awscdk.ArnComponents{
				Service: jsii.String("ec2"), Resource: jsii.String("vpc-flow-log"), ResourceName: jsii.String("*"),
			})},
		}}),
	})
	flowLogID, traffic := "Todo", awsec2.FlowLogTrafficType_ALL
	if props.RejectedTrafficOnly {
		flowLogID, traffic = "Rechazado", awsec2.FlowLogTrafficType_REJECT
	}
	n.Vpc = awsec2.NewVpc(this, jsii.String("Vpc"), &awsec2.VpcProps{
		IpAddresses:         awsec2.IpAddresses_Cidr(jsii.String("10.40.0.0/16")),
		MaxAzs:              maxAzs,
		NatGateways:         jsii.Number(n.natGateways),
		SubnetConfiguration: &subnets,
		// The default security group of a VPC allows all traffic between its
		// members; nothing uses it, so strip its rules.
		RestrictDefaultSecurityGroup: jsii.Bool(true),
		FlowLogs:                     &map[string]*awsec2.FlowLogOptions{flowLogID: {Destination: awsec2.FlowLogDestination_ToCloudWatchLogs(flowLogs, flowLogRole), TrafficType: traffic}},
	})
	n.RestrictDefaultSGLogs = props.LogGroup(this, "RestrictDefaultSGLogs", nil)
	// The handler is the CDK's stack-wide singleton: send its logs to that
	// group (the role it has writes to any group).
	provider := awscdk.Stack_Of(this).Node().TryFindChild(jsii.String("Custom::VpcRestrictDefaultSGCustomResourceProvider"))
	var handler awscdk.CfnResource
	if provider != nil {
		handler, _ = provider.Node().TryFindChild(jsii.String("Handler")).(awscdk.CfnResource)
	}
	if !v.If(handler == nil, "cannot find the default security group's custom resource handler to give it a log group") {
		handler.AddPropertyOverride(jsii.String("LoggingConfig.LogGroup"), n.RestrictDefaultSGLogs.LogGroupName())
		handler.Node().AddDependency(n.RestrictDefaultSGLogs)
	}
	app := n.AppSubnets()
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
	// An endpoint's interfaces answer calls and open none. Their groups stay
	// the CDK's (the stacks that import them keep their exports) but lose
	// its allow-all egress for the CDK's placeholder, which matches nothing.
	for _, ep := range []awsec2.InterfaceVpcEndpoint{n.EventsEndpoint, n.SecretsEndpoint} {
		sg, ok := ep.Node().TryFindChild(jsii.String("SecurityGroup")).(awsec2.SecurityGroup)
		if !v.If(!ok, "cannot find endpoint %s's security group to close its egress", *ep.Node().Id()) {
			sg.Node().DefaultChild().(awsec2.CfnSecurityGroup).AddPropertyOverride(jsii.String("SecurityGroupEgress"),
				[]any{synthesized.NoEgress})
		}
	}
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
