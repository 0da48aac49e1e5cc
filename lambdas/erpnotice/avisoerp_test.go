package erpnotice_test

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
	"github.com/mercadofresco/integration/lambdas/degrade"
	"github.com/mercadofresco/integration/lambdas/erpnotice"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/retry"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

var ddb *localaws.Dynalite

func TestMain(m *testing.M) { localaws.RunWithDynalite(m, &ddb) }

// erp is the fake ERP: it books every notice; an order whose referencia_cobro
// is "desconocida" is refused (422).
func erp(t *testing.T, seed uint64) *localaws.Service {
	return lambdatest.FakeDependency(t, seed, func(r localaws.ServiceRequest) localaws.ServiceResponse {
		var a erpnotice.Aviso
		if json.Unmarshal(r.Body, &a) != nil || r.Path != erpnotice.PathAvisos {
			return localaws.JSON(400, `{"codigo":"solicitud_invalida"}`)
		}
		if a.ReferenciaCobro == "desconocida" {
			return localaws.JSON(422, `{"codigo":"cobro_desconocido","mensaje":"no consta el cobro"}`)
		}
		return localaws.JSON(201, fmt.Sprintf(`{"id":"erp-%s"}`, a.PedidoID))
	})
}

type world struct {
	q    *lambdatest.Queues
	erp  *localaws.Service
	proc *sqsbatch.Processor
	clk  *retry.VirtualClock
	br   *breaker.Breaker
}

func newWorld(t *testing.T, withBreaker bool) *world {
	t.Helper()
	seed := testseed.New(t).Seed
	w := &world{q: lambdatest.NewQueues(t, "cola-mercadofresco-aviso-erp", lambdatest.QueueOptions{MaxReceiveCount: 5}), erp: erp(t, seed)}
	if withBreaker {
		w.clk = retry.NewVirtualClock(time.Now())
		w.br = lambdatest.Breaker(t, localaws.StartRedis(t).Client(t), lambdaapi.NameERP, 5, w.clk.Now)
	}
	client := lambdatest.Client(t, lambdaapi.NameERP, w.erp, lambdatest.DepOptions{Breaker: w.br, Seed: seed})
	var err error
	w.proc, err = erpnotice.NewProcessor(w.q.Settings(), w.q.OnceDeps(t, ddb), client)
	lambdatest.Must(t, err)
	return w
}

func pedido(id, ref string) string {
	return fmt.Sprintf(`{"version":1,"pedido_id":%q,"cliente":{"id":"C-9","email":"eva@example.com","nombre":"Eva"},"lineas":[{"sku":"SKU-7","cantidad":1,"precio_centimos":4820}],"total_centimos":4820,"moneda":"EUR","referencia_cobro":%q,"confirmado_en":"2026-11-27T18:00:00Z","ejecucion":"arn:x"}`, id, ref)
}

func TestNoticesOncePerOrderWithinAndAcrossBatches(t *testing.T) {
	w := newWorld(t, false)
	ctx := lambdatest.Ctx(t, 30*time.Second)
	first := events.SQSEvent{Records: []events.SQSMessage{
		w.q.Record("a", pedido("P-1", "ch_1")),
		w.q.Record("a", pedido("P-1", "ch_1")),
		w.q.Record("b", pedido("P-1", "ch_1")),
		w.q.Record("c", pedido("P-2", "ch_2")),
		w.q.Record("sin-cobro", pedido("P-3", "")),
		w.q.Record("v3", `{"version":"3.0","pedido_id":"P-4"}`),
		w.q.Record("rechazado", pedido("P-5", "desconocida")),
		w.q.Record("sin-pedido", `{"version":1,"referencia_cobro":"ch_6"}`),
	}}
	resp, err := w.proc.Process(ctx, first)
	lambdatest.Must(t, err)
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v", resp.BatchItemFailures)
	}
	// A later batch redelivers P-1 and P-2 (an SNS retry, a replay).
	resp, err = w.proc.Process(ctx, events.SQSEvent{Records: []events.SQSMessage{
		w.q.Record("d", pedido("P-2", "ch_2")), w.q.Record("e", pedido("P-1", "ch_1")),
	}})
	lambdatest.Must(t, err)
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("second batch failures %v", resp.BatchItemFailures)
	}
	if got := lambdatest.Effects(w.erp); got["aviso-erp:P-1"] != 1 || got["aviso-erp:P-2"] != 1 || len(got) != 2 {
		t.Fatalf("ERP bookings %v, want P-1 and P-2 once", got)
	}
	if n := len(w.erp.Requests()); n != 3 {
		t.Fatalf("%d requests reached the ERP, want 3 (P-1, P-2, the refused P-5)", n)
	}
	w.q.RequireDeadLetters(t, map[string]string{
		"sin-cobro":  "referencia_cobro is empty",
		"v3":         "unknown major version 3",
		"rechazado":  "cobro_desconocido",
		"sin-pedido": `missing required keys "pedido_id"`,
	})
}

// The ERP throttles (429 with Retry-After 120) past the attempts: the notice
// is hidden for the ERP's Retry-After, not dead-lettered, and the rest of
// the batch goes on.
func TestThrottledNoticeComesBackAfterRetryAfter(t *testing.T) {
	w := newWorld(t, false)
	w.erp.Inject(localaws.Rule{Match: func(r localaws.ServiceRequest) bool { return r.IdempotencyKey == "aviso-erp:P-LENTO" },
		Fault: localaws.Fault{Status: 429, RetryAfter: "120"}})
	ctx := lambdatest.Ctx(t, 30*time.Second)
	slow := w.q.Send(t, pedido("P-LENTO", "ch_9"), "")
	w.q.Send(t, pedido("P-OK", "ch_8"), "")
	_, resp := w.q.Pump(ctx, t, w.proc, 10)
	if got := lambdatest.Failures(resp); !slices.Equal(got, []string{slow}) {
		t.Fatalf("failures %v, want the throttled notice only", got)
	}
	if in, ok := w.q.VisibleIn(t, slow); !ok || in != 120*time.Second {
		t.Fatalf("throttled notice visible in %s (queued %v), want the ERP's 120 s", in, ok)
	}
	w.erp.ClearFaults()
	w.q.Drain(ctx, t, w.proc, 10, 5)
	if got := lambdatest.Effects(w.erp); got["aviso-erp:P-LENTO"] != 1 || got["aviso-erp:P-OK"] != 1 {
		t.Fatalf("bookings %v", got)
	}
}

// While the ERP's circuit is open the notice waits. A 3-hour outage
// with maxReceiveCount 5 (25 minutes of receives) dead-letters nothing: the
// notices are deferred, then booked once when the ERP recovers.
func TestLongERPOutageDeadLettersNothing(t *testing.T) {
	w := newWorld(t, true)
	w.erp.Inject(localaws.Rule{Fault: localaws.Fault{Status: 503}})
	ctx := lambdatest.Ctx(t, 60*time.Second)
	for i := range 4 {
		w.q.Send(t, pedido(fmt.Sprintf("P-%d", i), fmt.Sprintf("ch_%d", i)), "")
	}
	w.q.Pump(ctx, t, w.proc, 10)
	// The breaker caches the state its last call saw for MaxStaleness
	// (concurrent calls may leave an older "closed" there): past that bound
	// every instance sees the circuit open.
	w.clk.Advance(breaker.DefaultMaxStaleness + 100*time.Millisecond)
	if _, err := w.br.Allow(ctx); err == nil {
		t.Fatalf("the ERP's circuit did not open (breaker %+v)", w.br.Stats())
	}
	before := len(w.erp.Requests())
	for range 36 { // 3 hours in 5-minute receives
		w.q.Clock.Advance(5*time.Minute + time.Second)
		w.q.Pump(ctx, t, w.proc, 10)
	}
	if n := len(w.erp.Requests()); n != before {
		t.Fatalf("%d requests reached the ERP while its circuit was open", n-before)
	}
	w.q.RequireDeadLetters(t, nil)
	copies := 0
	st, err := w.q.Fake.Inspect(w.q.Source)
	lambdatest.Must(t, err)
	for _, m := range st {
		if _, ok := m.MessageAttributes[degrade.AttrDeferrals]; ok {
			copies++
		}
	}
	if len(st) != 4 || copies != 4 {
		t.Fatalf("%d notices queued, %d of them deferred copies; want the 4, all copied on their last receive", len(st), copies)
	}
	w.erp.ClearFaults()
	w.clk.Advance(breaker.DefaultOpenPeriod + time.Second)
	// Time passes for the breaker as for the queue: a probe whose result
	// could not be recorded (a slow private Redis on a loaded machine) holds
	// its lease until the lease ends on the breaker's clock.
	for round := 0; ; round++ {
		st, err := w.q.Fake.Inspect(w.q.Source)
		lambdatest.Must(t, err)
		if len(st) == 0 {
			break
		}
		if round == 40 {
			t.Fatalf("%d notices still queued after %d batches (breaker %+v)", len(st), round, w.br.Stats())
		}
		if ev, _ := w.q.Pump(ctx, t, w.proc, 10); len(ev.Records) == 0 {
			w.q.Clock.Advance(16 * time.Minute)
			w.clk.Advance(16 * time.Minute)
		}
	}
	got := lambdatest.Effects(w.erp)
	for i := range 4 {
		if k := fmt.Sprintf("aviso-erp:P-%d", i); got[k] != 1 {
			t.Errorf("%s booked %d times", k, got[k])
		}
	}
	w.q.RequireDeadLetters(t, nil)
}

// A notice redriven 46 days after its order was confirmed (its record
// expired at 45) is refused before the key is claimed: the ERP is not
// notified twice, and the message is dead-lettered as
// expired-idempotency-window. A duplicate 44 days later is answered from
// the record.
func TestNoticeOlderThanItsWindowIsNotSentTwice(t *testing.T) {
	w := newWorld(t, false)
	ctx := lambdatest.Ctx(t, 30*time.Second)
	body := pedido("P-VIEJO", "ch_9")
	w.q.Send(t, body, "")
	w.q.Drain(ctx, t, w.proc, 10, 3)
	w.q.Clock.Advance(44 * 24 * time.Hour)
	w.q.Send(t, body, "")
	w.q.Drain(ctx, t, w.proc, 10, 3)
	w.q.Clock.Advance(2 * 24 * time.Hour)
	late := w.q.Send(t, body, "")
	w.q.Drain(ctx, t, w.proc, 10, 3)
	if n := lambdatest.Requests(w.erp)["aviso-erp:P-VIEJO"]; n != 1 {
		t.Fatalf("the ERP got %d requests for the order, want 1", n)
	}
	w.q.RequireExpired(t, late)
	if n := len(w.q.DeadLetters(t)); n != 1 {
		t.Fatalf("DLQ holds %d messages, want only the expired one", n)
	}
}
