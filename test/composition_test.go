package test

import (
	"fmt"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/stacks"
)

// The stacks' composition, on the app's one synthesis (every environment,
// Lambdas built, cdk-nag on): what stacks.Build wires together in one
// environment. Annotations_FromStack is not used here: it re-synthesises
// the whole app on every call.

func TestMessagingStackResources(t *testing.T) {
	m := synthApp(t).env(t, "prod").Messaging
	tpl := assertions.Template_FromStack(m.Stack, nil)

	// Prod keeps the SPEC names.
	for _, n := range []string{catalog.PedidosQueueName, catalog.PedidosDLQName, catalog.CorreoQueueName, catalog.CorreoDLQName, catalog.AvisoERPQueueName, catalog.AvisoERPDLQName, catalog.StockMovementsQueueName, catalog.StockMovementsDLQName} {
		tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"QueueName": n})
	}
	tpl.HasResourceProperties(jsii.String("AWS::SNS::Topic"), map[string]any{"TopicName": stacks.PedidoConfirmadoTopicName, "KmsMasterKeyId": assertions.Match_AnyValue()})
	// 4 queues + 4 DLQs + 3 subscription DLQs + the SES events rule's DLQ,
	// all encrypted with the data key.
	tpl.ResourceCountIs(jsii.String("AWS::SQS::Queue"), jsii.Number(12))
	tpl.AllResourcesProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"KmsMasterKeyId": assertions.Match_AnyValue()})
	tpl.ResourceCountIs(jsii.String("AWS::SNS::Subscription"), jsii.Number(3))
	tpl.AllResourcesProperties(jsii.String("AWS::SNS::Subscription"), map[string]any{"Protocol": "sqs", "RawMessageDelivery": true})

	// cola-mercadofresco-pedidos: its fixed configuration.
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"QueueName":              catalog.PedidosQueueName,
		"VisibilityTimeout":      400,
		"MessageRetentionPeriod": 345600,
		"RedrivePolicy":          assertions.Match_ObjectLike(&map[string]any{"maxReceiveCount": 4}),
	})
	for _, n := range []string{catalog.CorreoQueueName, catalog.AvisoERPQueueName} {
		tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
			"QueueName": n, "RedrivePolicy": assertions.Match_ObjectLike(&map[string]any{"maxReceiveCount": 5}),
		})
	}
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"QueueName": catalog.StockMovementsQueueName, "FifoQueue": true, "FifoThroughputLimit": "perMessageGroupId", "DeduplicationScope": "messageGroup",
	})
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"QueueName": catalog.StockMovementsDLQName, "FifoQueue": true})

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
		{"mf-movimientos-stock", 20, 10, true},
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

// The order flow's composition in one environment (TestSynthesisReportsNoErrors
// checks that no stack of any environment has a synthesis error): names
// from config, the payment tasks run in the egress subnets with the cache
// bound and the environment's reserved concurrency, the starter's ceiling,
// the ERP destination's rate, the pipe and the carts table are the
// environment's.
func TestOrderFlowStackComposition(t *testing.T) {
	es := synthApp(t).env(t, "staging")
	tpl := assertions.Template_FromStack(es.OrderFlow.Stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::StepFunctions::StateMachine"), map[string]any{
		"StateMachineName": "mercadofresco-procesar-pedido-staging", "StateMachineType": "STANDARD",
		"TracingConfiguration":    map[string]any{"Enabled": true},
		"LoggingConfiguration":    assertions.Match_ObjectLike(&map[string]any{"Level": "ALL"}),
		"EncryptionConfiguration": assertions.Match_ObjectLike(&map[string]any{"Type": "CUSTOMER_MANAGED_KMS_KEY"}),
	})
	for _, fn := range []string{"mf-cobro-staging", "mf-reembolso-staging"} {
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
