package network_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/network"
	"github.com/mercadofresco/integration/internal/cdktest"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

func newStack(t *testing.T, props *network.Props) (awscdk.Stack, *network.Network, assertions.Template) {
	t.Helper()
	stack := cdktest.NewStack("Red")
	stack.Node().SetContext(jsii.String("availability-zones:account=111111111111:region=eu-west-1"), jsii.Strings("eu-west-1a", "eu-west-1b", "eu-west-1c"))
	props.EventBus = awsevents.EventBus_FromEventBusName(stack, jsii.String("Bus"), jsii.String("bus-mercadofresco"))
	n := network.New(stack, "Red", props)
	return stack, n, assertions.Template_FromStack(stack, nil)
}

func TestWithoutNATThereIsNoPathToTheInternet(t *testing.T) {
	stack, n, tpl := newStack(t, &network.Props{MaxAzs: 2})
	if errs := cdktest.Errors(stack); len(errs) > 0 {
		t.Fatal(errs)
	}
	if n.HasEgress() {
		t.Fatal("HasEgress without NAT gateways")
	}
	tpl.ResourceCountIs(jsii.String("AWS::EC2::NatGateway"), jsii.Number(0))
	tpl.ResourceCountIs(jsii.String("AWS::EC2::InternetGateway"), jsii.Number(0))
	for _, svc := range []string{"events", "secretsmanager"} {
		tpl.HasResourceProperties(jsii.String("AWS::EC2::VPCEndpoint"), map[string]any{
			"ServiceName":       assertions.Match_StringLikeRegexp(jsii.String(`\.` + svc + `$`)),
			"VpcEndpointType":   "Interface",
			"PrivateDnsEnabled": true,
		})
	}
	tpl.HasResourceProperties(jsii.String("AWS::EC2::VPCEndpoint"), map[string]any{
		"ServiceName":     assertions.Match_AnyValue(),
		"VpcEndpointType": "Gateway",
	})
	tpl.HasResourceProperties(jsii.String("AWS::EC2::VPCEndpoint"), map[string]any{
		"ServiceName": assertions.Match_StringLikeRegexp(jsii.String(`\.events$`)),
		"PolicyDocument": map[string]any{"Statement": []any{assertions.Match_ObjectLike(&map[string]any{
			"Action": "events:PutEvents", "Effect": "Allow",
			"Resource":  assertions.Match_AnyValue(),
			"Condition": map[string]any{"StringEquals": map[string]any{"aws:PrincipalAccount": "111111111111"}},
		})}, "Version": "2012-10-17"},
	})
	// The zero value records ALL traffic; RejectedTrafficOnly the rejected.
	tpl.HasResourceProperties(jsii.String("AWS::EC2::FlowLog"), map[string]any{"TrafficType": "ALL"})
	_, _, rejected := newStack(t, &network.Props{MaxAzs: 2, RejectedTrafficOnly: true})
	rejected.HasResourceProperties(jsii.String("AWS::EC2::FlowLog"), map[string]any{"TrafficType": "REJECT"})
}

func TestNATGatewaysAndEgressSubnets(t *testing.T) {
	stack, n, tpl := newStack(t, &network.Props{MaxAzs: 3, NatGateways: 3})
	if errs := cdktest.Errors(stack); len(errs) > 0 {
		t.Fatal(errs)
	}
	if !n.HasEgress() || *n.EgressSubnets().SubnetGroupName != network.SubnetsEgress {
		t.Fatal("egress subnets not selected")
	}
	tpl.ResourceCountIs(jsii.String("AWS::EC2::NatGateway"), jsii.Number(3))
	// 4 groups x 3 zones; nothing launched in the public subnets gets a
	// public address.
	tpl.ResourceCountIs(jsii.String("AWS::EC2::Subnet"), jsii.Number(12))
	for _, s := range *tpl.FindResources(jsii.String("AWS::EC2::Subnet"), nil) {
		if p := (*s)["Properties"].(map[string]any); p["MapPublicIpOnLaunch"] != false {
			t.Fatalf("subnet maps public IPs: %v", p)
		}
	}
}

func TestInvalidNATCount(t *testing.T) {
	stack, _, _ := newStack(t, &network.Props{MaxAzs: 2, NatGateways: 3})
	cdktest.RequireContains(t, cdktest.Errors(stack), "NatGateways 3")
}

// The CDK's custom resource that strips the default security group logs to
// a group of ours, with a retention and the data key.
func TestCustomResourceLogsHaveRetentionAndKey(t *testing.T) {
	stack := cdktest.NewStack("Red")
	stack.Node().SetContext(jsii.String("availability-zones:account=111111111111:region=eu-west-1"), jsii.Strings("eu-west-1a", "eu-west-1b"))
	key := awskms.NewKey(stack, jsii.String("Clave"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	n := network.New(stack, "Red", &network.Props{MaxAzs: 2, Context: core.Context{DataKey: key, LogRetention: awslogs.RetentionDays_ONE_WEEK}})
	if errs := cdktest.Errors(stack); len(errs) > 0 {
		t.Fatal(errs)
	}
	tpl := assertions.Template_FromStack(stack, nil)
	logsID := *stack.GetLogicalId(n.RestrictDefaultSGLogs.Node().DefaultChild().(awscdk.CfnElement))
	tpl.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{
		"RetentionInDays": 7, "KmsKeyId": assertions.Match_AnyValue(),
	})
	tpl.HasResource(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Properties": assertions.Match_ObjectLike(&map[string]any{
			"Description":   assertions.Match_StringLikeRegexp(jsii.String("default security group")),
			"LoggingConfig": map[string]any{"LogGroup": map[string]any{"Ref": logsID}},
		}),
		"DependsOn": assertions.Match_ArrayWith(&[]any{logsID}),
	})
}
