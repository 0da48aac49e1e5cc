package test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/synthesized"
)

// dashboardExempt are the functions the dashboard leaves out: the CDK's
// own deployment-time handlers, which run for seconds per deployment, carry
// no order data and have no physical name to put on a widget.
var dashboardExempt = []string{
	"Network/Custom::VpcRestrictDefaultSGCustomResourceProvider/Handler",
	"Outbox/Migraciones/Proveedor/framework-onEvent",
}

// Every environment has one dashboard, generated from what its constructs
// contribute (constructs/observability), and it shows every queue (depth, and
// the age of the oldest message of a consumer queue), every DLQ, every
// rule (invocations, failed and dead-lettered deliveries), every function
// (errors, throttles, concurrency), the state machine (executions and
// duration) and every breaker that has an alarm (openings), with its
// sections in the order flow's order.
func TestDashboardShowsEveryResource(t *testing.T) {
	s := synthApp(t)
	for _, e := range s.envs {
		t.Run(e.Env.Name, func(t *testing.T) {
			app, err := synthesized.LoadEnv(s.outdir, e.Env.Name)
			if err != nil {
				t.Fatal(err)
			}
			locals := literalLocals(app)
			boards := app.Resources("AWS::CloudWatch::Dashboard")
			if len(boards) != 1 {
				t.Fatalf("%d dashboards, want 1", len(boards))
			}
			raw, err := app.ResolveString(boards[0].Stack, boards[0].Prop("DashboardBody"), locals)
			if err != nil {
				t.Fatalf("dashboard body: %v", err)
			}
			shown, headings := dashboardMetrics(t, raw)
			t.Logf("%s: %d metric series, sections %q", boards[0].Path(), len(shown), headings)

			var want []string
			for sec := observability.SLOs; sec <= observability.Database; sec++ {
				if slices.Contains(headings, sec.Title()) {
					want = append(want, sec.Title())
				}
			}
			if !slices.Equal(headings, want) || len(headings) < 9 {
				t.Errorf("sections %q, want the order flow's order %q (at least 9)", headings, want)
			}

			name := func(r *synthesized.Resource) string {
				n, err := locals.Name(r)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			need := func(r *synthesized.Resource, ns, dim, value string, metrics ...string) {
				for _, m := range metrics {
					if !shown[ns+" "+m+" "+dim+"="+value] {
						t.Errorf("%s (%s %s) has no %s %s widget on the dashboard", resourceLabel(r.Stack, e.Env.Name, r), dim, value, ns, m)
					}
				}
			}
			counts := map[string]int{}
			for _, r := range app.Resources("AWS::SQS::Queue") {
				counts["queue"]++
				need(r, "AWS/SQS", "QueueName", name(r), "ApproximateNumberOfMessagesVisible")
				if r.Prop("RedrivePolicy") != nil {
					need(r, "AWS/SQS", "QueueName", name(r), "ApproximateAgeOfOldestMessage")
				}
			}
			for _, r := range app.Resources("AWS::Events::Rule") {
				counts["rule"]++
				need(r, "AWS/Events", "RuleName", name(r), "Invocations", "FailedInvocations", "InvocationsSentToDlq")
			}
			for _, r := range app.Resources("AWS::Lambda::Function") {
				if slices.Contains(dashboardExempt, resourceLabel(r.Stack, e.Env.Name, r)) {
					continue
				}
				counts["function"]++
				need(r, "AWS/Lambda", "FunctionName", name(r), "Errors", "Throttles", "ConcurrentExecutions")
			}
			for _, r := range app.Resources("AWS::StepFunctions::StateMachine") {
				counts["state machine"]++
				arn, err := locals.Ref(r)
				if err != nil {
					t.Fatal(err)
				}
				need(r, "AWS/States", "StateMachineArn", arn, "ExecutionsStarted", "ExecutionsSucceeded", "ExecutionsFailed", "ExecutionsTimedOut", "ExecutionTime")
			}
			for _, r := range app.Resources("AWS::CloudWatch::Alarm") {
				if r.Prop("MetricName") != lambdaapi.MetricBreakerOpened {
					continue
				}
				counts["breaker"]++
				dims, _ := r.Prop("Dimensions").([]any)
				for _, d := range dims {
					d, _ := d.(map[string]any)
					if d["Name"] == lambdaapi.DimensionDependency {
						need(r, lambdaapi.Namespace, lambdaapi.DimensionDependency, fmt.Sprint(d["Value"]), lambdaapi.MetricBreakerOpened)
					}
				}
			}
			t.Logf("checked %v", counts)
			for kind, least := range map[string]int{"queue": 15, "rule": 5, "function": 10, "state machine": 1, "breaker": 4} {
				if counts[kind] < least {
					t.Errorf("%d %ss in the templates, want at least %d: the walk found too few to prove anything", counts[kind], kind, least)
				}
			}
		})
	}
}

// dashboardMetrics reads a dashboard body: every metric series as
// "<namespace> <metric> <dimension>=<value>" (one key per dimension), and
// the section headings from top to bottom.
func dashboardMetrics(t *testing.T, body string) (map[string]bool, []string) {
	t.Helper()
	var doc struct {
		Widgets []struct {
			Type       string  `json:"type"`
			Y          float64 `json:"y"`
			Properties struct {
				Markdown string  `json:"markdown"`
				Metrics  [][]any `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("dashboard body: %v: %.300s", err, body)
	}
	shown := map[string]bool{}
	var headings []string
	lastY := -1.0
	for _, w := range doc.Widgets {
		if w.Y < lastY {
			t.Errorf("widgets are not laid out top to bottom (y %v after %v)", w.Y, lastY)
		}
		lastY = w.Y
		if w.Type == "text" {
			headings = append(headings, strings.TrimPrefix(w.Properties.Markdown, "## "))
			continue
		}
		var prev []string
		for _, m := range w.Properties.Metrics {
			var parts []string
			for _, p := range m {
				if s, ok := p.(string); ok {
					parts = append(parts, s)
				}
			}
			for i := range parts {
				if parts[i] == "." && i < len(prev) {
					parts[i] = prev[i]
				}
			}
			prev = parts
			if len(parts) < 2 {
				continue
			}
			for i := 2; i+1 < len(parts); i += 2 {
				shown[parts[0]+" "+parts[1]+" "+parts[i]+"="+parts[i+1]] = true
			}
		}
	}
	return shown, headings
}

// Both objectives have their burn-rate alarms in every environment: one
// over 1 h above 14.4 and one over 6 h above 6, on the measurements the
// code emits, notifying alertas-mercadofresco.
func TestSLOBurnRateAlarms(t *testing.T) {
	s := synthApp(t)
	for _, e := range s.envs {
		t.Run(e.Env.Name, func(t *testing.T) {
			app, err := synthesized.LoadEnv(s.outdir, e.Env.Name)
			if err != nil {
				t.Fatal(err)
			}
			locals := literalLocals(app)
			alerts := "arn:aws:sns:" + e.Env.Region + ":" + e.Env.Account + ":" + e.Env.PhysicalName("alertas-mercadofresco")
			got := map[string][]string{}
			for _, a := range app.Resources("AWS::CloudWatch::Alarm") {
				raw, _ := json.Marshal(a.Prop("Metrics"))
				for _, objective := range []string{lambdaapi.MetricOrdersConfirmedLate, lambdaapi.MetricMessagesLate} {
					if !strings.Contains(string(raw), `"MetricName":"`+objective+`"`) {
						continue
					}
					actions, _ := a.Prop("AlarmActions").([]any)
					var targets []string
					for _, act := range actions {
						arn, err := app.ResolveString(a.Stack, act, locals)
						if err != nil {
							t.Fatal(err)
						}
						targets = append(targets, arn)
					}
					if !slices.Equal(targets, []string{alerts}) {
						t.Errorf("%s notifies %v, want %s", a.Path(), targets, alerts)
					}
					var period float64
					for _, m := range a.Prop("Metrics").([]any) {
						if ms, ok := m.(map[string]any)["MetricStat"].(map[string]any); ok {
							period = ms["Period"].(float64)
						}
					}
					got[objective] = append(got[objective], fmt.Sprintf("%v over %v s", a.Prop("Threshold"), period))
				}
			}
			for _, objective := range []string{lambdaapi.MetricOrdersConfirmedLate, lambdaapi.MetricMessagesLate} {
				slices.Sort(got[objective])
				if want := []string{"14.4 over 3600 s", "6 over 21600 s"}; !slices.Equal(got[objective], want) {
					t.Errorf("%s burn-rate alarms %v, want %v", objective, got[objective], want)
				}
			}
		})
	}
}
