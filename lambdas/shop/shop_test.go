package shop

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/mercadofresco/integration/internal/lambdatest"
	"github.com/mercadofresco/integration/internal/localaws"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/mercadofresco/integration/internal/schematest"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/outbox"
)

// testPool returns a pool on a fresh, migrated schema of mf_outbox_test.
func testPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := localaws.SchemaPool(t, "mf_outbox_test", "pw_", 4)
	if _, err := outbox.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

func TestCrearPedidoWritesOrderAndEventTogether(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	s := Solicitud{PedidoID: "ped-1", ClienteID: "cli-9", ClienteEmail: "ana@example.com", TokenTarjeta: "tok_1", Lineas: []Linea{{SKU: "manzana", Cantidad: 3, PrecioCentimos: 120}, {SKU: "pan", Cantidad: 1, PrecioCentimos: 4460}}}
	r, err := CrearPedido(ctx, pool, s)
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
	schematest.Validate(t, eventsapi.TypePedidoCreado, eventsapi.PedidoCreadoVersion, payload)
	var ev pedidoCreado
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	if tipo != TipoPedidoCreado || ev.Version != 1 || ev.TotalCentimos != 4820 || ev.Moneda != "EUR" || len(ev.Lineas) != 2 ||
		ev.Cliente.Email != "ana@example.com" || ev.TokenTarjeta != "tok_1" {
		t.Fatalf("event %s %+v", tipo, ev)
	}

	// A retry of the same order: same event id, no second event.
	r2, err := CrearPedido(ctx, pool, s)
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
	_, err := CrearPedido(ctx, pool, Solicitud{PedidoID: "ped-2", ClienteID: "c", ClienteEmail: "c@example.com", TokenTarjeta: "tok", Lineas: []Linea{{SKU: "x", Cantidad: 1, PrecioCentimos: 1}}})
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
		{"lower-case currency", Solicitud{PedidoID: "p", ClienteID: "c", Moneda: "eur", ClienteEmail: "c@example.com", TokenTarjeta: "t", Lineas: line}},
		{"no e-mail", Solicitud{PedidoID: "p", ClienteID: "c", TokenTarjeta: "t", Lineas: line}},
		{"no card token", Solicitud{PedidoID: "p", ClienteID: "c", ClienteEmail: "c@example.com", Lineas: line}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := CrearPedido(context.Background(), pool, tc.s); !errors.Is(err, ErrSolicitudInvalida) {
				t.Fatalf("err = %v, want ErrSolicitudInvalida", err)
			}
		})
	}
}

// The shop's database role (INSERT and the re-read's columns only) is
// enough for an order, its event and a retried request.
func TestCrearPedidoWithTheWritersRole(t *testing.T) {
	ctx := context.Background()
	db := lambdatest.NewOutboxDatabase(t, "mf_outbox_test")
	s := Solicitud{PedidoID: "ped-7", ClienteID: "cli-1", ClienteEmail: "cli-1@example.com", TokenTarjeta: "tok_7", Lineas: []Linea{{SKU: "pan", Cantidad: 2, PrecioCentimos: 250}}}
	r, err := CrearPedido(ctx, db.Writer, s)
	if err != nil {
		t.Fatalf("as the writer's role: %v", err)
	}
	r2, err := CrearPedido(ctx, db.Writer, s)
	if err != nil || !r2.Duplicado || r2.EventoID != r.EventoID || r2.TotalCentimos != 500 {
		t.Fatalf("retry as the writer's role = %+v, %v; want the first attempt's answer %+v", r2, err, r)
	}
	// A payment retry, twice, needs nothing more than the writer's grants.
	s.Intento = 2
	for range 2 {
		if _, err := CrearPedido(ctx, db.Writer, s); err != nil {
			t.Fatalf("payment retry as the writer's role: %v", err)
		}
	}
}

// A payment retry writes one more PedidoCreado for the same order, carrying
// its attempt, once per attempt; it needs the order and the same total.
func TestPaymentRetryWritesOneEventPerAttempt(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	s := Solicitud{PedidoID: "ped-7", ClienteID: "cli-9", ClienteEmail: "ana@example.com", TokenTarjeta: "tok_1", Lineas: []Linea{{SKU: "pan", Cantidad: 2, PrecioCentimos: 2410}}}
	first, err := CrearPedido(ctx, pool, s)
	if err != nil {
		t.Fatal(err)
	}
	s.Intento = 2
	r, err := CrearPedido(ctx, pool, s)
	if err != nil {
		t.Fatal(err)
	}
	if r.Duplicado || r.EventoID != RetryEventID("ped-7", 2).String() || r.EventoID == first.EventoID {
		t.Fatalf("retry = %+v", r)
	}
	again, err := CrearPedido(ctx, pool, s)
	if err != nil || !again.Duplicado || again.EventoID != r.EventoID {
		t.Fatalf("same retry twice = %+v, %v", again, err)
	}
	var payload []byte
	if err := pool.QueryRow(ctx, `SELECT payload FROM outbox WHERE id = $1::uuid`, r.EventoID).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	var ev pedidoCreado
	if err := json.Unmarshal(payload, &ev); err != nil || ev.Intento != 2 || ev.PedidoID != "ped-7" {
		t.Fatalf("retry event %s (%v)", payload, err)
	}
	var events int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE agregado_id = 'ped-7'`).Scan(&events)
	if events != 2 {
		t.Fatalf("%d events for the order, want 2 (the order and one retry)", events)
	}

	unknown := s
	unknown.PedidoID = "ped-nope"
	if _, err := CrearPedido(ctx, pool, unknown); !errors.Is(err, ErrSolicitudInvalida) {
		t.Fatalf("retry of an unknown order = %v", err)
	}
	other := s
	other.Lineas = []Linea{{SKU: "pan", Cantidad: 3, PrecioCentimos: 2410}}
	if _, err := CrearPedido(ctx, pool, other); !errors.Is(err, ErrSolicitudInvalida) {
		t.Fatalf("retry with another total = %v", err)
	}
}
