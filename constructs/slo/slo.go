// Package slo is a service-level objective's multi-window burn-rate alarms
// (the SRE workbook's): the share of bad events over a window, divided by
// the error budget (1 - Objective), is the budget's burn rate; above 14.4
// over 1 h (2 % of a 30-day budget gone in an hour) or above 6 over 6 h
// (5 % in six hours) it alarms to the Context's Alerts
// (alertas-mercadofresco) through constructs/observability, and the objective's
// burn-rate graph goes to the dashboard's SLOs section.
// docs/design.md#slo.
package slo

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/observability"
)

// Window is one burn-rate alarm: the window the rate is measured over and
// the rate that alarms.
type Window struct {
	Window awscdk.Duration
	Rate   float64
}

// Windows are the workbook's page-worthy pairs: 1 h at 14.4 and 6 h at 6.
func Windows() []Window {
	return []Window{
		{Window: awscdk.Duration_Hours(jsii.Number(1)), Rate: 14.4},
		{Window: awscdk.Duration_Hours(jsii.Number(6)), Rate: 6},
	}
}

// Props configures New. Name, Description, Objective, Bad, Total and the
// Context's Alerts are required.
type Props struct {
	core.Context
	// Name is the objective in a few words ("SLO 1: order confirmed within
	// 15 min").
	Name string
	// Description says what the objective promises and what to do when
	// its budget burns (the alarms' description starts with it).
	Description string
	// Objective is the share of good events promised (0.999).
	Objective float64
	// Bad and Total are the objective's event counts; each list is summed
	// (a metric without data in a window counts 0). Their statistic is
	// taken as Sum and their period as the window's.
	Bad, Total []awscloudwatch.Metric
}

// Objective is the objective's alarms, one per window of Windows().
type Objective struct {
	constructs.Construct
	Alarms []awscloudwatch.Alarm
}

// New creates the burn-rate alarms and the dashboard graph. Every problem
// of props is a synthesis error; the construct is still whole.
func New(scope constructs.Construct, id string, props *Props) *Objective {
	c, v, props := core.Begin(scope, id, "slo", props)
	o := &Objective{Construct: c}
	props.Require(v, core.Alerts)
	v.If(props.Name == "" || props.Description == "", "Name and Description are required: say what the objective promises")
	v.If(props.Objective <= 0 || props.Objective >= 1, "Objective %v must be between 0 and 1 (0.999 is 99.9 %%)", props.Objective)
	v.If(len(props.Bad) == 0 || len(props.Total) == 0, "Bad and Total are required")
	if len(props.Bad) == 0 || len(props.Total) == 0 || props.Objective <= 0 || props.Objective >= 1 {
		return o
	}
	budget := 1 - props.Objective
	var lines []*awscloudwatch.HorizontalAnnotation
	var rates []awscloudwatch.IMetric
	for _, w := range Windows() {
		secs := v.Seconds("Window", w.Window, 0, 300, 86400)
		if secs == 0 {
			continue
		}
		rate := BurnRate(props.Bad, props.Total, budget, w.Window, fmt.Sprintf("burn rate over %s", core.Human(secs)))
		o.Alarms = append(o.Alarms, observability.NewAlarm(c, fmt.Sprintf("Quema%.0fh", secs/3600), &observability.AlarmProps{
			Metric:    rate,
			Topic:     props.Alerts,
			Threshold: w.Rate,
			Description: fmt.Sprintf("%s (%s): the error budget burns %.1f times faster than it lasts over %s (%.1f %% of 30 days' budget). %s docs/design.md#slo",
				props.Name, props.Environment(), w.Rate, core.Human(secs), 100*w.Rate*secs/(30*86400), props.Description),
			// No events in a window (no orders at night) burn nothing.
			MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
		}))
		rates = append(rates, rate)
		lines = append(lines, observability.Ceiling(fmt.Sprintf("alarm %s: %.1f", core.Human(secs), w.Rate), w.Rate))
	}
	props.Dashboard.Add(observability.SLOs, observability.Graph(observability.GraphProps{
		Title:     fmt.Sprintf("%s (objective %.1f %%): burn rate", props.Name, 100*props.Objective),
		Width:     12,
		Left:      rates,
		LeftLines: lines,
	}))
	return o
}

// BurnRate is the math expression (sum of bad / sum of total) / budget
// over window, each metric summed over the window and counted 0 where it
// has no data.
func BurnRate(bad, total []awscloudwatch.Metric, budget float64, window awscdk.Duration, label string) awscloudwatch.MathExpression {
	using := map[string]awscloudwatch.IMetric{}
	// Ids unique per window: one graph shows every window's expression.
	secs := *window.ToSeconds(nil)
	sum := func(prefix string, ms []awscloudwatch.Metric) string {
		terms := make([]string, len(ms))
		for i, m := range ms {
			id := fmt.Sprintf("%s%.0f_%d", prefix, secs, i)
			using[id] = m.With(&awscloudwatch.MetricOptions{Period: window, Statistic: jsii.String("Sum")})
			terms[i] = fmt.Sprintf("FILL(%s, 0)", id)
		}
		return "(" + strings.Join(terms, " + ") + ")"
	}
	expr := fmt.Sprintf("%s / %s / %g", sum("malos", bad), sum("total", total), budget)
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String(expr),
		UsingMetrics: &using,
		Period:       window,
		Label:        jsii.String(label),
	})
}
