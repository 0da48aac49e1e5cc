package orderflow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/datastore"
	"github.com/mercadofresco/integration/constructs/orderflow"
	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/internal/golambdatest"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

func TestFunctionTimeoutCoversTheWorstCase(t *testing.T) {
	tests := []struct {
		attempts int
		read     time.Duration
		want     time.Duration
	}{
		// 3 x 30 s + 2 x (20 s Retry-After + 5 s jitter cap) + 15 s.
		{3, 30 * time.Second, 155 * time.Second},
		{1, 30 * time.Second, 45 * time.Second},
		{2, 10 * time.Second, 60 * time.Second},
	}
	for _, tc := range tests {
		if got := orderflow.FunctionTimeout(tc.attempts, tc.read); got != tc.want {
			t.Errorf("FunctionTimeout(%d, %s) = %s, want %s", tc.attempts, tc.read, got, tc.want)
		}
	}
}

func TestPaymentFunctions(t *testing.T) {
	p := cdktest.NewPlatform("Pago")
	awscdk.Aspects_Of(p.App).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	cdktest.Check(p.App)
	vpc := awsec2.NewVpc(p.Stack, jsii.String("Vpc"), &awsec2.VpcProps{MaxAzs: jsii.Number(2), NatGateways: jsii.Number(1)})
	table := datastore.NewIdempotency(p.Stack, "Idem", &datastore.TableProps{Context: core.Context{DataKey: p.Key, Alerts: p.Alerts}})
	builder := golambdatest.Builder(t, "")
	// An endpoint's group that calls nothing (MF-REACH refuses the CDK's allow-all).
	closed := awsec2.NewSecurityGroup(p.Stack, jsii.String("SecretosGrupo"), &awsec2.SecurityGroupProps{Vpc: vpc, AllowAllOutbound: jsii.Bool(false)})
	secrets := vpc.AddInterfaceEndpoint(jsii.String("Secretos"), &awsec2.InterfaceVpcEndpointOptions{Service: awsec2.InterfaceVpcEndpointAwsService_SECRETS_MANAGER(), Open: jsii.Bool(false),
		SecurityGroups: &[]awsec2.ISecurityGroup{closed}})
	pay := orderflow.NewPayment(p.Stack, "Pago", &orderflow.PaymentProps{
		Context:          core.Context{EnvironmentName: "dev", Builder: builder, DataKey: p.Key, Alerts: p.Alerts},
		IdempotencyTable: table, GatewayURL: "https://pasarela.example",
		CobroFunctionName: jsii.String("mf-cobro-dev"), ReembolsoFunctionName: jsii.String("mf-reembolso-dev"), ReservedConcurrency: 5,
		Vpc: vpc, Subnets: &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS}, SecretsEndpoint: secrets,
		BreakerStore: datastore.NewCache(p.Stack, "Cache", &datastore.CacheProps{Vpc: vpc, Subnets: &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS}, Context: core.Context{DataKey: p.Key, Alerts: p.Alerts}}),
	})
	// The VPC's flow logs are not this construct's concern.
	cdknag.NagSuppressions_AddResourceSuppressions(vpc, &[]*cdknag.NagPackSuppression{{Id: jsii.String("AwsSolutions-VPC7"), Reason: jsii.String("A stand-in VPC of this test; the Network stack owns the real one and its flow logs.")}}, jsii.Bool(true))
	tpl := assertions.Template_FromStack(p.Stack, nil)
	for _, name := range []string{"mf-cobro-dev", "mf-reembolso-dev"} {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"FunctionName":                 name,
			"Timeout":                      155,
			"ReservedConcurrentExecutions": 5,
			"VpcConfig":                    assertions.Match_ObjectLike(&map[string]any{"SubnetIds": assertions.Match_AnyValue()}),
			"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
				lambdaapi.EnvGatewayURL:         "https://pasarela.example",
				lambdaapi.EnvGatewayMaxAttempts: "3",
				lambdaapi.EnvGatewayReadTimeout: "30s",
				lambdaapi.EnvGatewaySecretARN:   map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^PagoGatewayKey"))},
				lambdaapi.EnvEnvironment:        "dev",
				lambdaapi.EnvIdempotencyTable:   assertions.Match_AnyValue(),
				lambdaapi.EnvBreakerRedisAddr:   assertions.Match_AnyValue(),
				lambdaapi.EnvBreakerRedisTLS:    "true",
				lambdaapi.EnvSDKMaxAttempts:     "2",
			})},
		})
	}
	tpl.HasResourceProperties(jsii.String("AWS::SecretsManager::Secret"), map[string]any{"KmsKeyId": assertions.Match_AnyValue()})
	// Alarms: circuit opened (Sum > 0 over 1 min), p99 latency, cobro errors over the declined rate.
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName": lambdaapi.MetricBreakerOpened, "Namespace": "MercadoFresco/Tienda", "Statistic": "Sum", "Period": 60, "Threshold": 0,
		"Dimensions": assertions.Match_ArrayWith(&[]any{map[string]any{"Name": "Dependencia", "Value": "pasarela"}}),
	})
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName": lambdaapi.MetricGatewayLatency, "ExtendedStatistic": "p99", "Threshold": orderflow.LatencyThresholdMs,
	})
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName": "Errors", "Threshold": orderflow.DeclinedThreshold,
		"Dimensions": []any{map[string]any{"Name": "FunctionName", "Value": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^PagoCobro"))}}},
	})
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName": "Errors", "Threshold": 0,
		"Dimensions": []any{map[string]any{"Name": "FunctionName", "Value": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^PagoReembolso"))}}},
	})
	// Egress: HTTPS, and the cache's port to the cache's group only.
	tpl.HasResourceProperties(jsii.String("AWS::EC2::SecurityGroup"), map[string]any{
		"GroupDescription":    assertions.Match_StringLikeRegexp(jsii.String("^Payment tasks")),
		"SecurityGroupEgress": []any{assertions.Match_ObjectLike(&map[string]any{"FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0"})},
	})
	tpl.HasResourceProperties(jsii.String("AWS::EC2::SecurityGroupEgress"), map[string]any{
		"FromPort": datastore.Port, "GroupId": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^PagoSecurityGroup")), "GroupId"}},
	})
	// The Secrets Manager endpoint (private DNS: it takes every
	// GetSecretValue of the VPC) admits the tasks on 443.
	tpl.HasResourceProperties(jsii.String("AWS::EC2::SecurityGroupIngress"), map[string]any{
		"FromPort": 443, "ToPort": 443,
		"GroupId":               map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^SecretosGrupo")), "GroupId"}},
		"SourceSecurityGroupId": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^PagoSecurityGroup")), "GroupId"}},
	})
	if pay.MaxAttempts != 3 {
		t.Fatalf("MaxAttempts = %v", pay.MaxAttempts)
	}
	if errs := cdktest.Errors(p.Stack); len(errs) > 0 {
		t.Fatalf("synthesis errors (cdk-nag, checks):\n%s", strings.Join(errs, "\n"))
	}
}

func TestMissingPropsAreReported(t *testing.T) {
	p := cdktest.NewPlatform("PagoMal")
	orderflow.NewPayment(p.Stack, "Pago", &orderflow.PaymentProps{GatewayURL: "http://x", MaxAttempts: 11})
	errs := cdktest.Errors(p.Stack)
	for _, want := range []string{"EnvironmentName is required", "IdempotencyTable", "must be an https URL", "BreakerStore", "DataKey", "Alerts", "Vpc is required", "SecretsEndpoint is required", "MaxAttempts must be"} {
		cdktest.RequireContains(t, errs, want)
	}
}
