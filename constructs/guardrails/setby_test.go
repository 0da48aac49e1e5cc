package guardrails_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/guardrails"
)

// TestFindingNamesTheConstant: a VisibilityTimeout finding names the
// source constants SetBy recorded for the queue and the function.
func TestFindingNamesTheConstant(t *testing.T) {
	f := newFixture()
	q := f.queueWithDLQ("Pedidos", 120)
	guardrails.SetBy(q, "VisibilityTimeout", "PedidosVisibility in constructs/example")
	fn := f.fn("Cobro", 180)
	guardrails.SetBy(fn, "Timeout", "CobroTimeout in constructs/example")
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(q, &awslambdaeventsources.SqsEventSourceProps{
		ReportBatchItemFailures: jsii.Bool(true), MaxConcurrency: jsii.Number(20),
	}))
	requireContains(t, f.errorsFor(guardrails.RuleVisibilityTimeout),
		"to fix, change PedidosVisibility in constructs/example (VisibilityTimeout) or CobroTimeout in constructs/example (Timeout)")
}
