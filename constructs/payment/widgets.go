package payment

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/observability"
)

// contribute adds the Payment section's widget: charge and refund calls
// (invocations and errors, sums over 5 minutes) on the left, the gateway's
// attempt latency p50 and p99 on the right against the latency alarm.
func (p *Payment) contribute(board *observability.Board, latencyMs float64) {
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
			p.Cobro.MetricErrors(five("failed charges")),
			p.Reembolso.Function.MetricInvocations(five("refund calls (reembolso)")),
		},
		Right:      []awscloudwatch.IMetric{latency("p50"), latency("p99")},
		RightLines: []*awscloudwatch.HorizontalAnnotation{observability.Ceiling("p99 latency alarm", latencyMs)},
	}))
}
