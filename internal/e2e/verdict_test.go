package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/synthesized"
)

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
	root, err := localaws.FindUp("go.mod")
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
