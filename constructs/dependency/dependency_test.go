package dependency_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
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

// An API key's resource policy denies GetSecretValue to every principal but
// the roles GrantRead and AdmitReaderArn admitted (BlockPublicPolicy on); a
// key nobody reads denies everyone; a reader that is no role, and a secret
// that is no API key, are reported.
func TestAPIKeyIsReadOnlyByItsReaders(t *testing.T) {
	stack := cdktest.NewStack("S")
	role := awsiam.NewRole(stack, jsii.String("Lector"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	read := dependency.NewAPIKey(stack, "Leida", &dependency.APIKeyProps{Description: "a test key", Rotation: "the issuer rotates it on their side"})
	dependency.GrantRead(read, nil, role)
	dependency.GrantRead(read, nil, role) // admitted once
	dependency.AdmitReaderArn(read, "arn:aws:iam::"+cdktest.Account+":role/cfn-exec")
	dependency.NewAPIKey(stack, "SinLector", &dependency.APIKeyProps{Description: "a test key", Rotation: "the issuer rotates it on their side"})
	if errs := cdktest.Errors(stack); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	tpl := assertions.Template_FromStack(stack, nil)
	deny := func(secret string, readers any) {
		tpl.HasResourceProperties(jsii.String("AWS::SecretsManager::ResourcePolicy"), map[string]any{
			"SecretId":          map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^" + secret))},
			"BlockPublicPolicy": true,
			"ResourcePolicy": map[string]any{"Statement": []any{map[string]any{
				"Sid": dependency.SidOnlyReaders, "Effect": "Deny", "Principal": map[string]any{"AWS": "*"},
				"Action": "secretsmanager:GetSecretValue", "Resource": "*",
				"Condition": map[string]any{"ArnNotEquals": map[string]any{"aws:PrincipalArn": readers}},
			}}, "Version": "2012-10-17"},
		})
	}
	deny("Leida", []any{
		map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^Lector")), "Arn"}},
		"arn:aws:iam::" + cdktest.Account + ":role/cfn-exec",
	})
	deny("SinLector", []any{map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^SinLector"))}})

	bad := cdktest.NewStack("S")
	key := dependency.NewAPIKey(bad, "Clave", &dependency.APIKeyProps{Description: "a test key", Rotation: "the issuer rotates it on their side"})
	dependency.GrantRead(key, nil, awsiam.NewAccountRootPrincipal())
	dependency.AdmitReaderArn(key, "arn:aws:iam::"+cdktest.Account+":user/alguien")
	other := awssecretsmanager.NewSecret(bad, jsii.String("Otro"), nil)
	dependency.AdmitReaderArn(other, "arn:aws:iam::"+cdktest.Account+":role/x")
	errs := cdktest.Errors(bad)
	cdktest.RequireContains(t, errs, "GrantRead: the reader of S/Clave is not a role")
	cdktest.RequireContains(t, errs, `AdmitReaderArn: "arn:aws:iam::`+cdktest.Account+`:user/alguien" is not the ARN of a role`)
	cdktest.RequireContains(t, errs, "AdmitReaderArn: S/Otro is not an API key")
}
