package stacks

import (
	"fmt"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/internal/cdktest"
)

// TestMain is the only one of package stacks; other stack tests share it.
func TestMain(m *testing.M) { cdktest.Main(m) }

// messagingFor builds the platform, data and messaging stacks of one
// environment (not the others, whose owners test them) with cdk-nag on.
func messagingFor(t *testing.T, name string) (*MessagingStack, awscdk.App) {
	t.Helper()
	env, err := config.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	// Lambda bundling off: test/ builds the binaries (and checks every
	// stack of every environment for synthesis errors).
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"aws:cdk:bundling-stacks": []any{}}})
	builder := &golambda.Builder{}
	t.Cleanup(func() { _ = builder.Close() })
	platform := NewPlatformStack(app, env)
	shared := platform.Shared(env, builder)
	m := NewMessagingStack(app, shared, NewDataStack(app, shared), NewNetworkStack(app, shared))
	ApplyChecks(app)
	return m, app
}

func synthErrors(stack awscdk.Stack) []string {
	var out []string
	for _, m := range *assertions.Annotations_FromStack(stack).FindError(jsii.String("*"), assertions.Match_AnyValue()) {
		out = append(out, fmt.Sprint(m.Entry.Data))
	}
	return out
}

func TestMessagingStackResources(t *testing.T) {
	m, _ := messagingFor(t, "prod")
	tpl := assertions.Template_FromStack(m.Stack, nil)

	// Prod keeps the SPEC names.
	for _, n := range []string{PedidosQueueName, PedidosDLQName, CorreoQueueName, CorreoDLQName, AvisoERPQueueName, AvisoERPDLQName, StockMovementsQueueName, StockMovementsDLQName} {
		tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"QueueName": n})
	}
	tpl.HasResourceProperties(jsii.String("AWS::SNS::Topic"), map[string]any{"TopicName": PedidoConfirmadoTopicName, "KmsMasterKeyId": assertions.Match_AnyValue()})
	// 4 queues + 4 DLQs + 3 subscription DLQs + the SES events rule's DLQ,
	// all encrypted with the data key.
	tpl.ResourceCountIs(jsii.String("AWS::SQS::Queue"), jsii.Number(12))
	tpl.AllResourcesProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"KmsMasterKeyId": assertions.Match_AnyValue()})
	tpl.ResourceCountIs(jsii.String("AWS::SNS::Subscription"), jsii.Number(3))
	tpl.AllResourcesProperties(jsii.String("AWS::SNS::Subscription"), map[string]any{"Protocol": "sqs", "RawMessageDelivery": true})

	// cola-mercadofresco-pedidos: the lesson's fixed configuration.
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"QueueName":              PedidosQueueName,
		"VisibilityTimeout":      400,
		"MessageRetentionPeriod": 345600,
		"RedrivePolicy":          assertions.Match_ObjectLike(&map[string]any{"maxReceiveCount": 4}),
	})
	for _, n := range []string{CorreoQueueName, AvisoERPQueueName} {
		tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
			"QueueName": n, "RedrivePolicy": assertions.Match_ObjectLike(&map[string]any{"maxReceiveCount": 5}),
		})
	}
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"QueueName": StockMovementsQueueName, "FifoQueue": true, "FifoThroughputLimit": "perMessageGroupId", "DeduplicationScope": "messageGroup",
	})
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"QueueName": StockMovementsDLQName, "FifoQueue": true})

	// Each consumer: its ceiling (prod, docs/design.md#consumer-ceilings) is
	// its mapping's MaximumConcurrency and its reserved concurrency; the
	// three HTTP consumers are in the VPC, the stock one is not.
	for _, c := range []struct {
		name           string
		ceiling, batch float64
		vpc            bool
	}{
		{"mf-preparar-pedido", 4, 5, true},
		{"mf-correo-confirmacion", 2, 5, true},
		{"mf-aviso-erp", 2, 2, true},
		{"mf-movimientos-stock", 20, 10, false},
	} {
		props := map[string]any{
			"FunctionName":                 c.name,
			"ReservedConcurrentExecutions": c.ceiling,
			"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
				"DLQ_URLS": assertions.Match_AnyValue(), "BATCH_CONCURRENCY": fmt.Sprint(c.batch), "ENTORNO": "prod", "AWS_MAX_ATTEMPTS": "2",
			})},
		}
		if c.vpc {
			props["VpcConfig"] = assertions.Match_ObjectLike(&map[string]any{"SubnetIds": assertions.Match_AnyValue()})
		} else {
			props["VpcConfig"] = assertions.Match_Absent()
		}
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), props)
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
			"FunctionName":          assertions.Match_AnyValue(),
			"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
			"ScalingConfig":         map[string]any{"MaximumConcurrency": c.ceiling},
		})
	}
	tpl.ResourceCountIs(jsii.String("AWS::Lambda::EventSourceMapping"), jsii.Number(4))
	// The HTTP dependencies' settings and keys.
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"FunctionName": "mf-preparar-pedido",
		"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
			"ALMACEN_URL": "https://almacen.mercadofresco.example", "ALMACEN_READ_TIMEOUT": "30s", "ALMACEN_MAX_ATTEMPTS": "2",
			"ALMACEN_SECRET_ARN": assertions.Match_AnyValue(), "BREAKER_REDIS_ADDR": assertions.Match_AnyValue(), "MAX_RECEIVE_COUNT": "4",
		})},
	})
	tpl.ResourceCountIs(jsii.String("AWS::SecretsManager::Secret"), jsii.Number(3))
	tpl.HasResourceProperties(jsii.String("AWS::SES::ConfigurationSet"), map[string]any{"Name": "mercadofresco-correo-confirmacion"})

	// One DLQ alarm per DLQ, one circuit alarm per breaker.
	for metric, want := range map[string]int{"ApproximateNumberOfMessagesVisible": 8, "CircuitoAbierto": 4} {
		alarms := tpl.FindResources(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
			"Properties": map[string]any{"MetricName": metric},
		})
		if n := len(*alarms); n != want {
			t.Errorf("want %d %s alarms, got %d", want, metric, n)
		}
	}
}
