package orderflow

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/observability"
)

// contribute adds the Workflow section's widgets: executions started,
// succeeded, failed and timed out (sums over 5 minutes), and the
// execution time p50 and p99.
func (w *Workflow) contribute(board *observability.Board, name string) {
	if board == nil {
		return
	}
	opts := func(stat, label string) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String(stat), Label: jsii.String(label)}
	}
	sm := w.StateMachine
	board.Add(observability.Workflow,
		observability.Graph(observability.GraphProps{
			Title: name + ": executions",
			Width: 12,
			Left: []awscloudwatch.IMetric{
				sm.MetricStarted(opts("Sum", "started")),
				sm.MetricSucceeded(opts("Sum", "succeeded")),
				sm.MetricFailed(opts("Sum", "failed")),
				sm.MetricTimedOut(opts("Sum", "timed out")),
			},
		}),
		observability.Graph(observability.GraphProps{
			Title: name + ": execution time (ms)",
			Width: 12,
			Left: []awscloudwatch.IMetric{
				sm.MetricTime(opts("p50", "p50")),
				sm.MetricTime(opts("p99", "p99")),
			},
		}))
}

// contribute adds the Payment section's widget: charge and refund calls
// (invocations and errors, sums over 5 minutes) on the left, the gateway's
// attempt latency p50 and p99 on the right against the latency alarm.
func (p *Payment) contribute(board *observability.Board) {
	if board == nil {
		return
	}
	five := func(label string) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum"), Label: jsii.String(label)}
	}
	latency := func(stat string) awscloudwatch.IMetric {
		return p.MetricGatewayLatency(stat).With(&awscloudwatch.MetricOptions{Label: jsii.String("gateway latency " + stat + " (ms)")})
	}
	board.Add(observability.Payment, observability.Graph(observability.GraphProps{
		Title: "Payment: charge calls and gateway latency",
		Width: 24,
		Left: []awscloudwatch.IMetric{
			p.Cobro.Function.MetricInvocations(five("charge calls (cobro)")),
			p.Cobro.Function.MetricErrors(five("failed charges")),
			p.Reembolso.Function.MetricInvocations(five("refund calls (reembolso)")),
		},
		Right:      []awscloudwatch.IMetric{latency("p50"), latency("p99")},
		RightLines: []*awscloudwatch.HorizontalAnnotation{observability.Ceiling("p99 latency alarm", LatencyThresholdMs)},
	}))
}
