package main

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercadofresco/integration/lambdas/internal/pgtest"
	"github.com/mercadofresco/integration/lambdas/outbox"
	"github.com/mercadofresco/integration/lambdas/outbox/outboxtest"
)

// testPool returns a pool on a fresh, migrated schema of mf_outbox_test.
func testPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.Pool(t, "mf_outbox_test", "pw_", 4)
	if _, err := outbox.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

func TestCrearPedidoWritesOrderAndEventTogether(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	s := Solicitud{PedidoID: "ped-1", ClienteID: "cli-9", Lineas: []Linea{{SKU: "manzana", Cantidad: 3, PrecioCentimos: 120}, {SKU: "pan", Cantidad: 1, PrecioCentimos: 4460}}}
	r, err := crearPedido(ctx, pool, s)
	if err != nil {
		t.Fatal(err)
	}
	if r.TotalCentimos != 4820 || r.Duplicado || r.EventoID == "" {
		t.Fatalf("respuesta = %+v", r)
	}
	var payload []byte
	var tipo string
	if err := pool.QueryRow(ctx, `SELECT tipo, payload FROM outbox WHERE id = $1::uuid AND agregado_id = 'ped-1'`, r.EventoID).Scan(&tipo, &payload); err != nil {
		t.Fatal(err)
	}
	var ev pedidoCreado
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	if tipo != TipoPedidoCreado || ev.Version != 1 || ev.TotalCentimos != 4820 || ev.Moneda != "EUR" || len(ev.Lineas) != 2 {
		t.Fatalf("event %s %+v", tipo, ev)
	}

	// A retry of the same order: same event id, no second event.
	r2, err := crearPedido(ctx, pool, s)
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Duplicado || r2.EventoID != r.EventoID {
		t.Fatalf("retry = %+v, want duplicate with event %s", r2, r.EventoID)
	}
	var events int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&events)
	if events != 1 {
		t.Fatalf("%d events after a retry, want 1", events)
	}
}

func TestCrearPedidoRollsBackOrderWhenEventFails(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	// Break the outbox so the event INSERT fails inside the transaction.
	if _, err := pool.Exec(ctx, `ALTER TABLE outbox ADD CONSTRAINT roto CHECK (tipo <> 'PedidoCreado')`); err != nil {
		t.Fatal(err)
	}
	_, err := crearPedido(ctx, pool, Solicitud{PedidoID: "ped-2", ClienteID: "c", Lineas: []Linea{{SKU: "x", Cantidad: 1, PrecioCentimos: 1}}})
	if err == nil {
		t.Fatal("want the event insert to fail")
	}
	var orders int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM pedidos`).Scan(&orders)
	if orders != 0 {
		t.Fatal("the order was committed without its event: dual write")
	}
}

func TestCrearPedidoValidates(t *testing.T) {
	pool := testPool(t)
	line := []Linea{{SKU: "x", Cantidad: 1, PrecioCentimos: 1}}
	tests := []struct {
		name string
		s    Solicitud
	}{
		{"no id", Solicitud{ClienteID: "c", Lineas: line}},
		{"no client", Solicitud{PedidoID: "p", Lineas: line}},
		{"no lines", Solicitud{PedidoID: "p", ClienteID: "c"}},
		{"zero quantity", Solicitud{PedidoID: "p", ClienteID: "c", Lineas: []Linea{{SKU: "x", Cantidad: 0}}}},
		{"negative price", Solicitud{PedidoID: "p", ClienteID: "c", Lineas: []Linea{{SKU: "x", Cantidad: 1, PrecioCentimos: -1}}}},
		{"bad currency", Solicitud{PedidoID: "p", ClienteID: "c", Moneda: "EURO", Lineas: line}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := crearPedido(context.Background(), pool, tc.s); !errors.Is(err, ErrSolicitudInvalida) {
				t.Fatalf("err = %v, want ErrSolicitudInvalida", err)
			}
		})
	}
}

// The shop's database role (INSERT and the re-read's columns only) is
// enough for an order, its event and a retried request.
func TestCrearPedidoWithTheWritersRole(t *testing.T) {
	ctx := context.Background()
	db := outboxtest.New(t, "mf_outbox_test")
	s := Solicitud{PedidoID: "ped-7", ClienteID: "cli-1", Lineas: []Linea{{SKU: "pan", Cantidad: 2, PrecioCentimos: 250}}}
	r, err := crearPedido(ctx, db.Writer, s)
	if err != nil {
		t.Fatalf("as the writer's role: %v", err)
	}
	r2, err := crearPedido(ctx, db.Writer, s)
	if err != nil || !r2.Duplicado || r2.EventoID != r.EventoID || r2.TotalCentimos != 500 {
		t.Fatalf("retry as the writer's role = %+v, %v; want the first attempt's answer %+v", r2, err, r)
	}
}
