package dependency_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/dependency"
	"github.com/mercadofresco/integration/internal/cdktest"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

// A function's group lets HTTPS out and nothing else; a secret reader in
// the VPC without the Secrets Manager endpoint is reported.
func TestSecurityGroupAndTheSecretsEndpoint(t *testing.T) {
	stack := cdktest.NewStack("S")
	vpc := awsec2.NewVpc(stack, jsii.String("Vpc"), &awsec2.VpcProps{MaxAzs: jsii.Number(2), NatGateways: jsii.Number(0)})
	sg := dependency.NewSecurityGroup(stack, "Grupo", vpc, "a function", "HTTPS out")
	dependency.ReadSecretsThrough(core.Check(stack, "test"), sg, nil, "fn reads its key")
	cdktest.RequireContains(t, cdktest.Errors(stack), "SecretsEndpoint is required", "where fn reads its key")
	assertions.Template_FromStack(stack, nil).HasResourceProperties(jsii.String("AWS::EC2::SecurityGroup"), map[string]any{
		"GroupDescription":    "a function",
		"SecurityGroupEgress": []any{map[string]any{"CidrIp": "0.0.0.0/0", "Description": "HTTPS out", "FromPort": 443, "IpProtocol": "tcp", "ToPort": 443}},
	})
}
