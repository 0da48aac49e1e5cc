package observability

import (
	"cmp"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Section is a band of the dashboard; the constants are in the order flow's
// order, which is the dashboard's from top to bottom.
type Section int

// The sections, top to bottom.
const (
	// SLOs: the burn rates of the service-level objectives.
	SLOs Section = iota
	// Outbox: pending rows and the age of the oldest.
	Outbox
	// Bus: invocations and failed or dead-lettered deliveries per rule.
	Bus
	// Workflow: executions started, succeeded, failed, timed out; duration.
	Workflow
	// Payment: charge calls and the gateway's latency.
	Payment
	// Breakers: circuit openings per dependency.
	Breakers
	// Queues: each consumer queue's depth and age of its oldest message.
	Queues
	// DeadLetters: every DLQ's depth.
	DeadLetters
	// Functions: Lambda errors, throttles and concurrency against the ceiling.
	Functions
	// Database: Aurora connections against the maximum.
	Database
	sectionCount
)

var titles = [sectionCount]string{
	SLOs:        "SLOs: error-budget burn rate",
	Outbox:      "1. Outbox (Aurora): pending rows and the age of the oldest",
	Bus:         "2. Bus bus-mercadofresco: invocations and failed or dead-lettered deliveries per rule",
	Workflow:    "3. Workflow mercadofresco-procesar-pedido: executions and duration",
	Payment:     "4. Payment: charge calls and gateway latency",
	Breakers:    "5. Circuit breakers: openings per dependency",
	Queues:      "6. Consumer queues: depth and age of the oldest message",
	DeadLetters: "7. Dead-letter queues: depth (any message is work not done: docs/runbooks/dlq.md)",
	Functions:   "8. Lambda: errors, throttles, concurrency against the ceiling",
	Database:    "9. Aurora: connections against the maximum",
}

// Title is the heading of s on the dashboard.
func (s Section) Title() string {
	if s < 0 || s >= sectionCount {
		return fmt.Sprintf("section %d", int(s))
	}
	return titles[s]
}

// Board collects the widgets the constructs of one environment contribute.
// The zero value is ready; a nil *Board ignores every Add.
type Board struct {
	widgets [sectionCount][]awscloudwatch.IWidget
}

// Add appends widgets to section s. A nil board, or an unknown section,
// takes nothing (the construct is still whole without a dashboard).
func (b *Board) Add(s Section, widgets ...awscloudwatch.IWidget) {
	if b == nil || s < 0 || s >= sectionCount {
		return
	}
	b.widgets[s] = append(b.widgets[s], widgets...)
}

// Widgets is what section s holds, in the order it was added.
func (b *Board) Widgets(s Section) []awscloudwatch.IWidget {
	if b == nil || s < 0 || s >= sectionCount {
		return nil
	}
	return b.widgets[s]
}

// DashboardProps configures NewDashboard.
type DashboardProps struct {
	// Board is what the constructs contributed. Required.
	Board *Board
	// DashboardName is the physical name. Nil lets CloudFormation name it.
	DashboardName *string
}

// NewDashboard creates the dashboard from the board: a heading per section that has
// widgets, then its widgets, left to right, wrapping at the dashboard's 24
// columns. Sections without widgets are left out.
func NewDashboard(scope constructs.Construct, id string, props *DashboardProps) awscloudwatch.Dashboard {
	if props == nil {
		props = &DashboardProps{}
	}
	d := awscloudwatch.NewDashboard(scope, jsii.String(id), &awscloudwatch.DashboardProps{
		DashboardName:   props.DashboardName,
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
		PeriodOverride:  awscloudwatch.PeriodOverride_AUTO,
	})
	if props.Board == nil {
		awscdk.Annotations_Of(d).AddError(jsii.String("dashboard " + *d.Node().Path() + ": Board is required (the platform context's Dashboard)"))
		return d
	}
	for s := Section(0); s < sectionCount; s++ {
		ws := props.Board.Widgets(s)
		if len(ws) == 0 {
			continue
		}
		d.AddWidgets(awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{
			Markdown: jsii.String("## " + s.Title()),
			Width:    jsii.Number(24),
			Height:   jsii.Number(1),
		}))
		d.AddWidgets(ws...)
	}
	return d
}

// GraphProps configures Graph.
type GraphProps struct {
	Title string
	// Left and Right are the metrics on each axis (Right may be empty).
	Left, Right []awscloudwatch.IMetric
	// LeftLines and RightLines are ceilings drawn on each axis.
	LeftLines, RightLines []*awscloudwatch.HorizontalAnnotation
	// Width in the dashboard's 24 columns; zero means 8 (a third of a row).
	Width float64
}

// Graph is a graph widget six units high.
func Graph(g GraphProps) awscloudwatch.GraphWidget {
	width := cmp.Or(g.Width, 8)
	p := &awscloudwatch.GraphWidgetProps{
		Title:  jsii.String(g.Title),
		Width:  jsii.Number(width),
		Height: jsii.Number(6),
		Left:   &g.Left,
	}
	if len(g.Right) > 0 {
		p.Right = &g.Right
	}
	if len(g.LeftLines) > 0 {
		p.LeftAnnotations = &g.LeftLines
	}
	if len(g.RightLines) > 0 {
		p.RightAnnotations = &g.RightLines
	}
	return awscloudwatch.NewGraphWidget(p)
}

// Ceiling is a horizontal line at value on a graph, labelled.
func Ceiling(label string, value float64) *awscloudwatch.HorizontalAnnotation {
	return &awscloudwatch.HorizontalAnnotation{Value: jsii.Number(value), Label: jsii.String(label), Color: awscloudwatch.Color_RED()}
}

// Metric is a metric of namespace by its dimensions, at statistic over
// period (nil: 5 minutes), labelled (label "": no label).
func Metric(namespace, name string, dims map[string]*string, statistic, label string, period awscdk.Duration) awscloudwatch.Metric {
	if period == nil {
		period = awscdk.Duration_Minutes(jsii.Number(5))
	}
	p := &awscloudwatch.MetricProps{
		Namespace:     jsii.String(namespace),
		MetricName:    jsii.String(name),
		DimensionsMap: &dims,
		Statistic:     jsii.String(statistic),
		Period:        period,
	}
	if label != "" {
		p.Label = jsii.String(label)
	}
	return awscloudwatch.NewMetric(p)
}

// IsToken reports whether s is an unresolved reference, not a literal.
func IsToken(s *string) bool { return s == nil || *awscdk.Token_IsUnresolved(s) }

// Literal is name when it is a literal string, else fallback (a reference
// the CDK resolves, importing it from the resource's stack when needed).
func Literal(name, fallback *string) *string {
	if !IsToken(name) {
		return name
	}
	return fallback
}
