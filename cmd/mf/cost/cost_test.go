package cost

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/synthesized"
)

func fixture(t *testing.T) (*synthesized.App, *Usage, *Prices) {
	t.Helper()
	tpl, err := synthesized.LoadEnv(filepath.Join("testdata", "app"), "test")
	if err != nil {
		t.Fatal(err)
	}
	u, err := LoadUsage(filepath.Join("testdata", "usage.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	return tpl, u, p
}

func line(t *testing.T, e *Estimate, service, item string) Line {
	t.Helper()
	for _, l := range e.Lines {
		if l.Service == service && l.Item == item {
			return l
		}
	}
	t.Fatalf("no line %s / %s in %+v", service, item, e.Lines)
	return Line{}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// The fixture routes 1,000 orders: event -> rule (its bus imported from
// another stack) -> buffer queue -> starter (its role may start the
// workflow) -> workflow (charge, a Map over 3 lines sending to a FIFO
// queue, an SNS publish) -> topic -> mail queue -> mailer. 10 % are
// declined at the charge and take its Catch.
func TestComputeFollowsTheTemplatesRoutes(t *testing.T) {
	tpl, u, p := fixture(t)
	e, err := Compute(tpl, u, p)
	if err != nil {
		t.Fatal(err)
	}
	h := 730.0
	tests := []struct {
		service, item string
		quantity      float64
		fixed         bool
	}{
		// 1,000 Created and 5,000 Ignored events are put; only Created matches a rule.
		{"Amazon EventBridge", "custom events on bus", 6000, false},
		{"Amazon EventBridge", "archive, events archived", 6000 * 2.0 / kbPerGB, false},
		// Buffer: 1,000 sends, a receive and a delete per batch of 1; lines
		// queue (FIFO, no consumer): 900 × 3 sends; mail queue: 900 × 3.
		{"Amazon SQS", "requests, standard queues", 3000 + 2700, false},
		{"Amazon SQS", "requests, FIFO queues", 2700, false},
		{"Amazon SQS", "idle long polls of the event source mappings", 2 * 5 * h * 3600 / 20, true},
		{"Amazon SNS", "publishes", 900, false},
		// Happy path: Charge, Lines, 3 × Send, Notify, Ok = 7; declined:
		// Charge, Failed = 2; 0.9 × 7 + 0.1 × 2 = 6.5 per execution.
		{"AWS Step Functions", "state transitions", 6500, false},
		// starter 1,000 × 0.1 s × 1 GB (arm64); charge 1,000 × 0.5 s × 0.5 GB
		// and mailer 900 × 0.2 s × 0.125 GB (x86_64): one line, two prices.
		{"AWS Lambda", "compute, order-driven functions", 100 + 250 + 22.5, false},
		{"AWS Lambda", "compute, scheduled functions", h / 24 * 10 * 0.25, true},
		{"AWS Lambda", "requests", 1000 + 1000 + 900 + h/24, false},
		{"Amazon SES", "emails", 900, false},
		{"Amazon VPC", "NAT gateways", 2 * h, true},
		{"Amazon VPC", "public IPv4 addresses", 2 * h, true},
		{"AWS PrivateLink", "interface endpoints", 2 * h, true},
		// The charge function is outside a VPC: egress, but no NAT data.
		{"Data transfer", "out to the internet", 1000 * 1024.0 / kbPerGB, false},
	}
	for _, tc := range tests {
		l := line(t, e, tc.service, tc.item)
		if !near(l.Quantity, tc.quantity) {
			t.Errorf("%s / %s: quantity %v, want %v", tc.service, tc.item, l.Quantity, tc.quantity)
		}
		if tc.fixed && l.PerOrder != 0 || !tc.fixed && l.Fixed != 0 && tc.item != "requests" {
			t.Errorf("%s / %s: fixed %v, per-order %v; want it all %s", tc.service, tc.item, l.Fixed, l.PerOrder,
				map[bool]string{true: "fixed", false: "per order"}[tc.fixed])
		}
	}
	if near(e.TransitionsPerExecution, 6.5) == false {
		t.Errorf("transitions per execution %v, want 6.5", e.TransitionsPerExecution)
	}
	nat := line(t, e, "Amazon VPC", "NAT gateways")
	if !near(nat.Fixed, 2*h*0.048) {
		t.Errorf("NAT gateways cost %v, want %v", nat.Fixed, 2*h*0.048)
	}
	gbs := line(t, e, "AWS Lambda", "compute, order-driven functions")
	if want := 100*0.0000133334 + (250+22.5)*0.0000166667; !near(gbs.PerOrder, want) {
		t.Errorf("Lambda compute %v USD, want %v (arm64 and x86_64 prices)", gbs.PerOrder, want)
	}
	if !near(e.Monthly(), e.Fixed()+e.PerOrder()) || e.Fixed() <= 0 || e.PerOrder() <= 0 {
		t.Errorf("totals: fixed %v, per-order %v, monthly %v", e.Fixed(), e.PerOrder(), e.Monthly())
	}
	if v, total := e.CostPerOrder(); !near(v, e.PerOrder()/1000) || !near(total, e.Monthly()/1000) {
		t.Errorf("cost per order %v, %v", v, total)
	}
	if e.Layer("SNS") != line(t, e, "Amazon SNS", "publishes").Monthly() {
		t.Errorf("the SNS layer is %v", e.Layer("SNS"))
	}
}

// One NAT gateway (and its address) fewer: the delta is exactly their
// hours, and nothing else changes.
func TestCompareTemplatesPricesOneNatGatewayLess(t *testing.T) {
	before, u, p := fixture(t)
	dir := t.TempDir()
	for _, name := range []string{"Fx-Base-test.template.json", "Fx-Flow-test.template.json", "manifest.json"} {
		raw, err := os.ReadFile(filepath.Join("testdata", "app", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "Fx-Base-test.template.json" {
			raw = bytes.Replace(raw, []byte(`"Nat2": {"Type": "AWS::EC2::NatGateway"`), []byte(`"Nat2": {"Type": "AWS::EC2::Route"`), 1)
			raw = bytes.Replace(raw, []byte(`"Eip2": {"Type": "AWS::EC2::EIP"`), []byte(`"Eip2": {"Type": "AWS::EC2::Route"`), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	after, err := synthesized.LoadEnv(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	d, err := CompareTemplates(before, after, u, p)
	if err != nil {
		t.Fatal(err)
	}
	want := -730 * (0.048 + 0.005)
	if !near(d.Monthly(), want) || !near(d.Fixed(), want) || d.PerOrder() != 0 {
		t.Errorf("delta %v (fixed %v, per-order %v), want %v", d.Monthly(), d.Fixed(), d.PerOrder(), want)
	}
	if len(d.Changes) != 2 {
		t.Errorf("changes %+v, want the NAT gateways and the addresses", d.Changes)
	}
}

func TestComputeRefusesWhatItCannotPrice(t *testing.T) {
	tpl, u, p := fixture(t)
	missing := *u
	missing.Functions = map[string]FunctionUsage{"starter": {MS: 1}}
	_, err := Compute(tpl, &missing, p)
	if err == nil || !strings.Contains(err.Error(), "function test-charge has no entry") || !strings.Contains(err.Error(), "function mailer has no entry") {
		t.Errorf("missing function usage: %v", err)
	}
	wrongTable := *u
	wrongTable.Functions = map[string]FunctionUsage{}
	for k, v := range u.Functions {
		wrongTable.Functions[k] = v
	}
	wrongTable.Functions["mailer"] = FunctionUsage{MS: 1, DynamoDB: map[string]TableAccess{"no-such-table": {WRU: 1}}}
	if _, err := Compute(tpl, &wrongTable, p); err == nil || !strings.Contains(err.Error(), "no-such-table") {
		t.Errorf("usage of a table the templates lack: %v", err)
	}
	other := *p
	other.Region = "us-east-1"
	if _, err := Compute(tpl, u, &other); err == nil || !strings.Contains(err.Error(), "price table is of us-east-1") {
		t.Errorf("prices of another region: %v", err)
	}
}

func TestPerMonth(t *testing.T) {
	days := 730.0 / 24
	tests := []struct {
		expr string
		want float64
	}{
		{"rate(1 minute)", 730 * 60},
		{"rate(5 minutes)", 730 * 12},
		{"rate(2 hours)", 365},
		{"rate(1 day)", days},
		{"cron(15 4 * * ? *)", days},
		{"cron(0/15 * * * ? *)", 4 * 24 * days},
		{"cron(0 9 ? * MON-FRI *)", 5 * days / 7},
		{"cron(0 8,20 1 * ? *)", 2 * days / 30.4375},
		{"at(2027-01-01T00:00:00)", 0},
	}
	for _, tc := range tests {
		got, err := perMonth(tc.expr, 730)
		if err != nil || !near(got, tc.want) {
			t.Errorf("perMonth(%q) = %v, %v; want %v", tc.expr, got, err, tc.want)
		}
	}
	for _, bad := range []string{"rate(1 fortnight)", "cron(* *)", "every minute"} {
		if _, err := perMonth(bad, 730); err == nil {
			t.Errorf("perMonth(%q) accepted", bad)
		}
	}
}

func TestWalkCountsTransitions(t *testing.T) {
	def := map[string]any{"StartAt": "A", "States": map[string]any{
		"A":  map[string]any{"Type": "Task", "Resource": "arn:aws:lambda:eu-west-1:1:function:a", "Next": "P", "Catch": []any{map[string]any{"Next": "F"}}},
		"P":  map[string]any{"Type": "Parallel", "Next": "C", "Branches": []any{oneState("B1"), oneState("B2")}},
		"C":  map[string]any{"Type": "Choice", "Default": "M", "Choices": []any{map[string]any{"Next": "F"}}},
		"M":  map[string]any{"Type": "Map", "Next": "OK", "ItemProcessor": oneState("I")},
		"OK": map[string]any{"Type": "Succeed"},
		"F":  map[string]any{"Type": "Fail"},
	}}
	a := &synthesized.Edge{Kind: synthesized.Task, State: "A", Settings: def["States"].(map[string]any)["A"].(map[string]any)}
	tasks := map[string]*synthesized.Edge{"A": a}
	happy, err := walk(def, tasks, 4, false)
	if err != nil || happy.transitions != 1+1+2+1+1+4+1 {
		t.Errorf("happy path: %v transitions, %v", happy.transitions, err)
	}
	if len(happy.effects) != 1 || happy.firstLambda != a {
		t.Errorf("effects %+v", happy.effects)
	}
	declined, err := walk(def, tasks, 4, true)
	if err != nil || declined.transitions != 2 {
		t.Errorf("declined path: %v transitions, %v", declined.transitions, err)
	}
	// A Map of SQS batches runs once per 10 lines: 25 lines are 3 batches
	// of 25/3 messages.
	batches := map[string]any{"StartAt": "M", "States": map[string]any{"M": map[string]any{"Type": "Map", "End": true, "ItemProcessor": map[string]any{
		"StartAt": "S", "States": map[string]any{"S": map[string]any{"Type": "Task", "Resource": "arn:aws:states:::aws-sdk:sqs:sendMessageBatch", "End": true}}}}}}
	s := &synthesized.Edge{Kind: synthesized.Task, State: "S"}
	p, err := walk(batches, map[string]*synthesized.Edge{"S": s}, 25, false)
	if err != nil || p.transitions != 1+3 || len(p.effects) != 1 || p.effects[0].count != 3 || !near(p.effects[0].per, 25.0/3) {
		t.Errorf("batches: %v transitions, effects %+v, %v", p.transitions, p.effects, err)
	}
	loop := map[string]any{"StartAt": "A", "States": map[string]any{"A": map[string]any{"Type": "Pass", "Next": "A"}}}
	if _, err := walk(loop, tasks, 1, false); err == nil {
		t.Error("a loop was walked")
	}
}

func oneState(name string) map[string]any {
	return map[string]any{"StartAt": name, "States": map[string]any{name: map[string]any{"Type": "Pass", "End": true}}}
}

func TestCommittedTablesAreValid(t *testing.T) {
	p, err := DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	if p.Region != "eu-west-1" {
		t.Errorf("price table of %s", p.Region)
	}
	if _, err := time.Parse("2006-01-02", p.Recorded); err != nil {
		t.Error(err)
	}
	u, err := DefaultUsage()
	if err != nil {
		t.Fatal(err)
	}
	// The SPEC's volumes.
	if u.OrdersPerMonth != 240000 || u.ExecutionsInFlightPeak != 450 {
		t.Errorf("orders %v, in flight %v", u.OrdersPerMonth, u.ExecutionsInFlightPeak)
	}
	// The publisher runs its whole polling window every invocation.
	if got, want := u.Functions["mf-outbox-publicador"].MS, float64(lambdaapi.PublisherPollWindow/time.Millisecond); got != want {
		t.Errorf("mf-outbox-publicador runs %v ms in the usage model, lambdaapi.PublisherPollWindow is %v ms", got, want)
	}
}

func TestParseRejectsUntraceableInput(t *testing.T) {
	tests := []struct {
		name, prices, usage, want string
	}{
		{name: "price without source", prices: `{"region":"eu-west-1","currency":"USD","recorded":"2026-12-01","prices":[{"key":"a","service":"S","usd":1,"per":1,"unit":"u","basis":"list"}]}`, want: "source"},
		{name: "unknown basis", prices: `{"region":"eu-west-1","currency":"USD","recorded":"2026-12-01","prices":[{"key":"a","service":"S","usd":1,"per":1,"unit":"u","source":"https://x","basis":"guess"}]}`, want: "basis"},
		{name: "derived without note", prices: `{"region":"eu-west-1","currency":"USD","recorded":"2026-12-01","prices":[{"key":"a","service":"S","usd":1,"per":1,"unit":"u","source":"https://x","basis":"derived"}]}`, want: "derived"},
		{name: "undated", prices: `{"region":"eu-west-1","currency":"USD","recorded":"soon","prices":[]}`, want: "recorded"},
		{name: "value without note", usage: `{"orders_per_month":1,"hours_per_month":730,"lines_per_order":1,"logs":{"compression_ratio":1},"sqs":{"long_poll_seconds":20},"kms_cache_seconds":300,"notes":{"hours_per_month":"x","lines_per_order":"x","logs":"x","sqs":"x","kms_cache_seconds":"x"}}`, want: "orders_per_month has no note"},
		{name: "unknown field", usage: `{"orders":1}`, want: "unknown field"},
	}
	for _, tc := range tests {
		var err error
		if tc.prices != "" {
			_, err = ParsePrices([]byte(tc.prices))
		} else {
			_, err = ParseUsage([]byte(tc.usage))
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalid mentioning %q", tc.name, err, tc.want)
		}
	}
}

func TestSpecName(t *testing.T) {
	for _, tc := range []struct{ name, env, want string }{
		{"mf-cobro", "prod", "mf-cobro"},
		{"mf-cobro-dev", "dev", "mf-cobro"},
		{"mf-outbox-publicador-staging", "staging", "mf-outbox-publicador"},
		{"cola-mercadofresco-pedidos-dev-entrega-dlq", "dev", "cola-mercadofresco-pedidos-entrega-dlq"},
		{"cola-mercadofresco-pedidos-dev", "dev", "cola-mercadofresco-pedidos"},
		{"mercadofresco-movimientos-stock-dev.fifo", "dev", "mercadofresco-movimientos-stock.fifo"},
	} {
		if got := specName(tc.name, tc.env); got != tc.want {
			t.Errorf("specName(%q, %q) = %q, want %q", tc.name, tc.env, got, tc.want)
		}
	}
}

// An alarm is billed per metric it names; a metric is high resolution
// when its period is known and under 60 s, for simple and metric-math
// alarms alike (a token or absent period is standard).
func TestAlarmedMetrics(t *testing.T) {
	stat := func(period any) map[string]any {
		return map[string]any{"MetricStat": map[string]any{"Metric": map[string]any{"Namespace": "N", "MetricName": "M"}, "Period": period}}
	}
	token := map[string]any{"Ref": "Period"}
	tests := []struct {
		name      string
		props     map[string]any
		std, high int
	}{
		{"simple, 60 s", map[string]any{"Namespace": "N", "MetricName": "M", "Period": 60.0}, 1, 0},
		{"simple, 10 s", map[string]any{"Namespace": "N", "MetricName": "M", "Period": 10.0}, 0, 1},
		{"simple, period a token", map[string]any{"Namespace": "N", "MetricName": "M", "Period": token}, 1, 0},
		{"metric math, 60 s and 10 s and an expression", map[string]any{"Metrics": []any{stat(60.0), stat("10"), map[string]any{"Expression": "m1+m2"}}}, 1, 1},
		{"metric math, period absent or a token", map[string]any{"Metrics": []any{stat(nil), stat(token)}}, 2, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			std, high := 0, 0
			for _, m := range alarmedMetrics(&synthesized.Resource{Type: "AWS::CloudWatch::Alarm", Properties: tc.props}) {
				if m.highResolution {
					high++
				} else {
					std++
				}
			}
			if std != tc.std || high != tc.high {
				t.Errorf("standard %d, high resolution %d; want %d, %d", std, high, tc.std, tc.high)
			}
		})
	}
}
