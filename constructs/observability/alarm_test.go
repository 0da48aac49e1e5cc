package observability_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/constructs/platform"
	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

func TestAlarmSendsAlarmAndOKWithItsDefaults(t *testing.T) {
	stack := cdktest.NewStack("S")
	key := platform.NewDataKey(stack, "Key", nil)
	topic := platform.NewAlertsTopic(stack, "Alerts", &platform.AlertsTopicProps{Context: core.Context{DataKey: key}})
	observability.NewAlarm(stack, "Alarm", &observability.AlarmProps{
		Metric:      awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(lambdaapi.Namespace), MetricName: jsii.String("X")}),
		Topic:       topic,
		Description: "X happened: do Y",
		MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	ref := map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^Alerts"))}
	assertions.Template_FromStack(stack, nil).HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"AlarmActions":       []any{ref},
		"OKActions":          []any{ref},
		"AlarmDescription":   "X happened: do Y",
		"ComparisonOperator": "GreaterThanThreshold",
		"EvaluationPeriods":  1,
		"DatapointsToAlarm":  1,
		"Threshold":          0,
		"TreatMissingData":   "notBreaching",
	})
}

func TestAlarmReportsEveryMissingProp(t *testing.T) {
	stack := cdktest.NewStack("S")
	a := observability.NewAlarm(stack, "Alarm", &observability.AlarmProps{EvaluationPeriods: 2, DatapointsToAlarm: 3})
	if a == nil {
		t.Fatal("no alarm returned")
	}
	errs := cdktest.Errors(stack)
	for _, want := range []string{"Metric is required", "Topic is required", "Description is required", "MissingData is required", "DatapointsToAlarm 3"} {
		if !strings.Contains(strings.Join(errs, "\n"), want) {
			t.Errorf("no error %q in %v", want, errs)
		}
	}
}
