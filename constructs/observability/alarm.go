// Package observability is what makes the app's failures visible and its
// data safe to delete: the one way to create a CloudWatch alarm (NewAlarm:
// ALARM and OK go to the alerts topic alertas-mercadofresco, the
// description says what to do, missing data is stated, never defaulted;
// NewAnyAlarm for a count that must stay at 0),
// the per-environment dashboard (Board, NewDashboard: each construct adds
// its widgets to its Section when it is created; docs/design.md#dashboard)
// and the mapping of an environment's removal policy onto a kind of
// resource (RemovalFor).
package observability

import (
	"cmp"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// AlarmProps configures an alarm. Metric, Topic, Description and MissingData are
// required; the zero value of the rest is the common case (greater than the
// threshold, one period).
type AlarmProps struct {
	// Metric is what the alarm watches, with its period and statistic.
	Metric awscloudwatch.IMetric
	// Topic receives the ALARM and OK notifications (alertas-mercadofresco).
	Topic awssns.ITopic
	// Description says what the alarm means and what the on-call engineer
	// does (link the runbook).
	Description string
	// Threshold the metric is compared with.
	Threshold float64
	// Comparison defaults to GREATER_THAN_THRESHOLD.
	Comparison awscloudwatch.ComparisonOperator
	// EvaluationPeriods defaults to 1.
	EvaluationPeriods float64
	// DatapointsToAlarm defaults to EvaluationPeriods (all of them).
	DatapointsToAlarm float64
	// MissingData states how periods without data count. Required.
	MissingData awscloudwatch.TreatMissingData
}

// NewAlarm creates the alarm and wires its actions. Missing required props are
// reported as synthesis errors on the alarm (the alarm is still created, so
// nothing that refers to it breaks before the error is shown).
func NewAlarm(scope constructs.Construct, id string, props *AlarmProps) awscloudwatch.Alarm {
	if props == nil {
		props = &AlarmProps{}
	}
	var problems []string
	if props.Metric == nil {
		problems = append(problems, "Metric is required")
	}
	if props.Topic == nil {
		problems = append(problems, "Topic is required: an alarm nobody receives is not an alarm")
	}
	if props.Description == "" {
		problems = append(problems, "Description is required: say what the alarm means and what to do")
	}
	if props.MissingData == "" {
		problems = append(problems, "MissingData is required: state whether no data means healthy (NOT_BREACHING) or broken (BREACHING)")
	}
	comparison := cmp.Or(props.Comparison, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD)
	periods := cmp.Or(props.EvaluationPeriods, 1)
	datapoints := cmp.Or(props.DatapointsToAlarm, periods)
	if datapoints > periods || periods < 1 {
		problems = append(problems, fmt.Sprintf("DatapointsToAlarm %v must be between 1 and EvaluationPeriods %v", datapoints, periods))
		datapoints = periods
	}
	metric := props.Metric
	if metric == nil {
		// A stand-in so the alarm exists; synthesis fails on the error.
		metric = awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String("Invalid"), MetricName: jsii.String("MissingMetric")})
	}
	missing := cmp.Or(props.MissingData, awscloudwatch.TreatMissingData_MISSING)
	a := awscloudwatch.NewAlarm(scope, jsii.String(id), &awscloudwatch.AlarmProps{
		Metric:             metric,
		AlarmDescription:   jsii.String(props.Description),
		Threshold:          jsii.Number(props.Threshold),
		ComparisonOperator: comparison,
		EvaluationPeriods:  jsii.Number(periods),
		DatapointsToAlarm:  jsii.Number(datapoints),
		TreatMissingData:   missing,
	})
	for _, p := range problems {
		awscdk.Annotations_Of(a).AddError(jsii.String(fmt.Sprintf("alarm %s: %s", *a.Node().Path(), p)))
	}
	if props.Topic != nil {
		action := awscloudwatchactions.NewSnsAction(props.Topic)
		a.AddAlarmAction(action)
		a.AddOkAction(action)
	}
	return a
}

// NewAnyAlarm alarms on any occurrence: metric above 0 in one period, to
// topic, ALARM and OK. No data means nothing happened (NOT_BREACHING): for
// the counts of what should never happen (errors, throttles, dead-lettered
// or undelivered messages).
func NewAnyAlarm(scope constructs.Construct, id string, metric awscloudwatch.IMetric, topic awssns.ITopic, description string) awscloudwatch.Alarm {
	return NewAlarm(scope, id, &AlarmProps{Metric: metric, Topic: topic, Description: description, MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING})
}

// Per5Min is statistic over 5 minutes, as metric options.
func Per5Min(statistic string) *awscloudwatch.MetricOptions {
	return &awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String(statistic)}
}
