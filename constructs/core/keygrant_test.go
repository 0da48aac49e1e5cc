package core_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/internal/cdktest"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

// The grant names the service in the key's region; without a key nothing
// is granted.
func TestGrantKeyConditionsOnTheService(t *testing.T) {
	stack := cdktest.NewStack("S")
	key := awskms.NewKey(stack, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	role := awsiam.NewRole(stack, jsii.String("Role"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	if g := core.GrantKey(key, role, "sqs", "kms:Decrypt"); !*g.Success() {
		t.Fatal("grant not added")
	}
	if g := core.GrantKey(nil, role, "sqs", "kms:Decrypt"); *g.Success() {
		t.Fatal("a grant without a key succeeded")
	}
	if got := core.ViaService(stack, "dynamodb"); got != "dynamodb.eu-west-1.amazonaws.com" {
		t.Errorf("ViaService = %s", got)
	}
	tpl := assertions.Template_FromStack(stack, nil)
	tpl.ResourceCountIs(jsii.String("AWS::IAM::Policy"), jsii.Number(1))
	tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
		"PolicyDocument": map[string]any{"Statement": []any{map[string]any{
			"Action": "kms:Decrypt", "Effect": "Allow",
			"Resource":  map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^Key")), "Arn"}},
			"Condition": map[string]any{"StringEquals": map[string]any{"kms:ViaService": "sqs.eu-west-1.amazonaws.com"}},
		}}},
	})
}
