// Package outbox holds the CDK constructs of MercadoFresco's transactional
// outbox: the network it lives in (Network), Aurora PostgreSQL with its
// RDS Proxy (Database), and the publisher and cleanup functions with their
// schedules and alarms (Publisher). The runtime library is
// lambdas/outbox.
package outbox

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/mercadofresco/integration/constructs/removal"
)

// Subnet group names of the Network.
const (
	// SubnetsData hosts Aurora and the RDS Proxy.
	SubnetsData = "datos"
	// SubnetsApp hosts the Lambda functions and the VPC endpoints.
	SubnetsApp = "aplicacion"
)

// NetworkProps configures NewNetwork. The zero value is valid.
type NetworkProps struct {
	// MaxAzs is the number of availability zones. Zero means every zone the
	// stack knows (config pins them: 2 in dev/staging, 3 in prod).
	MaxAzs float64
	// FlowLogKey encrypts the VPC flow log group. Nil means AWS-owned keys.
	FlowLogKey awskms.IKey
	// FlowLogRetention of the flow log group. Empty means one month.
	FlowLogRetention awslogs.RetentionDays
	// RemovalPolicy of the flow log group. Empty means RETAIN; SNAPSHOT
	// (meaningless for logs) means RETAIN.
	RemovalPolicy awscdk.RemovalPolicy
}

// Network is a VPC with no route to the internet: two tiers of isolated
// subnets and interface endpoints for the only AWS APIs the functions call.
//
// Why no NAT: the functions talk to three things, Aurora (through the
// proxy, inside the VPC), EventBridge (PutEvents) and, for the secret
// rotation, Secrets Manager. Two interface endpoints cost less than one NAT
// gateway per AZ, and leave no egress path to the internet at all. Lambda
// ships its logs (EMF metrics included) outside the VPC, so no CloudWatch
// Logs or monitoring endpoint is needed; IAM database tokens are signed
// locally, so no STS or RDS endpoint either.
type Network struct {
	constructs.Construct
	// Vpc is the VPC.
	Vpc awsec2.Vpc
	// EventsEndpoint is the EventBridge interface endpoint.
	EventsEndpoint awsec2.InterfaceVpcEndpoint
	// SecretsEndpoint is the Secrets Manager interface endpoint.
	SecretsEndpoint awsec2.InterfaceVpcEndpoint
}

// NewNetwork creates the VPC.
func NewNetwork(scope constructs.Construct, id string, props *NetworkProps) *Network {
	if props == nil {
		props = &NetworkProps{}
	}
	this := constructs.NewConstruct(scope, jsii.String(id))
	n := &Network{Construct: this}
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
		IpAddresses: awsec2.IpAddresses_Cidr(jsii.String("10.40.0.0/16")),
		MaxAzs:      maxAzs,
		NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{
			{Name: jsii.String(SubnetsData), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED, CidrMask: jsii.Number(24)},
			{Name: jsii.String(SubnetsApp), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED, CidrMask: jsii.Number(22)},
		},
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
	app := &awsec2.SubnetSelection{SubnetGroupName: jsii.String(SubnetsApp)}
	n.EventsEndpoint = n.Vpc.AddInterfaceEndpoint(jsii.String("EventBridge"), &awsec2.InterfaceVpcEndpointOptions{
		Service: awsec2.InterfaceVpcEndpointAwsService_EVENTBRIDGE(),
		Subnets: app,
		// Open: false, callers are allowed explicitly (AllowFrom).
		Open: jsii.Bool(false),
	})
	n.SecretsEndpoint = n.Vpc.AddInterfaceEndpoint(jsii.String("SecretsManager"), &awsec2.InterfaceVpcEndpointOptions{
		Service: awsec2.InterfaceVpcEndpointAwsService_SECRETS_MANAGER(),
		Subnets: app,
		Open:    jsii.Bool(false),
	})
	return n
}

// AppSubnets selects the subnets for functions.
func (n *Network) AppSubnets() *awsec2.SubnetSelection {
	return &awsec2.SubnetSelection{SubnetGroupName: jsii.String(SubnetsApp)}
}

// DataSubnets selects the subnets for the database and its proxy.
func (n *Network) DataSubnets() *awsec2.SubnetSelection {
	return &awsec2.SubnetSelection{SubnetGroupName: jsii.String(SubnetsData)}
}
