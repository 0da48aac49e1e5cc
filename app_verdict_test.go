package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	sfn "github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/stacks"
)

// The app's exit code: 1 on a deliberately unreadable state machine (the
// attempts rule cannot count its retries), 1 on a bare warning, 0 when
// the only warning was acknowledged with a reason.
func TestSynthesisFailsOnEveryUnresolvedFinding(t *testing.T) {
	env := &awscdk.Environment{Account: jsii.String("111111111111"), Region: jsii.String("eu-west-1")}

	t.Run("unreadable state machine", func(t *testing.T) {
		app := awscdk.NewApp(nil)
		stack := awscdk.NewStack(app, jsii.String("Opaca"), &awscdk.StackProps{Env: env})
		role := awsiam.NewRole(stack, jsii.String("Role"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("states.amazonaws.com"), nil)})
		// An Fn::If on a condition only CloudFormation evaluates: the
		// attempts rule cannot read the definition.
		body := awscdk.Fn_Sub(jsii.String(`{"StartAt":"Cobrar","States":{"Cobrar":{"Type":"Task","Resource":"${Fn}","End":true}}}`),
			&map[string]*string{"Fn": jsii.String("arn:aws:lambda:eu-west-1:111111111111:function:mf-cobro")})
		cond := awscdk.NewCfnCondition(stack, jsii.String("Cond"), &awscdk.CfnConditionProps{
			Expression: awscdk.Fn_ConditionEquals(awscdk.Aws_REGION(), jsii.String("eu-west-1")),
		})
		def := awscdk.Token_AsString(awscdk.Fn_ConditionIf(cond.LogicalId(), body, body), nil)
		sfn.NewCfnStateMachine(stack, jsii.String("Flujo"), &sfn.CfnStateMachineProps{RoleArn: role.RoleArn(), DefinitionString: def})
		stacks.ApplyNag(app)
		var out strings.Builder
		if code := verdict(app.Synth(nil), &out); code != 1 {
			t.Fatalf("exit code %d, want 1:\n%s", code, out.String())
		}
		if !strings.Contains(out.String(), "[MF-ATTEMPTS] Opaca/Flujo") || !strings.Contains(out.String(), "cannot be counted") {
			t.Fatalf("the unreadable state machine is not among the findings:\n%s", out.String())
		}
	})

	t.Run("warning", func(t *testing.T) {
		app := awscdk.NewApp(nil)
		stack := awscdk.NewStack(app, jsii.String("Aviso"), &awscdk.StackProps{Env: env})
		awscdk.Annotations_Of(stack).AddWarningV2(jsii.String("test:warning"), jsii.String("a warning nobody reads"), nil)
		var out strings.Builder
		if code := verdict(app.Synth(nil), &out); code != 1 || !strings.Contains(out.String(), "a warning nobody reads") {
			t.Fatalf("exit code %d, want 1 naming the warning:\n%s", code, out.String())
		}
	})

	t.Run("acknowledged warning", func(t *testing.T) {
		app := awscdk.NewApp(nil)
		stack := awscdk.NewStack(app, jsii.String("Reconocido"), &awscdk.StackProps{Env: env})
		awscdk.Annotations_Of(stack).AddWarningV2(jsii.String("test:warning"), jsii.String("a warning with a reason"), nil)
		awscdk.Annotations_Of(stack).AcknowledgeWarning(jsii.String("test:warning"), jsii.String("test: the risk cannot happen here"))
		var out strings.Builder
		if code := verdict(app.Synth(nil), &out); code != 0 {
			t.Fatalf("exit code %d, want 0 for an acknowledged warning:\n%s", code, out.String())
		}
	})
}

// MF-REACH through the app's exit code: a function in a VPC without a way
// out (isolated subnets, no endpoint) that is granted Secrets Manager
// makes the app exit 1 naming the function, the service and the hop; with
// an interface endpoint for Secrets Manager the app exits 0.
func TestUnreachableCallFailsTheApp(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint bool
		want     int
	}{
		{"no way out", false, 1},
		{"interface endpoint", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := awscdk.NewApp(nil)
			stack := cdktest.NewStackIn(app, "Aislada")
			vpc := awsec2.NewVpc(stack, jsii.String("Red"), &awsec2.VpcProps{
				MaxAzs: jsii.Number(2), NatGateways: jsii.Number(0), RestrictDefaultSecurityGroup: jsii.Bool(false),
				SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{Name: jsii.String("privada"), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}},
			})
			// Groups that list what they call (MF-REACH refuses the CDK's allow-all).
			fn := awslambda.NewFunction(stack, jsii.String("Cobro"), &awslambda.FunctionProps{
				FunctionName: jsii.String("mf-cobro-aislado"), Runtime: awslambda.Runtime_NODEJS_22_X(), Handler: jsii.String("index.handler"),
				Code: awslambda.Code_FromInline(jsii.String("exports.handler = async () => {}")), Vpc: vpc, AllowAllOutbound: jsii.Bool(false),
			})
			if tc.endpoint {
				closed := awsec2.NewSecurityGroup(stack, jsii.String("SecretosGrupo"), &awsec2.SecurityGroupProps{Vpc: vpc, AllowAllOutbound: jsii.Bool(false)})
				ep := vpc.AddInterfaceEndpoint(jsii.String("Secretos"), &awsec2.InterfaceVpcEndpointOptions{Service: awsec2.InterfaceVpcEndpointAwsService_SECRETS_MANAGER(),
					Open: jsii.Bool(false), SecurityGroups: &[]awsec2.ISecurityGroup{closed}})
				ep.Connections().AllowDefaultPortFrom(fn, jsii.String("the function reads its secret"))
			}
			awssecretsmanager.NewSecret(stack, jsii.String("Clave"), nil).GrantRead(fn, nil)
			var out strings.Builder
			code := verdict(app.Synth(nil), &out)
			if code != tc.want {
				t.Fatalf("exit code %d, want %d:\n%s", code, tc.want, out.String())
			}
			if tc.want == 1 && (!strings.Contains(out.String(), "[MF-REACH]") || !strings.Contains(out.String(), "function mf-cobro-aislado cannot reach secretsmanager")) {
				t.Fatalf("the unreachable call is not among the findings:\n%s", out.String())
			}
		})
	}
}
