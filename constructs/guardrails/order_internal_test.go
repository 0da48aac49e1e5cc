package guardrails

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/cfnindex"
)

// Regression: MF-ESM-RESERVED findings were reported in map order, so the
// same app reported them in a different order from one synth to the next.
func TestReservedFindingsAreReportedInAStableOrder(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("S"), nil)
	for _, name := range []string{"Fa", "Fb", "Fc", "Fd", "Fe", "Ff"} {
		fn := awslambda.NewFunction(stack, jsii.String(name), &awslambda.FunctionProps{
			Runtime: awslambda.Runtime_NODEJS_22_X(), Handler: jsii.String("index.handler"),
			Code:                         awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({})")),
			Timeout:                      awscdk.Duration_Seconds(jsii.Number(5)),
			ReservedConcurrentExecutions: jsii.Number(2),
		})
		q := awssqs.NewQueue(stack, jsii.String(name+"Q"), &awssqs.QueueProps{VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(60))})
		fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(q, &awslambdaeventsources.SqsEventSourceProps{
			ReportBatchItemFailures: jsii.Bool(true), MaxConcurrency: jsii.Number(5),
		}))
	}
	reserved := func() []string {
		tree := cfnindex.NewTree(stack)
		ix := newIndex(tree, tree.Of(stack))
		ix.checkEventSourceMappings()
		var out []string
		for _, f := range ix.findings {
			if strings.HasPrefix(f, "["+RuleESMReservedConcurrency+"]") {
				out = append(out, f)
			}
		}
		return out
	}
	first := reserved()
	if len(first) != 6 {
		t.Fatalf("want 6 findings, got %d: %v", len(first), first)
	}
	for range 10 {
		if again := reserved(); !slices.Equal(again, first) {
			t.Fatalf("findings reported in a different order:\n%s\nthen\n%s", strings.Join(first, "\n"), strings.Join(again, "\n"))
		}
	}
}
