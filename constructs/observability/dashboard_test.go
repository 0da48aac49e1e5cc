package observability_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/internal/cdktest"
)

// body is the dashboard's body with its references rendered as text.
func body(t *testing.T, stack awscdk.Stack) string {
	t.Helper()
	boards := *assertions.Template_FromStack(stack, nil).FindResources(jsii.String("AWS::CloudWatch::Dashboard"), nil)
	if len(boards) != 1 {
		t.Fatalf("%d dashboards", len(boards))
	}
	for _, b := range boards {
		raw, _ := json.Marshal((*b)["Properties"].(map[string]any)["DashboardBody"])
		return string(raw)
	}
	return ""
}

// A construct created with the platform context appears on the dashboard
// without the dashboard naming it, in its section; sections come in the
// order flow's order whatever the order of contributions.
func TestConstructsContributeTheirOwnWidgets(t *testing.T) {
	p := cdktest.NewPlatform("Tablero")
	board := &observability.Board{}
	ctx := core.Context{DataKey: p.Key, Alerts: p.Alerts, Dashboard: board}
	queues.NewQueue(p.Stack, "Nueva", &queues.QueueProps{Context: ctx, QueueName: jsii.String("cola-nueva")})
	board.Add(observability.Outbox, observability.Graph(observability.GraphProps{Title: "outbox"}))
	observability.NewDashboard(p.Stack, "Tablero", &observability.DashboardProps{Board: board})
	if errs := cdktest.Errors(p.Stack); len(errs) > 0 {
		t.Fatal(errs)
	}
	b := body(t, p.Stack)
	for _, want := range []string{`\"QueueName\",\"cola-nueva\"`, `\"QueueName\",\"cola-nueva-dlq\"`, "ApproximateAgeOfOldestMessage"} {
		if !strings.Contains(b, want) {
			t.Errorf("dashboard lacks %s: %.400s", want, b)
		}
	}
	outbox, queues, dlqs := strings.Index(b, observability.Outbox.Title()), strings.Index(b, observability.Queues.Title()), strings.Index(b, observability.DeadLetters.Title())
	if outbox < 0 || queues < outbox || dlqs < queues || strings.Contains(b, observability.Bus.Title()) {
		t.Errorf("sections out of order or empty ones shown: outbox %d, queues %d, DLQs %d", outbox, queues, dlqs)
	}
}

// A nil board takes nothing, and a dashboard without one is an error.
func TestWithoutABoard(t *testing.T) {
	var b *observability.Board
	b.Add(observability.Queues, observability.Graph(observability.GraphProps{Title: "x"}))
	if len(b.Widgets(observability.Queues)) != 0 {
		t.Fatal("a nil board kept a widget")
	}
	p := cdktest.NewPlatform("SinTablero")
	observability.NewDashboard(p.Stack, "Tablero", nil)
	cdktest.RequireContains(t, cdktest.Errors(p.Stack), "Board is required")
}
