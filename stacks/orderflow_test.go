package stacks

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/golambda"
)

// orderFlowFor builds every stack of one environment with the checks on
// (Lambda bundling off: the test/ suite builds the binaries).
func orderFlowFor(t *testing.T, name string) *EnvironmentStacks {
	t.Helper()
	env, err := config.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"aws:cdk:bundling-stacks": []any{}}})
	builder := &golambda.Builder{}
	t.Cleanup(func() { _ = builder.Close() })
	es := Build(app, env, builder)
	ApplyChecks(app)
	return es
}

// The composition (one environment; test/ checks every environment with
// cdk-nag): no synthesis error in any stack, names from config, the
// workflow's tasks are the payment construct's functions, the payment tasks
// run in the egress subnets with the cache bound, the starter's ceiling is
// the environment's.
func TestOrderFlowStackComposition(t *testing.T) {
	es := orderFlowFor(t, "staging")
	for _, st := range es.Stacks() {
		if errs := synthErrors(st); len(errs) > 0 {
			t.Fatalf("%s has synthesis errors (cdk-nag, guardrails or constructs):\n%s", *st.StackName(), strings.Join(errs, "\n"))
		}
	}
	tpl := assertions.Template_FromStack(es.OrderFlow.Stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::StepFunctions::StateMachine"), map[string]any{
		"StateMachineName": "mercadofresco-procesar-pedido-staging", "StateMachineType": "STANDARD",
		"TracingConfiguration":    map[string]any{"Enabled": true},
		"LoggingConfiguration":    assertions.Match_ObjectLike(&map[string]any{"Level": "ALL"}),
		"EncryptionConfiguration": assertions.Match_ObjectLike(&map[string]any{"Type": "CUSTOMER_MANAGED_KMS_KEY"}),
	})
	for _, fn := range []string{"mf-staging-cobro", "mf-staging-reembolso"} {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"FunctionName":                 fn,
			"ReservedConcurrentExecutions": es.Env.PaymentConcurrency,
			"VpcConfig":                    assertions.Match_ObjectLike(&map[string]any{"SubnetIds": assertions.Match_AnyValue()}),
			"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
				"GATEWAY_URL": es.Env.GatewayURL, "BREAKER_REDIS_ADDR": assertions.Match_AnyValue(), "BREAKER_REDIS_TLS": "true",
			})},
		})
	}
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"ScalingConfig": map[string]any{"MaximumConcurrency": es.Env.MaxConsumerConcurrency},
	})
	tpl.HasResourceProperties(jsii.String("AWS::Events::ApiDestination"), map[string]any{
		"InvocationEndpoint": es.Env.ERPWebhookURL, "InvocationRateLimitPerSecond": es.Env.ERPRateLimitPerSecond, "HttpMethod": "POST",
	})
	tpl.HasResourceProperties(jsii.String("AWS::Pipes::Pipe"), map[string]any{"Name": "pipe-mf-carritos-staging"})
	tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{"TableName": "mercadofresco-carritos-staging"})
}
