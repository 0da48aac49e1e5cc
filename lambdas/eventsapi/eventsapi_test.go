package eventsapi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mercadofresco/integration/lambdas/eventsapi"
)

func confirmado() eventsapi.PedidoConfirmado {
	return eventsapi.PedidoConfirmado{
		Version: 1, PedidoID: "P-1",
		Cliente:         eventsapi.Cliente{ID: "C-1", Email: "ana@example.com", Nombre: "Ana"},
		Lineas:          []eventsapi.Linea{{SKU: "SKU-1", Cantidad: 2, PrecioCentimos: 2410}},
		TotalCentimos:   4820,
		Moneda:          "EUR",
		ReferenciaCobro: "ch_1",
		ConfirmadoEn:    "2026-12-01T10:00:00Z",
	}
}

// The JSON names are the contract with the state machine and the consumers:
// a rename here must fail a test.
func TestPedidoConfirmadoWireNames(t *testing.T) {
	b, err := json.Marshal(confirmado())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"version", "pedido_id", "cliente", "lineas", "total_centimos", "moneda", "referencia_cobro", "confirmado_en", "ejecucion"} {
		if _, ok := m[k]; !ok {
			t.Errorf("PedidoConfirmado JSON has no %q: %s", k, b)
		}
	}
	cl := m["cliente"].(map[string]any)
	for _, k := range []string{"id", "email", "nombre"} {
		if _, ok := cl[k]; !ok {
			t.Errorf("cliente has no %q", k)
		}
	}
	l := m["lineas"].([]any)[0].(map[string]any)
	for _, k := range []string{"sku", "cantidad", "precio_centimos"} {
		if _, ok := l[k]; !ok {
			t.Errorf("linea has no %q", k)
		}
	}
}

func TestParsePedidoConfirmado(t *testing.T) {
	good, _ := json.Marshal(confirmado())
	tests := []struct {
		name string
		body string
		want error
		msg  string
	}{
		{"valid", string(good), nil, ""},
		{"unknown fields ignored", strings.Replace(string(good), `"version":1`, `"version":1,"nuevo":{"x":1}`, 1), nil, ""},
		{"version 2 is unsupported", strings.Replace(string(good), `"version":1`, `"version":2`, 1), eventsapi.ErrUnsupportedVersion, "version 2"},
		{"not json", `{`, eventsapi.ErrInvalid, "PedidoConfirmado"},
		{"every problem listed", `{"version":1,"moneda":"eur"}`, eventsapi.ErrInvalid, "pedido_id is empty; cliente.id is empty; lineas is empty; total_centimos 0 is not positive; moneda \"eur\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := eventsapi.Parse[eventsapi.PedidoConfirmado]([]byte(tc.body))
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.msg)
			}
		})
	}
}

func TestParsePedidoCreado(t *testing.T) {
	body := `{"id_evento":"e1","version":1,"pedido_id":"P-1","cliente_id":"C-1","cliente":{"id":"C-1","email":"a@b.c","nombre":"A"},
		"total_centimos":4820,"moneda":"EUR","lineas":[{"sku":"S","cantidad":2,"precio_centimos":2410}],"token_tarjeta":"tok"}`
	p, err := eventsapi.Parse[eventsapi.PedidoCreado]([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if p.IDEvento != "e1" || p.Cliente.Email != "a@b.c" || p.Lineas[0].PrecioCentimos != 2410 {
		t.Fatalf("decoded %+v", p)
	}
	_, err = eventsapi.Parse[eventsapi.PedidoCreado]([]byte(`{"version":1,"pedido_id":"P-1","cliente_id":"C-1","total_centimos":1,"moneda":"EUR","lineas":[{"sku":"S","cantidad":1}]}`))
	if !errors.Is(err, eventsapi.ErrInvalid) || !strings.Contains(err.Error(), "token_tarjeta") || !strings.Contains(err.Error(), "cliente.email") {
		t.Fatalf("err = %v", err)
	}
}

func TestMovimientoStock(t *testing.T) {
	tests := []struct {
		name  string
		m     eventsapi.MovimientoStock
		dedup string
		want  error
	}{
		{"reserva", eventsapi.MovimientoStock{Version: 1, Tipo: eventsapi.Reserva, PedidoID: "P-1", SKU: "SKU-9", Cantidad: 2, Secuencia: eventsapi.SecuenciaReserva}, "reserva:P-1:SKU-9", nil},
		{"liberacion", eventsapi.MovimientoStock{Version: 1, Tipo: eventsapi.Liberacion, PedidoID: "P-1", SKU: "SKU-9", Cantidad: 2, Secuencia: eventsapi.SecuenciaLiberacion}, "liberacion:P-1:SKU-9", nil},
		{"ajuste negative", eventsapi.MovimientoStock{Version: 1, Tipo: eventsapi.Ajuste, Referencia: "INV-7", SKU: "SKU-9", Cantidad: -3, Secuencia: 1700000000000}, "ajuste:INV-7:SKU-9", nil},
		{"reserva without order", eventsapi.MovimientoStock{Version: 1, Tipo: eventsapi.Reserva, SKU: "S", Cantidad: 1, Secuencia: 1}, "reserva::S", eventsapi.ErrInvalid},
		{"unknown tipo", eventsapi.MovimientoStock{Version: 1, Tipo: "robo", SKU: "S", Cantidad: 1, Secuencia: 1}, "robo::S", eventsapi.ErrInvalid},
		{"version 2", eventsapi.MovimientoStock{Version: 2, Tipo: eventsapi.Reserva, PedidoID: "P", SKU: "S", Cantidad: 1, Secuencia: 1}, "reserva:P:S", eventsapi.ErrUnsupportedVersion},
		{"colon in sku", eventsapi.MovimientoStock{Version: 1, Tipo: eventsapi.Reserva, PedidoID: "P-1", SKU: "SKU:9", Cantidad: 1, Secuencia: 1}, "reserva:P-1:SKU:9", eventsapi.ErrInvalid},
		{"colon in order", eventsapi.MovimientoStock{Version: 1, Tipo: eventsapi.Liberacion, PedidoID: "P-1:SKU", SKU: "9", Cantidad: 1, Secuencia: 2}, "liberacion:P-1:SKU:9", eventsapi.ErrInvalid},
		{"blank around referencia", eventsapi.MovimientoStock{Version: 1, Tipo: eventsapi.Ajuste, Referencia: "INV-7 ", SKU: "S", Cantidad: 1, Secuencia: 1}, "ajuste:INV-7 :S", eventsapi.ErrInvalid},
		{"dedup id too long", eventsapi.MovimientoStock{Version: 1, Tipo: eventsapi.Reserva, PedidoID: strings.Repeat("p", 120), SKU: "S", Cantidad: 1, Secuencia: 1}, "reserva:" + strings.Repeat("p", 120) + ":S", eventsapi.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.m.DeduplicationID(); got != tc.dedup {
				t.Errorf("DeduplicationID = %q, want %q", got, tc.dedup)
			}
			if tc.m.GroupID() != tc.m.SKU {
				t.Errorf("GroupID = %q, want the SKU", tc.m.GroupID())
			}
			err := tc.m.Validate()
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Validate = %v, want %v", err, tc.want)
			}
			b, _ := json.Marshal(tc.m)
			back, perr := eventsapi.Parse[eventsapi.MovimientoStock](b)
			if !reflect.DeepEqual(back, tc.m) || !errors.Is(perr, tc.want) {
				t.Fatalf("round trip: %+v, %v", back, perr)
			}
		})
	}
}

func TestCarritoAbandonado(t *testing.T) {
	c := eventsapi.CarritoAbandonado{Version: 1, IDEvento: "ev", CarritoID: "K"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.CarritoID = ""
	if err := c.Validate(); !errors.Is(err, eventsapi.ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
}

// The starter's workflow input: the detail's fields kept as published, and
// every line once as a reserva and once as a liberacion, in batches of at
// most 10 entries with ids unique in their batch, the line's SKU as group
// and <tipo>:<pedido_id>:<sku> as deduplication id.
func TestWorkflowInputBatchesEveryLine(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		lines int
		sizes []int
	}{{1, []int{1}}, {10, []int{10}}, {11, []int{10, 1}}, {25, []int{10, 10, 5}}} {
		p := eventsapi.PedidoCreado{Version: 1, PedidoID: "P-1", Firma: "v1.k.mac"}
		for i := range tc.lines {
			p.Lineas = append(p.Lineas, eventsapi.Linea{SKU: fmt.Sprintf("SKU-%02d", i), Cantidad: int64(i + 1)})
		}
		detail, _ := json.Marshal(p)
		detail = append(detail[:len(detail)-1], `,"extra":{"a":[1, 2]}}`...)
		raw, err := eventsapi.WorkflowInput(detail, p, at)
		if err != nil {
			t.Fatal(err)
		}
		var in map[string]json.RawMessage
		if err := json.Unmarshal(raw, &in); err != nil {
			t.Fatal(err)
		}
		if string(in["extra"]) != `{"a":[1,2]}` || string(in["firma"]) != `"v1.k.mac"` {
			t.Errorf("%d lines: the detail's fields changed: %s %s", tc.lines, in["extra"], in["firma"])
		}
		for key, tipo := range map[string]eventsapi.TipoMovimiento{eventsapi.InputReservas: eventsapi.Reserva, eventsapi.InputLiberaciones: eventsapi.Liberacion} {
			var batches [][]eventsapi.BatchEntry
			if err := json.Unmarshal(in[key], &batches); err != nil {
				t.Fatal(err)
			}
			var sizes []int
			seen := map[string]bool{}
			for _, b := range batches {
				sizes = append(sizes, len(b))
				ids := map[string]bool{}
				for _, e := range b {
					m, err := eventsapi.Parse[eventsapi.MovimientoStock]([]byte(e.Body))
					if err != nil || m.Tipo != tipo || ids[e.ID] || e.GroupID != m.SKU || e.DeduplicationID != string(tipo)+":P-1:"+m.SKU || m.EmitidoEn != "2026-12-01T10:00:00Z" {
						t.Fatalf("%d lines, %s: entry %+v (%v)", tc.lines, key, e, err)
					}
					ids[e.ID], seen[m.SKU] = true, true
				}
			}
			if !reflect.DeepEqual(sizes, tc.sizes) || len(seen) != tc.lines {
				t.Errorf("%d lines, %s: batches of %v covering %d SKUs, want %v", tc.lines, key, sizes, len(seen), tc.sizes)
			}
		}
	}
}
