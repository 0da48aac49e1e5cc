package cache_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/cache"
	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/network"
	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/lambdas/breaker/breakerapi"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

func fn(stack awscdk.Stack, id string, vpc awsec2.IVpc) awslambda.Function {
	return awslambda.NewFunction(stack, jsii.String(id), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_NODEJS_22_X(), Handler: jsii.String("index.handler"),
		Code: awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({})")),
		Vpc:  vpc,
	})
}

func TestCreatedCacheIsEncryptedPrivateAndBindsFunctions(t *testing.T) {
	p := cdktest.NewPlatform("Plataforma")
	stack := cdktest.NewStackIn(p.App, "Cache")
	net := network.New(stack, "Red", &network.Props{MaxAzs: 2, NatGateways: 1})
	c := cache.New(stack, "Catalogo", &cache.Props{
		CacheName: jsii.String("mercadofresco-catalogo-dev"), Vpc: net.Vpc, Subnets: net.DataSubnets(),
		Context: core.Context{DataKey: p.Key, Alerts: p.Alerts},
	})
	c.Bind(fn(stack, "Cobro", net.Vpc))
	c.Bind(fn(stack, "SinVpc", nil))
	cdktest.RequireContains(t, cdktest.Errors(stack), "SinVpc is not in the VPC")
	tpl := assertions.Template_FromStack(stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::ElastiCache::ServerlessCache"), map[string]any{
		"Engine": "valkey", "ServerlessCacheName": "mercadofresco-catalogo-dev",
		"KmsKeyId":         assertions.Match_AnyValue(),
		"SecurityGroupIds": assertions.Match_AnyValue(),
		"SubnetIds":        assertions.Match_AnyValue(),
		"CacheUsageLimits": map[string]any{"DataStorage": map[string]any{"Maximum": 1, "Unit": "GB"}, "ECPUPerSecond": map[string]any{"Maximum": 5000}},
	})
	// Only the bound function reaches the cache, on 6379.
	ingress := tpl.FindResources(jsii.String("AWS::EC2::SecurityGroupIngress"), nil)
	n := 0
	for _, r := range *ingress {
		b, _ := json.Marshal(r)
		if strings.Contains(string(b), "CatalogoSecurityGroup") {
			n++
			if !strings.Contains(string(b), `"FromPort":6379`) || !strings.Contains(string(b), "CobroSecurityGroup") {
				t.Errorf("unexpected cache ingress: %s", b)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d ingress rules on the cache's security group, want 1 (the bound function)", n)
	}
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Environment": map[string]any{"Variables": map[string]any{
			breakerapi.EnvRedisAddr: assertions.Match_AnyValue(),
			breakerapi.EnvRedisTLS:  "true",
		}},
	})
	// Serverless caches publish under "clusterId".
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName": "ThrottledCmds",
		"Dimensions": []any{map[string]any{"Name": "clusterId", "Value": "mercadofresco-catalogo-dev"}},
	})
}

func TestImportedCacheCreatesNothing(t *testing.T) {
	stack := cdktest.NewStack("Importada")
	c := cache.New(stack, "Catalogo", &cache.Props{Import: &cache.Import{Endpoint: "mercadofresco-catalogo.serverless.euw1.cache.amazonaws.com", SecurityGroupID: "sg-0123456789abcdef0"}})
	if errs := cdktest.Errors(stack); len(errs) > 0 {
		t.Fatal(errs)
	}
	if c.Resource != nil || c.SecurityGroup == nil {
		t.Fatal("an imported cache must not be created")
	}
	tpl := assertions.Template_FromStack(stack, nil)
	tpl.ResourceCountIs(jsii.String("AWS::ElastiCache::ServerlessCache"), jsii.Number(0))
	got, _ := json.Marshal(stack.Resolve(c.Address()))
	if !strings.Contains(string(got), "mercadofresco-catalogo.serverless.euw1.cache.amazonaws.com") || !strings.Contains(string(got), "6379") {
		t.Fatalf("address %s", got)
	}
}

func TestMissingPropsAreErrors(t *testing.T) {
	stack := cdktest.NewStack("Rota")
	cache.New(stack, "Catalogo", nil)
	errs := cdktest.Errors(stack)
	for _, want := range []string{"Vpc is required", "DataKey is required", "Alerts is required"} {
		cdktest.RequireContains(t, errs, want)
	}
}
