package preparation_test

import (
	"encoding/json"
	"fmt"
	"github.com/mercadofresco/integration/internal/lambdatest"
	"github.com/mercadofresco/integration/internal/localaws"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/mercadofresco/integration/internal/testseed"
	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/preparation"
	"github.com/mercadofresco/integration/lambdas/retry"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

var ddb *localaws.Dynalite

func TestMain(m *testing.M) { localaws.RunWithDynalite(m, &ddb) }

// warehouse is the fake warehouse: it prepares every order except those in
// refused (422 pedido_cancelado).
func warehouse(t *testing.T, seed uint64, refused ...string) *localaws.Service {
	return lambdatest.FakeDependency(t, seed, func(r localaws.ServiceRequest) localaws.ServiceResponse {
		var s preparation.Solicitud
		if err := json.Unmarshal(r.Body, &s); err != nil || r.Path != preparation.PathPreparaciones {
			return localaws.JSON(400, `{"codigo":"solicitud_invalida"}`)
		}
		if slices.Contains(refused, s.PedidoID) {
			return localaws.JSON(422, `{"codigo":"pedido_cancelado","mensaje":"el pedido fue cancelado"}`)
		}
		return localaws.JSON(201, fmt.Sprintf(`{"id":"prep-%s","pedido_id":%q,"estado":"en_preparacion"}`, s.PedidoID, s.PedidoID))
	})
}

type rig struct {
	q    *lambdatest.Queues
	wh   *localaws.Service
	proc *sqsbatch.Processor
}

func newRig(t *testing.T, br *breaker.Breaker, refused ...string) *rig {
	t.Helper()
	seed := testseed.New(t).Seed
	q := lambdatest.NewQueues(t, "cola-mercadofresco-pedidos", lambdatest.QueueOptions{})
	wh := warehouse(t, seed, refused...)
	client := lambdatest.Client(t, lambdaapi.NameAlmacen, wh, lambdatest.DepOptions{Breaker: br, Seed: seed, ReadTimeout: time.Second})
	proc, err := preparation.NewProcessor(q.Settings(), q.OnceDeps(t, ddb), client)
	lambdatest.Must(t, err)
	return &rig{q: q, wh: wh, proc: proc}
}

func order(id string) string {
	return fmt.Sprintf(`{"version":1,"pedido_id":%q,"cliente":{"id":"C1","email":"ana@example.com"},"lineas":[{"sku":"SKU-1","cantidad":2,"precio_centimos":250}],"total_centimos":500,"moneda":"EUR","referencia_cobro":"ch_1","confirmado_en":%q,"campo_nuevo":true}`, id, lambdatest.ConfirmadoEn)
}

// One batch with everything a real queue delivers: duplicates (same message
// id, and the same order under another id), poison, a refused order and a
// transient failure. Each order is prepared once, failures are reported per
// record, poison and the refusal reach the DLQ with their reasons.
func TestBatchOutcomesPerRecord(t *testing.T) {
	r := newRig(t, nil, "P-CANCELADO")
	r.wh.Inject(localaws.Rule{Match: func(req localaws.ServiceRequest) bool { return req.IdempotencyKey == "preparacion:P-LENTO" }, Fault: localaws.Fault{Status: 503}})
	ctx := lambdatest.Ctx(t, 30*time.Second)
	ev := events.SQSEvent{Records: []events.SQSMessage{
		r.q.Record("m1", order("P1")),
		r.q.Record("m1", order("P1")), // the same message twice in one batch
		r.q.Record("m2", order("P1")), // the same order, another delivery
		r.q.Record("v2", `{"version":2,"pedido_id":"P2","lineas":[{"sku":"A","cantidad":1}]}`),
		r.q.Record("sin-lineas", `{"version":1,"pedido_id":"P3","lineas":[],"confirmado_en":"`+lambdatest.ConfirmadoEn+`"}`),
		r.q.Record("roto", `{"version":1,"pedido_id":`),
		r.q.Record("cancelado", order("P-CANCELADO")),
		r.q.Record("lento", order("P-LENTO")),
		r.q.Record("m3", order("P4")),
	}}
	resp, err := r.proc.Process(ctx, ev)
	lambdatest.Must(t, err)
	if got := lambdatest.Failures(resp); !slices.Equal(got, []string{"lento"}) {
		t.Fatalf("batchItemFailures = %v, want only the transient one", got)
	}
	if got := lambdatest.Effects(r.wh); got["preparacion:P1"] != 1 || got["preparacion:P4"] != 1 || len(got) != 2 {
		t.Fatalf("warehouse preparations %v, want P1 and P4 once each", got)
	}
	r.q.RequireDeadLetters(t, map[string]string{
		"v2":         "unknown major version 2",
		"sin-lineas": "order has no lines",
		"roto":       "malformed JSON",
		"cancelado":  "pedido_cancelado",
	})
	// The same batch again (a redelivery after a lost response): no new
	// preparation, the refusal is replayed from its FALLIDO record.
	r.wh.ClearFaults()
	resp, err = r.proc.Process(ctx, events.SQSEvent{Records: []events.SQSMessage{
		r.q.Record("m4", order("P1")), r.q.Record("cancelado-2", order("P-CANCELADO")), r.q.Record("lento-2", order("P-LENTO")),
	}})
	lambdatest.Must(t, err)
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("second batch failures %v", resp.BatchItemFailures)
	}
	if got := lambdatest.Effects(r.wh); got["preparacion:P1"] != 1 || got["preparacion:P-LENTO"] != 1 || len(got) != 3 {
		t.Fatalf("after the repeat: %v", got)
	}
	if n := lambdatest.Requests(r.wh)["preparacion:P-CANCELADO"]; n != 1 {
		t.Fatalf("the refused order was sent %d times, want once (the repeat is answered by its FALLIDO record)", n)
	}
	if d := r.q.DeadLetters(t)["cancelado-2"]; d.Class != "permanent" {
		t.Fatalf("the repeated refusal was not dead-lettered as permanent: %+v", d)
	}
}

// The warehouse prepares the order and its answer is lost (the Lambda waits
// past its read timeout): the retry sends the same Idempotency-Key and gets
// the first preparation back. One preparation.
func TestAnswerLostAfterPreparation(t *testing.T) {
	r := newRig(t, nil)
	r.wh.Inject(localaws.Rule{Times: 1, Fault: localaws.Fault{HangAfterEffect: true}})
	ctx := lambdatest.Ctx(t, 30*time.Second)
	r.q.Send(t, order("P-TIMEOUT"), "")
	r.q.Drain(ctx, t, r.proc, 10, 5)
	if got := lambdatest.Effects(r.wh); got["preparacion:P-TIMEOUT"] != 1 {
		t.Fatalf("preparations %v, want one", got)
	}
	if n := len(r.wh.Requests()); n != 2 {
		t.Fatalf("%d requests, want 2 (the lost answer and its replay)", n)
	}
	r.q.RequireDeadLetters(t, nil)
}

// Against a private Redis: a warehouse that keeps failing opens its shared
// circuit; from then on orders wait (ChangeMessageVisibility(300), then a
// delayed copy on the last receive) without a request to the warehouse, and
// none reaches the DLQ however long the outage. When the warehouse is back
// every order is prepared once.
func TestWarehouseOutageOrdersWaitNotDeadLettered(t *testing.T) {
	srv := localaws.StartRedis(t)
	clk := retry.NewVirtualClock(time.Now())
	br := lambdatest.Breaker(t, srv.Client(t), lambdaapi.NameAlmacen, 4, clk.Now)
	r := newRig(t, br)
	r.wh.Inject(localaws.Rule{Fault: localaws.Fault{Status: 503}})
	ctx := lambdatest.Ctx(t, 60*time.Second)
	for i := range 3 {
		r.q.Send(t, order(fmt.Sprintf("P-%d", i)), "")
	}
	// First receive: 3 orders x 2 attempts, handled concurrently; the
	// circuit opens at the 4th failure (attempts already allowed finish).
	// An order whose call failed comes back by visibility; one that met
	// the open circuit waits as a delayed copy: all three are queued.
	r.q.Pump(ctx, t, r.proc, 10)
	if st, err := r.q.Fake.Inspect(r.q.Source); err != nil || len(st) != 3 {
		t.Fatalf("first receive: %d orders queued (%v), want 3", len(st), err)
	}
	opened := len(r.wh.Requests())
	if opened < 4 || opened > 6 {
		t.Fatalf("%d requests in the first receive, want 4..6", opened)
	}
	// The breaker caches the state its last call saw for MaxStaleness
	// (concurrent calls may leave an older "closed" there): past that bound
	// every instance sees the circuit open.
	clk.Advance(breaker.DefaultMaxStaleness + 100*time.Millisecond)
	if _, err := br.Allow(ctx); err == nil {
		t.Fatalf("the circuit is not open after the first receive (breaker %+v)", br.Stats())
	}
	// Two hours of outage, 5 minutes per receive: each receive of an order
	// meets the open circuit and re-sends it as a copy delayed 300 s.
	deferredAsCopies := 0
	for range 24 {
		r.q.Clock.Advance(301 * time.Second)
		ev, resp := r.q.Pump(ctx, t, r.proc, 10)
		for _, id := range lambdatest.Failures(resp) {
			if in, ok := r.q.VisibleIn(t, id); !ok || in < 299*time.Second {
				t.Fatalf("order %s comes back in %s (still queued: %v), want 300 s", id, in, ok)
			}
		}
		if len(ev.Records) != len(resp.BatchItemFailures) {
			deferredAsCopies += len(ev.Records) - len(resp.BatchItemFailures)
		}
	}
	if n := len(r.wh.Requests()); n != opened {
		t.Fatalf("the open circuit let %d requests through", n-opened)
	}
	if deferredAsCopies == 0 {
		t.Fatal("no order reached its last receive during a 2-hour outage: the test does not exercise the copy")
	}
	r.q.RequireDeadLetters(t, nil)
	// The warehouse recovers; after the open period one probe goes through,
	// its success closes the circuit and the waiting orders are prepared.
	r.wh.ClearFaults()
	clk.Advance(breaker.DefaultOpenPeriod + time.Second)
	// A call that met the half-open circuit while the probe was in flight
	// leaves "open" in the breaker's cache; the breaker's clock moves past
	// MaxStaleness each round, as time does between receives, so every
	// call reads the shared state again (otherwise the frozen virtual clock
	// keeps that answer for ever, which a loaded machine produced).
	r.q.DrainEach(ctx, t, r.proc, 10, 20, func() { clk.Advance(breaker.DefaultMaxStaleness + 100*time.Millisecond) })
	got := lambdatest.Effects(r.wh)
	for i := range 3 {
		if k := fmt.Sprintf("preparacion:P-%d", i); got[k] != 1 {
			t.Errorf("%s prepared %d times", k, got[k])
		}
	}
	r.q.RequireDeadLetters(t, nil)
}

// The order's record lives as long as the consumer's replay window: a
// duplicate 44 days later is answered from it; one 46 days later (a second
// redrive, a re-publication) would find it expired and prepare the order a
// second time, so it is refused before the key is claimed and
// dead-lettered as expired-idempotency-window. An operator who checked
// that the warehouse has no preparation re-admits it, and then it runs.
func TestOrderOlderThanItsWindowIsNotPreparedTwice(t *testing.T) {
	r := newRig(t, nil)
	ctx := lambdatest.Ctx(t, 30*time.Second)
	r.q.Send(t, order("P-VIEJO"), "")
	r.q.Drain(ctx, t, r.proc, 10, 3)
	requests := func() int { return lambdatest.Requests(r.wh)["preparacion:P-VIEJO"] }
	if requests() != 1 {
		t.Fatalf("%d requests for the first delivery", requests())
	}

	r.q.Clock.Advance(44 * 24 * time.Hour)
	r.q.Send(t, order("P-VIEJO"), "")
	r.q.Drain(ctx, t, r.proc, 10, 3)
	if requests() != 1 || len(r.q.DeadLetters(t)) != 0 {
		t.Fatalf("a duplicate inside the window: %d requests, DLQ %v; want it answered from its record", requests(), r.q.DeadLetters(t))
	}

	r.q.Clock.Advance(2 * 24 * time.Hour) // 46 days after confirmado_en; the record expired at 45
	late := r.q.Send(t, order("P-VIEJO"), "")
	r.q.Drain(ctx, t, r.proc, 10, 3)
	if requests() != 1 {
		t.Fatalf("the warehouse was asked again (%d requests) for an order older than the window", requests())
	}
	r.q.RequireExpired(t, late)

	r.q.SendReadmitted(t, order("P-VIEJO"))
	r.q.Drain(ctx, t, r.proc, 10, 3)
	if requests() != 2 {
		t.Fatalf("a re-admitted order was not sent to the warehouse (%d requests)", requests())
	}
}
