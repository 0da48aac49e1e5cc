package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
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

// The clients' unanswered attempts become uncertain outcomes of their
// order and dependency; answered failures do not.
func TestClientsGaveUp(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "logs-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range []string{
		`{"msg":"attempt failed","idempotency_key":"cobro:P-00001-abcd","attempt":1,"error":"pasarela /v1/cobros: httpdep: dependency unavailable: no answer within the read timeout 6s: Post"}`,
		`{"msg":"attempt failed","idempotency_key":"preparacion:P-00002-abcd","attempt":2,"error":"almacen: context deadline exceeded"}`,
		`{"msg":"attempt failed","idempotency_key":"aviso-erp:P-00003-abcd","attempt":1,"error":"erp: HTTP 503 Service Unavailable"}`,
		`{"msg":"task done","idempotency_key":"cobro:P-00004-abcd","error":"no answer within"}`,
		`not JSON`,
	} {
		fmt.Fprintln(f, l)
	}
	got := clientsGaveUp(f)
	if len(got) != 2 || len(got["P-00001-abcd"]["cobro"]) != 1 || len(got["P-00002-abcd"]["preparacion"]) != 1 {
		t.Errorf("clientsGaveUp = %v; want P-00001-abcd at the gateway and P-00002-abcd at the warehouse only", got)
	}
}
