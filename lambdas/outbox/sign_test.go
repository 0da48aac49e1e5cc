package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/signing"
)

var testSigningKey = signing.Key{ID: "version-test", Secret: []byte("0123456789abcdef0123456789abcdef")}

type staticKeys struct{ err error }

func (k staticKeys) Sign(_ context.Context, c signing.Charge) (string, error) {
	if k.err != nil {
		return "", k.err
	}
	return signing.Sign(testSigningKey, c)
}

// Every PedidoCreado is published with the signature of its charge (over
// its row id, which the starter and cobro read as id_evento); a payload's
// own "firma" never reaches the bus; other types go unsigned; a PedidoCreado
// without what the signature covers is parked; a key that cannot be read
// releases the rows without counting the attempt.
func TestPublisherSignsEveryPedidoCreado(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := migratedPool(t)
	add := func(typ, id, payload string) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := Add(ctx, tx, Event{AggregateID: id, Type: typ, Payload: json.RawMessage(payload)}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	order := func(id string, extra string) string {
		return fmt.Sprintf(`{"version":1,"pedido_id":%q,"total_centimos":4820,"moneda":"EUR","token_tarjeta":"tok_1"%s}`, id, extra)
	}
	add(eventsapi.TypePedidoCreado, "P-1", order("P-1", ""))
	add(eventsapi.TypePedidoCreado, "P-2", order("P-2", `,"firma":"v1.version-test.forjada"`))
	add("StockAjustado", "S-1", `{"version":1,"sku":"S"}`)
	add(eventsapi.TypePedidoCreado, "P-3", `{"version":1,"pedido_id":"P-3","total_centimos":4820}`)

	sink := newFakeSink()
	cfg := testConfig()
	cfg.Signer = ChargeSigner{Keys: staticKeys{}}
	p, err := NewPublisher(pool, sink, cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.PublishOnce(ctx)
	if err != nil || res.Published != 3 || res.Parked != 1 {
		t.Fatalf("round %+v, %v; want 3 published and P-3 parked", res, err)
	}
	ids := outboxIDs(t, pool)
	for id, agg := range ids {
		raw, ok := sink.details[id]
		if agg == "P-3" {
			if ok {
				t.Fatalf("unsignable P-3 was published: %s", raw)
			}
			continue
		}
		var d eventsapi.PedidoCreado
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(raw, `"firma"`); agg == "S-1" && n != 0 || agg != "S-1" && n != 1 {
			t.Fatalf("%s: %d firma members in %s", agg, n, raw)
		}
		if agg == "S-1" {
			continue
		}
		c := signing.Charge{EventID: d.IDEvento, OrderID: d.PedidoID, AmountCents: d.TotalCentimos, Currency: d.Moneda, CardToken: d.TokenTarjeta}
		if d.IDEvento != id || signing.Verify([]signing.Key{testSigningKey}, c, d.Firma) != nil {
			t.Fatalf("%s: detail %s is not signed over its row id %s", agg, raw, id)
		}
	}
	var reason string
	if err := pool.QueryRow(ctx, `SELECT ultimo_error FROM outbox WHERE agregado_id = 'P-3' AND aparcado_en IS NOT NULL`).Scan(&reason); err != nil || !strings.Contains(reason, "cannot be signed") {
		t.Fatalf("P-3 parked with %q, %v", reason, err)
	}

	// The key cannot be read: released, refunded, nothing sent.
	add(eventsapi.TypePedidoCreado, "P-4", order("P-4", ""))
	cfg.Signer = ChargeSigner{Keys: staticKeys{err: errors.New("secrets manager unreachable")}}
	p, _ = NewPublisher(pool, sink, cfg)
	calls := sink.calls
	res, err = p.PublishOnce(ctx)
	if err != nil || res.Failed != 1 || res.Parked != 0 || sink.calls != calls {
		t.Fatalf("round %+v, %v, %d calls; want P-4 released and no call", res, err, sink.calls-calls)
	}
	var attempts int
	if err := pool.QueryRow(ctx, `SELECT intentos FROM outbox WHERE agregado_id = 'P-4'`).Scan(&attempts); err != nil || attempts != 0 {
		t.Fatalf("P-4 intentos %d, %v; want the attempt refunded", attempts, err)
	}
}

func TestEncodeDetailWithSignature(t *testing.T) {
	t.Parallel()
	r := claimedRow{id: "0b0e8c9a-7d4f-4f63-9a53-8d2b8f0c1e11", aggregateID: "P", createdAt: time.Unix(0, 0),
		payload: `{"firma": "de la carga", "pedido_id": "P"}`}
	var got map[string]any
	if err := json.Unmarshal([]byte(encodeDetail(r, "v1.k.mac")), &got); err != nil {
		t.Fatal(err)
	}
	if got[SignatureKey] != "v1.k.mac" || got["pedido_id"] != "P" {
		t.Fatalf("detail %v", got)
	}
	unsigned := encodeDetail(r, "")
	if !strings.Contains(unsigned, `"de la carga"`) {
		t.Fatalf("without a signature the payload is published as is: %s", unsigned)
	}
}
