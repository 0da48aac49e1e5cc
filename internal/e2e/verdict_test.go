package e2e

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mercadofresco/integration/constructs/golambda/gobuild"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/payment"
	"github.com/mercadofresco/integration/synthesized"
)

// dependency is one external dependency whose effects the verdict counts,
// as its fakes' ledgers record them:
// its fakes, the path of the requests that count ("" for every one), the
// function that calls it.
type dependency struct {
	name  string
	fakes func(*Dependencies) []*localaws.Service
	path  string
	entry string
}

var dependencies = []dependency{
	{"gateway charges", func(d *Dependencies) []*localaws.Service { return []*localaws.Service{d.Gateway.Service} }, payment.PathCobros, "lambdas/cobro"},
	{"warehouse preparations", func(d *Dependencies) []*localaws.Service { return []*localaws.Service{d.Almacen} }, "", "lambdas/preparar-pedido"},
	{"e-mails (SES + secondary)", func(d *Dependencies) []*localaws.Service { return []*localaws.Service{d.SES.Service, d.Correo2} }, "", "lambdas/correo-confirmacion"},
	{"ERP notices", func(d *Dependencies) []*localaws.Service { return []*localaws.Service{d.ERP} }, "", "lambdas/aviso-erp"},
}

// orderOf is the order a request to a dependency is for: its body's
// pedido_id, or an SES e-mail's pedido_id tag.
func orderOf(body []byte) string {
	return cmp.Or(pedidoOf(body), localaws.SESTag(body, "pedido_id"))
}

// ledger is one dependency's view for the verdict: the 2xx effects per
// order, the uncertain outcomes per order (why a repeat was allowed), the
// project's deliveries to the code that calls it and the key store's counts.
type ledger struct {
	effects   map[string][]localaws.Effect
	uncertain map[string][]string
	layer     LayerLine
}

// LayerLine says how much each layer absorbed for one dependency: the
// deliveries the project's code received (queue messages, task
// invocations), the requests that reached the dependency, its distinct
// keys, its effects and its key store's replays.
type LayerLine struct {
	Dependency                          string
	Deliveries, Requests, Keys, Effects int
	Replayed, MaxRequestsPerKey         int
	DeliveredBy                         string
}

// Duplicate is an order with more than one effect at a dependency.
type Duplicate struct {
	Dependency, Order string
	Effects           int
	Requests          []string // the requests that produced the effects
	Uncertain         []string // the uncertain outcomes that allow repeats
}

var orderIDPattern = regexp.MustCompile(`P-\d{5}-[0-9a-f]{4}`)

// ledgers reads every dependency's ledger, in the table's order, with the
// uncertain outcomes the scenario caused: the requests the fake's ledger
// shows performed with their answer lost (a fault after the effect, the
// client gone before the answer was written), and the order whose consumer
// the run killed after its effect. What the clients log is not evidence:
// a repeat the ledger cannot explain is a broken claim.
func (r *Run) ledgers() []*ledger {
	var out []*ledger
	for _, dep := range dependencies {
		l := &ledger{effects: map[string][]localaws.Effect{}, uncertain: map[string][]string{}, layer: LayerLine{Dependency: dep.name}}
		perKey := map[string]int{}
		for _, s := range dep.fakes(r.w.deps) {
			for _, e := range s.Effects() {
				if e.Response.Status >= 200 && e.Response.Status < 300 && (dep.path == "" || e.Path == dep.path) {
					l.effects[orderOf(e.Body)] = append(l.effects[orderOf(e.Body)], e)
				}
			}
			for _, q := range s.Requests() {
				if dep.path != "" && q.Path != dep.path {
					continue
				}
				if q.AnswerLost {
					p := orderOf(q.Body)
					l.uncertain[p] = append(l.uncertain[p], fmt.Sprintf("answer lost after the effect (request #%d: %s)", q.Seq, cmp.Or(q.Fault, "the caller went away")))
				}
				if !q.Effect && !q.Replayed {
					continue // refused before the key store (faults, auth)
				}
				l.layer.Requests++
				if q.IdempotencyKey != "" {
					perKey[q.IdempotencyKey]++
				}
				if q.Effect {
					l.layer.Effects++
				}
				if q.Replayed {
					l.layer.Replayed++
				}
			}
		}
		l.layer.Keys = len(perKey)
		for _, n := range perKey {
			l.layer.MaxRequestsPerKey = max(l.layer.MaxRequestsPerKey, n)
		}
		// The killed order's effect happened and its answer died with the
		// consumer (the ledger may show it lost too: the same outcome).
		if p := r.kill.victim(); p != "" && dep.entry == r.kill.esm.Fn.Entry && len(l.uncertain[p]) == 0 {
			l.uncertain[p] = append(l.uncertain[p], fmt.Sprintf("%s killed between its effect and its completion record; the %d other orders of its batch ran one at a time, before or after it",
				dep.entry, len(r.kill.Batch)-1))
		}
		l.layer.Deliveries, l.layer.DeliveredBy = r.deliveries(dep.entry)
		out = append(out, l)
	}
	return out
}

// deliveries is what the project's code that calls a dependency received:
// the messages of its event source mapping, or its invocations.
func (r *Run) deliveries(entry string) (int, string) {
	for _, e := range r.esms {
		if e.Fn.Entry == entry {
			return int(e.delivered.Load()), "deliveries from " + e.Queue.Name
		}
	}
	for _, f := range r.w.functions {
		if f.Entry == entry {
			return int(f.invoked.Load()), "invocations of " + f.Name
		}
	}
	return 0, ""
}

// duplicates lists the orders with more than one effect at a dependency,
// with the requests that produced them and the uncertain outcomes that
// allow them.
func duplicates(ls []*ledger, ids []string) []Duplicate {
	var out []Duplicate
	for _, l := range ls {
		for _, id := range ids {
			eff := l.effects[id]
			if len(eff) < 2 {
				continue
			}
			d := Duplicate{Dependency: l.layer.Dependency, Order: id, Effects: len(eff), Uncertain: l.uncertain[id]}
			for _, e := range eff {
				d.Requests = append(d.Requests, fmt.Sprintf("#%d at %s of the run's clock, key %q", e.Seq, e.At.Format("15:04:05.000"), e.IdempotencyKey))
			}
			out = append(out, d)
		}
	}
	return out
}

// unexplained is the verdict on duplicates: with keys honoured, none is
// allowed; with keys ignored, an order may have one extra effect per
// uncertain outcome of its own at that dependency, and no other.
func (rep *Report) unexplained() []string {
	var bad []string
	for _, d := range rep.Duplicates {
		switch {
		case !rep.IgnoreKeys:
			bad = append(bad, fmt.Sprintf("order %s: %d %s with the dependencies honouring Idempotency-Key (requests %s)", d.Order, d.Effects, d.Dependency, strings.Join(d.Requests, ", ")))
		case d.Effects-1 > len(d.Uncertain):
			bad = append(bad, fmt.Sprintf("order %s: %d %s, %d more than its %d uncertain outcomes allow; requests %s",
				d.Order, d.Effects, d.Dependency, d.Effects-1-len(d.Uncertain), len(d.Uncertain), strings.Join(d.Requests, ", ")))
		}
	}
	return bad
}

// uncertainList is the scenario's uncertain outcomes, "dependency: order
// (reason)", sorted.
func uncertainList(ls []*ledger) []string {
	var out []string
	for _, l := range ls {
		for p, why := range l.uncertain {
			out = append(out, fmt.Sprintf("%s: %s (%s)", l.layer.Dependency, p, strings.Join(why, "; ")))
		}
	}
	sort.Strings(out)
	return out
}

// AlarmLine is one alarm of the templates the run models, from the
// metric its metric filter would produce on the run's executions.
type AlarmLine struct {
	Name, Metric, Pattern string
	Datapoints            int
	Threshold             float64
	Fired                 bool
	Error                 string
}

var filterTerm = regexp.MustCompile(`^\(\$\.([A-Za-z0-9_.]+) = "([^"]*)"\)$`)

// matchFilter evaluates a CloudWatch Logs JSON filter pattern made of
// equality terms joined by && ({ ($.a = "x") && ($.b.c = "y") }), the form
// the templates use; any other form is an error, not a miss.
func matchFilter(pattern string, event map[string]any) (bool, error) {
	p := strings.TrimSpace(pattern)
	if !strings.HasPrefix(p, "{") || !strings.HasSuffix(p, "}") {
		return false, fmt.Errorf("filter pattern %q is not a JSON pattern", pattern)
	}
	for _, term := range strings.Split(strings.TrimSpace(p[1:len(p)-1]), "&&") {
		m := filterTerm.FindStringSubmatch(strings.TrimSpace(term))
		if m == nil {
			return false, fmt.Errorf("filter pattern %q: term %q is not modelled", pattern, term)
		}
		v, ok := jsonPath(event, "$."+m[1])
		if s, _ := v.(string); !ok || s != m[2] {
			return false, nil
		}
	}
	return true, nil
}

// stateMachineLogAlarms models the alarms on the metric filters of the
// state machines' log groups: for each failed execution, the
// FailStateEntered event of the Fail state it ended in (the one whose
// static Error is the execution's error; testdata/ holds the documented
// format), run through logAlarms (the run is shorter than the 5-minute
// period).
func (w *World) stateMachineLogAlarms(results []localaws.ExecutionResult) []AlarmLine {
	failStates := map[string]string{} // error -> Fail state name
	for _, def := range w.sfn.Definitions {
		synthesized.WalkStates(def, func(name string, st map[string]any) {
			if e, ok := st["Error"].(string); ok && st["Type"] == "Fail" {
				failStates[e] = name
			}
		})
	}
	var events []map[string]any
	for _, res := range results {
		if name, ok := failStates[res.Error]; ok && res.Status == "FAILED" {
			events = append(events, map[string]any{"type": "FailStateEntered", "execution_arn": res.ARN,
				"details": map[string]any{"name": name}})
		}
	}
	return logAlarms(w.app, events)
}

// logAlarms runs the log events through the metric filters of the state
// machines' log groups and compares each alarm on them with its threshold
// over one period.
func logAlarms(app *synthesized.App, events []map[string]any) []AlarmLine {
	var out []AlarmLine
	for _, mf := range app.Resources("AWS::Logs::MetricFilter") {
		pattern, _ := mf.Prop("FilterPattern").(string)
		trs, _ := mf.Prop("MetricTransformations").([]any)
		if len(trs) != 1 {
			continue
		}
		tr, _ := trs[0].(map[string]any)
		metric, ns := str(tr["MetricName"]), str(tr["MetricNamespace"])
		if !strings.Contains(pattern, "FailStateEntered") {
			continue // not on a state machine's log
		}
		for _, a := range app.Resources("AWS::CloudWatch::Alarm") {
			if str(a.Prop("MetricName")) != metric || str(a.Prop("Namespace")) != ns {
				continue
			}
			line := AlarmLine{Name: a.Path(), Metric: ns + "/" + metric, Pattern: pattern}
			line.Threshold, _ = a.Prop("Threshold").(float64)
			for _, ev := range events {
				ok, err := matchFilter(pattern, ev)
				if err != nil {
					line.Error = err.Error()
					break
				}
				if ok {
					line.Datapoints++
				}
			}
			n := float64(line.Datapoints)
			switch str(a.Prop("ComparisonOperator")) {
			case "GreaterThanThreshold":
				line.Fired = n > line.Threshold
			case "GreaterThanOrEqualToThreshold":
				line.Fired = n >= line.Threshold
			default:
				line.Error = "comparison " + str(a.Prop("ComparisonOperator")) + " is not modelled"
			}
			out = append(out, line)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// circuitSummary summarises the CircuitoAbierto failures: the orders whose
// first attempt failed with it, how many of them were paid on a later
// attempt, and how long their customers waited (simulated time, from the
// first attempt's failure to the execution that succeeded).
func (r *Run) circuitSummary() CircuitSummary {
	var s CircuitSummary
	r.mu.Lock()
	defer r.mu.Unlock()
	var waits []time.Duration
	for _, id := range r.ids {
		o := r.orders[id]
		if len(o.Failures) == 0 || o.Failures[0] != "CircuitoAbierto" {
			continue
		}
		s.FirstAttempts++
		if o.Succeeded {
			s.PaidLater++
			s.Retries += o.Intentos - 1
			if !o.failedAt.IsZero() && !o.succeededAt.IsZero() {
				waits = append(waits, o.succeededAt.Sub(o.failedAt))
			}
		}
	}
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	if n := len(waits); n > 0 {
		s.MedianWait, s.MaxWait = waits[n/2], waits[n-1]
	}
	return s
}

// CircuitSummary is the report's account of the CircuitoAbierto failures.
type CircuitSummary struct {
	FirstAttempts, PaidLater, Retries int
	MedianWait, MaxWait               time.Duration
}

// stockFolded renders the stock table as one line when every counted SKU
// matches its ledger, and lists only the SKUs that differ otherwise.
func stockFolded(lines []StockLine) (summary string, differ []StockLine) {
	var reserved, want, badEx, badRes int64
	counted := 0
	for _, s := range lines {
		if s.SKU == badSKU {
			badEx, badRes = s.Existencias, s.Reservado
			if s.Existencias != 0 || s.Reservado != 0 {
				differ = append(differ, s)
			}
			continue
		}
		counted++
		reserved += s.Reservado
		want += s.WantReservado
		if s.Existencias != s.WantExistencias || s.Reservado != s.WantReservado {
			differ = append(differ, s)
		}
	}
	return fmt.Sprintf("%d SKUs counted, existencias %d each as seeded, reservado %d in all against %d expected; %s: existencias %d, reservado %d",
		counted, initial, reserved, want, badSKU, badEx, badRes), differ
}

// The alarm model evaluates the templates' JSON filter patterns; a form it
// does not model is an error, never a miss.
func TestMatchFilter(t *testing.T) {
	ev := map[string]any{"type": "FailStateEntered", "details": map[string]any{"name": "CompensacionFallida"}}
	tests := []struct {
		pattern string
		want    bool
		err     bool
	}{
		{`{ ($.type = "FailStateEntered") && ($.details.name = "CompensacionFallida") }`, true, false},
		{`{ ($.type = "FailStateEntered") && ($.details.name = "PedidoFallido") }`, false, false},
		{`{ ($.type = "TaskStateEntered") }`, false, false},
		{`{ ($.details.missing = "x") }`, false, false},
		{`{ ($.type != "FailStateEntered") }`, false, true},
		{`{ ($.type = "FailStateEntered") || ($.details.name = "x") }`, false, true},
		{`CompensacionFallida`, false, true},
	}
	for _, tt := range tests {
		got, err := matchFilter(tt.pattern, ev)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("matchFilter(%s) = %v, %v; want %v, error %v", tt.pattern, got, err, tt.want, tt.err)
		}
	}
}

// The prod template's CompensacionFallida alarm counts, on the log events
// Step Functions documents (testdata/README.md), exactly the one execution
// that entered the CompensacionFallida Fail state: not the one that ended
// in PedidoFallido, nor the other events of either.
func TestCompensationAlarmOnDocumentedLog(t *testing.T) {
	root, err := gobuild.FindUp("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	app, err := synthesized.LoadEnv(filepath.Join(root, "test", "testdata", "snapshots"), "prod")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("testdata", "stepfunctions-execution-log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var events []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		events = append(events, ev)
	}
	const metric = "CompensacionFallida" // constructs/orderflow.MetricCompensacionFallida
	var found bool
	for _, a := range logAlarms(app, events) {
		if !strings.HasSuffix(a.Metric, "/"+metric) {
			continue
		}
		found = true
		if a.Error != "" || a.Datapoints != 1 || !a.Fired {
			t.Errorf("%s (filter %s): %d datapoints, fired %v, error %q; want 1 of the %d events, fired", a.Name, a.Pattern, a.Datapoints, a.Fired, a.Error, len(events))
		}
	}
	if !found {
		t.Errorf("no alarm on a metric filter counts %s in the state machine's log", metric)
	}
}

// With the services ignoring keys, a repeat is allowed only up to the
// order's own uncertain outcomes at that dependency; with keys honoured,
// never.
func TestUnexplainedDuplicates(t *testing.T) {
	dup := func(effects int, uncertain ...string) Duplicate {
		return Duplicate{Dependency: "gateway charges", Order: "P-00001-abcd", Effects: effects, Uncertain: uncertain, Requests: []string{"#1", "#2"}}
	}
	tests := []struct {
		name       string
		ignoreKeys bool
		dups       []Duplicate
		wantBad    int
	}{
		{"no repeats", true, nil, 0},
		{"one repeat, one uncertain outcome", true, []Duplicate{dup(2, "answer lost")}, 0},
		{"one repeat, no uncertain outcome", true, []Duplicate{dup(2)}, 1},
		{"two repeats, one uncertain outcome", true, []Duplicate{dup(3, "answer lost")}, 1},
		{"keys honoured: any repeat", false, []Duplicate{dup(2, "answer lost")}, 1},
	}
	for _, tt := range tests {
		rep := &Report{IgnoreKeys: tt.ignoreKeys, Duplicates: tt.dups}
		bad := rep.unexplained()
		if len(bad) != tt.wantBad {
			t.Errorf("%s: %d unexplained (%v), want %d", tt.name, len(bad), bad, tt.wantBad)
		}
		for _, b := range bad {
			if !strings.Contains(b, "P-00001-abcd") || !strings.Contains(b, "#1") {
				t.Errorf("%s: %q does not name the order and its requests", tt.name, b)
			}
		}
	}
}

// The stock table folds into one line unless a SKU differs.
func TestStockFolded(t *testing.T) {
	ok := []StockLine{{SKU: sku(1), Existencias: initial, WantExistencias: initial, Reservado: 3, WantReservado: 3},
		{SKU: sku(2), Existencias: initial, WantExistencias: initial}, {SKU: badSKU}}
	if line, differ := stockFolded(ok); len(differ) != 0 || !strings.Contains(line, "2 SKUs counted") || !strings.Contains(line, "reservado 3 in all against 3") {
		t.Errorf("all equal: %q, %v", line, differ)
	}
	bad := append([]StockLine(nil), ok...)
	bad[1].Reservado = 1
	if _, differ := stockFolded(bad); len(differ) != 1 || differ[0].SKU != sku(2) {
		t.Errorf("one SKU differs: %v", differ)
	}
}

// A repeated effect is forgiven only for a request the fake's ledger shows
// performed with its answer lost, once per such request: a client's log
// saying it got no answer is not evidence (the claim that should have
// stopped the repeat may be what broke).
func TestRepeatsNeedAnAnswerLostInTheLedger(t *testing.T) {
	const order = "P-00001-abcd"
	tests := []struct {
		name     string
		requests []localaws.Fault // one request each, in order
		wantBad  bool
	}{
		{"one repeat after a reset after the effect", []localaws.Fault{{ResetAfterEffect: true}, {}}, false},
		{"one repeat, every answer delivered", []localaws.Fault{{}, {}}, true},
		{"two repeats, one answer lost", []localaws.Fault{{ResetAfterEffect: true}, {}, {}}, true},
		{"a reset before the effect, then one effect", []localaws.Fault{{Reset: true}, {}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deps := newDependencies(map[string]string{"ALMACEN": "k"}, "", "", localaws.WithoutIdempotency())
			defer deps.Close()
			// What the project's client logged for every attempt: no answer.
			logs, err := os.CreateTemp(t.TempDir(), "functions-*.log")
			if err != nil {
				t.Fatal(err)
			}
			defer logs.Close()
			for i, f := range tt.requests {
				deps.Almacen.Inject(localaws.Rule{Times: 1, Fault: f})
				prepare(deps, order)
				fmt.Fprintf(logs, `{"msg":"attempt failed","idempotency_key":"preparacion:%s","attempt":%d,"error":"almacen: httpdep: dependency unavailable: no answer within the read timeout 2s"}`+"\n", order, i+1)
			}
			w := &World{opts: Options{Logs: logs}, deps: deps}
			r := &Run{w: w, kill: &ConsumerKill{esm: &ESM{Fn: &Function{Entry: "lambdas/preparar-pedido"}}}}
			rep := &Report{IgnoreKeys: true, Duplicates: duplicates(r.ledgers(), []string{order})}
			bad := rep.unexplained()
			if (len(bad) > 0) != tt.wantBad {
				t.Fatalf("unexplained = %q, want some: %v (%d requests in the ledger)", bad, tt.wantBad, len(deps.Almacen.Requests()))
			}
			for _, b := range bad {
				if !strings.Contains(b, order) || !strings.Contains(b, "warehouse preparations") {
					t.Errorf("%q does not name the order and the dependency", b)
				}
			}
		})
	}
}

// prepare sends one preparation request for the order to the warehouse
// fake (key "k").
func prepare(deps *Dependencies, order string) {
	body := `{"pedido_id":"` + order + `","lineas":[{"sku":"FR-001","cantidad":1}]}`
	req, _ := http.NewRequest(http.MethodPost, deps.Almacen.URL()+"/v1/preparaciones", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set(localaws.HeaderIdempotencyKey, "preparacion:"+order)
	req.GetBody = nil // one attempt per request: net/http would resend a reset one
	if resp, err := deps.Almacen.Client().Do(req); err == nil {
		resp.Body.Close()
	}
}

// The consumer kill makes one order's outcome uncertain, the killed one's,
// not its batch's: the others ran one at a time, before it or after it, so
// a repeat of one of them is a broken claim.
func TestKillForgivesOnlyTheKilledOrder(t *testing.T) {
	const killed, other = "P-00001-abcd", "P-00002-abcd"
	deps := newDependencies(map[string]string{"ALMACEN": "k"}, "", "", localaws.WithoutIdempotency())
	defer deps.Close()
	for _, order := range []string{killed, other, killed, other} {
		prepare(deps, order)
	}
	kill := &ConsumerKill{esm: &ESM{Fn: &Function{Entry: "lambdas/preparar-pedido"}}, Pedido: killed, Batch: []string{other, killed}, Done: make(chan struct{})}
	close(kill.Done)
	r := &Run{w: &World{deps: deps}, kill: kill}
	bad := (&Report{IgnoreKeys: true, Duplicates: duplicates(r.ledgers(), []string{killed, other})}).unexplained()
	if len(bad) != 1 || !strings.Contains(bad[0], other) || !strings.Contains(bad[0], "warehouse preparations") {
		t.Errorf("unexplained = %q, want the double preparation of %s only (%s was killed after its effect)", bad, other, killed)
	}
}
