package orderflow

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// MetricCompensacionFallida is the metric (namespace lambdaapi.Namespace)
// that counts the executions entering the CompensacionFallida state.
const MetricCompensacionFallida = "CompensacionFallida"

// compensationFailedAlarm counts, with a metric filter on the state
// machine's log group, the FailStateEntered events of CompensacionFallida
// (the state's name is logged without the execution data), and alarms on
// the first: the order is charged, or holds stock, and only a person can
// finish its compensation. The ExecutionsFailed alarm sits above the rate of
// declined cards and would stay quiet for one order.
func (w *Workflow) compensationFailedAlarm(c constructs.Construct, p *WorkflowProps, name string) awscloudwatch.Alarm {
	filter := awslogs.NewMetricFilter(c, jsii.String("CompensacionFallidaFilter"), &awslogs.MetricFilterProps{
		LogGroup: w.LogGroup,
		FilterPattern: awslogs.FilterPattern_All(
			awslogs.FilterPattern_StringValue(jsii.String("$.type"), jsii.String("="), jsii.String("FailStateEntered")),
			awslogs.FilterPattern_StringValue(jsii.String("$.details.name"), jsii.String("="), jsii.String(StateCompensacionFallida)),
		),
		MetricNamespace: jsii.String(lambdaapi.Namespace),
		MetricName:      jsii.String(MetricCompensacionFallida),
		MetricValue:     jsii.String("1"),
	})
	return observability.NewAnyAlarm(c, "CompensacionFallidaAlarm", filter.Metric(observability.Per5Min("Sum")), p.Alerts,
		fmt.Sprintf("%s: an order's compensation failed (state %s): releasing its stock or refunding it failed after the retries. The order may be charged without confirmation: find the execution (status FAILED, error %s), refund or release by hand, and record it.", name, StateCompensacionFallida, ErrCompensacionFallida))
}
