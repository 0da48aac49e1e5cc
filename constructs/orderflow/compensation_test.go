package orderflow_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/orderflow"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// TestCompensationFailedAlarm: a metric filter on the state machine's log
// group counts the FailStateEntered events of CompensacionFallida, and an
// alarm with actions fires on the first.
func TestCompensationFailedAlarm(t *testing.T) {
	f := newFixture(t, orderflow.WorkflowProps{})
	tpl := assertions.Template_FromStack(f.p.Stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::Logs::MetricFilter"), map[string]any{
		"LogGroupName":  map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^ProcesarLogs"))},
		"FilterPattern": `{ ($.type = "FailStateEntered") && ($.details.name = "` + orderflow.StateCompensacionFallida + `") }`,
		"MetricTransformations": []any{map[string]any{
			"MetricNamespace": lambdaapi.Namespace, "MetricName": orderflow.MetricCompensacionFallida, "MetricValue": "1",
		}},
	})
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName": orderflow.MetricCompensacionFallida, "Namespace": lambdaapi.Namespace, "Threshold": 0, "Statistic": "Sum",
		"ComparisonOperator": "GreaterThanThreshold", "TreatMissingData": "notBreaching",
		"AlarmActions": assertions.Match_AnyValue(), "OKActions": assertions.Match_AnyValue(),
	})
}
