package sqsconsumer_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mercadofresco/integration/internal/lambdatest"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/internal/testseed"
	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/retry"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
)

var ddb *localaws.Dynalite

func TestMain(m *testing.M) { localaws.RunWithDynalite(m, &ddb) }

// consumer is one of the two HTTP consumers as the tests drive it.
type consumer struct {
	c     *sqsconsumer.HTTPConsumer
	queue string
	opts  lambdatest.QueueOptions
	// refused names the orders the fake dependency refuses (422 code).
	refused func(body map[string]any) bool
	code    string
	// order is a confirmed order's body.
	order func(id string) string
}

var (
	preparation = consumer{c: sqsconsumer.Preparation, queue: "cola-mercadofresco-pedidos", code: "pedido_cancelado",
		refused: func(b map[string]any) bool { return b["pedido_id"] == "P-CANCELADO" },
		order: func(id string) string {
			return fmt.Sprintf(`{"version":1,"pedido_id":%q,"cliente":{"id":"C1","email":"ana@example.com"},"lineas":[{"sku":"SKU-1","cantidad":2,"precio_centimos":250}],"total_centimos":500,"moneda":"EUR","referencia_cobro":"ch_1","confirmado_en":%q,"campo_nuevo":true}`, id, lambdatest.ConfirmadoEn)
		}}
	erpNotice = consumer{c: sqsconsumer.ERPNotice, queue: "cola-mercadofresco-aviso-erp", opts: lambdatest.QueueOptions{MaxReceiveCount: 5}, code: "cobro_desconocido",
		refused: func(b map[string]any) bool { return b["referencia_cobro"] == "desconocida" },
		order:   func(id string) string { return notice(id, "ch_"+id) }}
)

func notice(id, ref string) string {
	return fmt.Sprintf(`{"version":1,"pedido_id":%q,"cliente":{"id":"C-9","email":"eva@example.com","nombre":"Eva"},"lineas":[{"sku":"SKU-7","cantidad":1,"precio_centimos":4820}],"total_centimos":4820,"moneda":"EUR","referencia_cobro":%q,"confirmado_en":"2026-11-27T18:00:00Z","ejecucion":"arn:x"}`, id, ref)
}

type rig struct {
	q    *lambdatest.Queues
	dep  *localaws.Service
	proc *sqsbatch.Processor
	clk  *retry.VirtualClock
	br   *breaker.Breaker
}

// newRig runs c against its fake dependency (which answers every order but
// the refused ones); threshold > 0 puts a breaker on a private Redis.
func newRig(t *testing.T, c consumer, threshold int) *rig {
	t.Helper()
	seed := testseed.New(t).Seed
	r := &rig{q: lambdatest.NewQueues(t, c.queue, c.opts)}
	r.dep = lambdatest.NewDependency(t, func(req localaws.ServiceRequest) localaws.ServiceResponse {
		var b map[string]any
		if json.Unmarshal(req.Body, &b) != nil || req.Path != c.c.Path {
			return localaws.JSON(400, `{"codigo":"solicitud_invalida"}`)
		}
		if c.refused(b) {
			return localaws.JSON(422, fmt.Sprintf(`{"codigo":%q,"mensaje":"refused"}`, c.code))
		}
		return localaws.JSON(201, fmt.Sprintf(`{"id":"dep-%s","estado":"recibido"}`, b["pedido_id"]))
	}, localaws.WithBearer(lambdatest.APIKey)).Service
	if threshold > 0 {
		r.clk = retry.NewVirtualClock(time.Now())
		r.br = lambdatest.Breaker(t, localaws.StartRedis(t).Client(t), c.c.Dependency, threshold, r.clk.Now)
	}
	client := lambdatest.Client(t, c.c.Dependency, r.dep, lambdatest.DepOptions{Breaker: r.br, Seed: seed, ReadTimeout: time.Second})
	var err error
	r.proc, err = c.c.Processor(r.q.Settings(), r.q.OnceDeps(t, ddb), client)
	lambdatest.Must(t, err)
	return r
}

// One batch with everything a real queue delivers: duplicates (same message
// id, and the same order under another id), poison, a refused order and a
// transient failure. Each order is prepared once, failures are reported per
// record, poison and the refusal reach the DLQ with their reasons.
func TestBatchOutcomesPerRecord(t *testing.T) {
	r := newRig(t, preparation, 0)
	order := preparation.order
	r.dep.Inject(localaws.Rule{Match: func(req localaws.ServiceRequest) bool { return req.IdempotencyKey == "preparacion:P-LENTO" }, Fault: localaws.Fault{Status: 503}})
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
	if got := lambdatest.Effects(r.dep); got["preparacion:P1"] != 1 || got["preparacion:P4"] != 1 || len(got) != 2 {
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
	r.dep.ClearFaults()
	resp, err = r.proc.Process(ctx, events.SQSEvent{Records: []events.SQSMessage{
		r.q.Record("m4", order("P1")), r.q.Record("cancelado-2", order("P-CANCELADO")), r.q.Record("lento-2", order("P-LENTO")),
	}})
	lambdatest.Must(t, err)
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("second batch failures %v", resp.BatchItemFailures)
	}
	if got := lambdatest.Effects(r.dep); got["preparacion:P1"] != 1 || got["preparacion:P-LENTO"] != 1 || len(got) != 3 {
		t.Fatalf("after the repeat: %v", got)
	}
	if n := lambdatest.Requests(r.dep)["preparacion:P-CANCELADO"]; n != 1 {
		t.Fatalf("the refused order was sent %d times, want once (the repeat is answered by its FALLIDO record)", n)
	}
	if d := r.q.DeadLetters(t)["cancelado-2"]; d.Class != "permanent" {
		t.Fatalf("the repeated refusal was not dead-lettered as permanent: %+v", d)
	}
}

// The ERP notice's own checks, and its duplicates within and across batches.
func TestNoticesOncePerOrderWithinAndAcrossBatches(t *testing.T) {
	r := newRig(t, erpNotice, 0)
	ctx := lambdatest.Ctx(t, 30*time.Second)
	first := events.SQSEvent{Records: []events.SQSMessage{
		r.q.Record("a", notice("P-1", "ch_1")),
		r.q.Record("a", notice("P-1", "ch_1")),
		r.q.Record("b", notice("P-1", "ch_1")),
		r.q.Record("c", notice("P-2", "ch_2")),
		r.q.Record("sin-cobro", notice("P-3", "")),
		r.q.Record("v3", `{"version":"3.0","pedido_id":"P-4"}`),
		r.q.Record("rechazado", notice("P-5", "desconocida")),
		r.q.Record("sin-pedido", `{"version":1,"referencia_cobro":"ch_6"}`),
	}}
	resp, err := r.proc.Process(ctx, first)
	lambdatest.Must(t, err)
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v", resp.BatchItemFailures)
	}
	// A later batch redelivers P-1 and P-2 (an SNS retry, a replay).
	resp, err = r.proc.Process(ctx, events.SQSEvent{Records: []events.SQSMessage{
		r.q.Record("d", notice("P-2", "ch_2")), r.q.Record("e", notice("P-1", "ch_1")),
	}})
	lambdatest.Must(t, err)
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("second batch failures %v", resp.BatchItemFailures)
	}
	if got := lambdatest.Effects(r.dep); got["aviso-erp:P-1"] != 1 || got["aviso-erp:P-2"] != 1 || len(got) != 2 {
		t.Fatalf("ERP bookings %v, want P-1 and P-2 once", got)
	}
	if n := len(r.dep.Requests()); n != 3 {
		t.Fatalf("%d requests reached the ERP, want 3 (P-1, P-2, the refused P-5)", n)
	}
	r.q.RequireDeadLetters(t, map[string]string{
		"sin-cobro":  "referencia_cobro is empty",
		"v3":         "unknown major version 3",
		"rechazado":  "cobro_desconocido",
		"sin-pedido": `missing required keys "pedido_id"`,
	})
}

// The warehouse prepares the order and its answer is lost (the Lambda waits
// past its read timeout): the retry sends the same Idempotency-Key and gets
// the first preparation back. One preparation.
func TestAnswerLostAfterPreparation(t *testing.T) {
	r := newRig(t, preparation, 0)
	r.dep.Inject(localaws.Rule{Times: 1, Fault: localaws.Fault{HangAfterEffect: true}})
	ctx := lambdatest.Ctx(t, 30*time.Second)
	r.q.Send(t, preparation.order("P-TIMEOUT"), "")
	r.q.Drain(ctx, t, r.proc, 10, 5)
	if got := lambdatest.Effects(r.dep); got["preparacion:P-TIMEOUT"] != 1 {
		t.Fatalf("preparations %v, want one", got)
	}
	if n := len(r.dep.Requests()); n != 2 {
		t.Fatalf("%d requests, want 2 (the lost answer and its replay)", n)
	}
	r.q.RequireDeadLetters(t, nil)
}

// The ERP throttles (429 with Retry-After 120) past the attempts: the notice
// is hidden for at least the ERP's Retry-After (jittered up to twice it),
// not dead-lettered, and the rest of the batch goes on.
func TestThrottledNoticeComesBackAfterRetryAfter(t *testing.T) {
	r := newRig(t, erpNotice, 0)
	r.dep.Inject(localaws.Rule{Match: func(req localaws.ServiceRequest) bool { return req.IdempotencyKey == "aviso-erp:P-LENTO" },
		Fault: localaws.Fault{Status: 429, RetryAfter: "120"}})
	ctx := lambdatest.Ctx(t, 30*time.Second)
	slow := r.q.Send(t, notice("P-LENTO", "ch_9"), "")
	r.q.Send(t, notice("P-OK", "ch_8"), "")
	_, resp := r.q.Pump(ctx, t, r.proc, 10)
	if got := lambdatest.Failures(resp); !slices.Equal(got, []string{slow}) {
		t.Fatalf("failures %v, want the throttled notice only", got)
	}
	if in, ok := r.q.VisibleIn(t, slow); !ok || in < 120*time.Second || in > 240*time.Second {
		t.Fatalf("throttled notice visible in %s (queued %v), want the ERP's 120 s to 240 s", in, ok)
	}
	r.dep.ClearFaults()
	r.q.Drain(ctx, t, r.proc, 10, 5)
	if got := lambdatest.Effects(r.dep); got["aviso-erp:P-LENTO"] != 1 || got["aviso-erp:P-OK"] != 1 {
		t.Fatalf("bookings %v", got)
	}
}

// Against a private Redis: a dependency that keeps failing opens its
// shared circuit; from then on orders wait (ChangeMessageVisibility(300),
// then a delayed copy on the last receive) without a request to it, and
// none reaches the DLQ however long the outage (2 hours for the warehouse,
// 3 for the ERP with maxReceiveCount 5: 25 minutes of receives). When the
// dependency is back every order is sent once.
func TestOutageOrdersWaitNotDeadLettered(t *testing.T) {
	for _, tc := range []struct {
		consumer
		threshold, orders, receives int
		allCopied                   bool // every order waits as a copy at the end
	}{
		{preparation, 4, 3, 24, false},
		{erpNotice, 5, 4, 36, true},
	} {
		t.Run(tc.c.Dependency, func(t *testing.T) {
			r := newRig(t, tc.consumer, tc.threshold)
			r.dep.Inject(localaws.Rule{Fault: localaws.Fault{Status: 503}})
			ctx := lambdatest.Ctx(t, 60*time.Second)
			for i := range tc.orders {
				r.q.Send(t, tc.order(fmt.Sprintf("P-%d", i)), "")
			}
			// First receive: every order x 2 attempts, handled concurrently;
			// the circuit opens at the threshold (attempts already allowed
			// finish). An order whose call failed comes back by visibility;
			// one that met the open circuit waits as a delayed copy: all are
			// queued.
			r.q.Pump(ctx, t, r.proc, 10)
			if st, err := r.q.Fake.Inspect(r.q.Source); err != nil || len(st) != tc.orders {
				t.Fatalf("first receive: %d orders queued (%v), want %d", len(st), err, tc.orders)
			}
			opened := len(r.dep.Requests())
			if opened < tc.threshold || opened > 2*tc.orders {
				t.Fatalf("%d requests in the first receive, want %d..%d", opened, tc.threshold, 2*tc.orders)
			}
			// The breaker caches the state its last call saw for MaxStaleness
			// (concurrent calls may leave an older "closed" there): past that
			// bound every instance sees the circuit open.
			r.clk.Advance(breaker.DefaultMaxStaleness + 100*time.Millisecond)
			if _, err := r.br.Allow(ctx); err == nil {
				t.Fatalf("the circuit is not open after the first receive (breaker %+v)", r.br.Stats())
			}
			// The outage, 5 minutes per receive: each receive of an order meets
			// the open circuit; a failure waits 150 to 300 s by visibility, the
			// last receive re-sends it as a copy delayed as long.
			deferredAsCopies := 0
			for range tc.receives {
				r.q.Clock.Advance(301 * time.Second)
				ev, resp := r.q.Pump(ctx, t, r.proc, 10)
				for _, id := range lambdatest.Failures(resp) {
					if in, ok := r.q.VisibleIn(t, id); !ok || in < 150*time.Second {
						t.Fatalf("order %s comes back in %s (still queued: %v), want 150 to 300 s", id, in, ok)
					}
				}
				deferredAsCopies += len(ev.Records) - len(resp.BatchItemFailures)
			}
			if n := len(r.dep.Requests()); n != opened {
				t.Fatalf("the open circuit let %d requests through", n-opened)
			}
			if deferredAsCopies == 0 {
				t.Fatal("no order reached its last receive during the outage: the test does not exercise the copy")
			}
			r.q.RequireDeadLetters(t, nil)
			st, err := r.q.Fake.Inspect(r.q.Source)
			lambdatest.Must(t, err)
			copies := 0
			for _, m := range st {
				if _, ok := m.MessageAttributes[sqsconsumer.AttrDeferrals]; ok {
					copies++
				}
			}
			if len(st) != tc.orders || tc.allCopied && copies != tc.orders {
				t.Fatalf("%d orders queued, %d of them deferred copies; want the %d, copied on their last receive", len(st), copies, tc.orders)
			}
			// The dependency recovers; after the open period one probe goes
			// through, its success closes the circuit and the waiting orders
			// are sent. A call that met the half-open circuit while the probe
			// was in flight leaves "open" in the breaker's cache; the breaker's
			// clock moves past MaxStaleness each round, as time does between
			// receives, so every call reads the shared state again (otherwise
			// the frozen virtual clock keeps that answer for ever, which a
			// loaded machine produced).
			r.dep.ClearFaults()
			r.clk.Advance(breaker.DefaultOpenPeriod + time.Second)
			for round := 0; ; round++ {
				st, err := r.q.Fake.Inspect(r.q.Source)
				lambdatest.Must(t, err)
				if len(st) == 0 {
					break
				}
				if round == 40 {
					t.Fatalf("%d orders still queued after %d batches (breaker %+v)", len(st), round, r.br.Stats())
				}
				r.clk.Advance(breaker.DefaultMaxStaleness + 100*time.Millisecond)
				if ev, _ := r.q.Pump(ctx, t, r.proc, 10); len(ev.Records) == 0 {
					r.q.Clock.Advance(16 * time.Minute)
					r.clk.Advance(16 * time.Minute)
				}
			}
			got := lambdatest.Effects(r.dep)
			for i := range tc.orders {
				if k, _ := tc.c.Key(fmt.Sprintf("P-%d", i)); got[k] != 1 {
					t.Errorf("%s sent %d times", k, got[k])
				}
			}
			r.q.RequireDeadLetters(t, nil)
		})
	}
}

// The order's record lives as long as the consumer's replay window: a
// duplicate 44 days later is answered from it; one 46 days later (a second
// redrive, a re-publication) would find it expired and call the dependency
// a second time, so it is refused before the key is claimed and
// dead-lettered as expired-idempotency-window. An operator who checked
// that the dependency has no trace of it re-admits it, and then it runs.
func TestOrderOlderThanItsWindowIsNotSentTwice(t *testing.T) {
	for _, c := range []consumer{preparation, erpNotice} {
		t.Run(c.c.Dependency, func(t *testing.T) {
			r := newRig(t, c, 0)
			ctx := lambdatest.Ctx(t, 30*time.Second)
			key, _ := c.c.Key("P-VIEJO")
			requests := func() int { return lambdatest.Requests(r.dep)[key] }
			r.q.Send(t, c.order("P-VIEJO"), "")
			r.q.Drain(ctx, t, r.proc, 10, 3)
			if requests() != 1 {
				t.Fatalf("%d requests for the first delivery", requests())
			}
			r.q.Clock.Advance(44 * 24 * time.Hour)
			r.q.Send(t, c.order("P-VIEJO"), "")
			r.q.Drain(ctx, t, r.proc, 10, 3)
			if requests() != 1 || len(r.q.DeadLetters(t)) != 0 {
				t.Fatalf("a duplicate inside the window: %d requests, DLQ %v; want it answered from its record", requests(), r.q.DeadLetters(t))
			}
			r.q.Clock.Advance(2 * 24 * time.Hour) // 46 days after confirmado_en; the record expired at 45
			late := r.q.Send(t, c.order("P-VIEJO"), "")
			r.q.Drain(ctx, t, r.proc, 10, 3)
			if requests() != 1 {
				t.Fatalf("the dependency was asked again (%d requests) for an order older than the window", requests())
			}
			r.q.RequireExpired(t, late)
			if n := len(r.q.DeadLetters(t)); n != 1 {
				t.Fatalf("DLQ holds %d messages, want only the expired one", n)
			}
			r.q.SendReadmitted(t, c.order("P-VIEJO"))
			r.q.Drain(ctx, t, r.proc, 10, 3)
			if requests() != 2 {
				t.Fatalf("a re-admitted order was not sent (%d requests)", requests())
			}
		})
	}
}

// The deployed HTTP consumers, built as their mains build them
// (sqsconsumer.Start with FromRuntime) from their environment in the prod
// template; only <PREFIX>_URL (the dependency) and the breaker cache's
// address are pointed at local servers. A confirmed order reaches the
// dependency as one POST with its Idempotency-Key and the API key of
// <PREFIX>_SECRET_ARN, after a claim on the template's idempotency table
// and a look at its breaker in the cache; a poison message reaches the DLQ
// of DLQ_URLS through SQS. Replacing the dependency's, DynamoDB's, the
// cache's or SQS's client with one that does nothing fails it.
func TestDeployedHTTPConsumerReachesItsDependency(t *testing.T) {
	for _, tc := range []struct {
		c               *sqsconsumer.HTTPConsumer
		function, queue string
		key             func(string) (string, error)
	}{
		{sqsconsumer.Preparation, "mf-preparar-pedido", "cola-mercadofresco-pedidos", idempotency.KeyPreparacion},
		{sqsconsumer.ERPNotice, "mf-aviso-erp", "cola-mercadofresco-aviso-erp", idempotency.KeyAvisoERP},
	} {
		t.Run(tc.function, func(t *testing.T) {
			dep := lambdatest.NewDependency(t, func(localaws.ServiceRequest) localaws.ServiceResponse {
				return localaws.JSON(http.StatusCreated, `{"id":"dep-1","estado":"recibida"}`)
			})
			c := lambdatest.StartConsumer(t, "MercadoFresco-Messaging-prod", tc.function, tc.c.FromRuntime,
				map[string]*lambdatest.Dependency{tc.c.Prefix + "_URL": dep})
			c.Process(t, tc.queue, lambdatest.PedidoConfirmado("P-71"), "no es JSON")

			dep.WantPost(t, tc.c.Path, "P-71", c.AWS.Secret(c.Env[tc.c.Prefix+"_SECRET_ARN"]))
			c.WantClaim(t, tc.key, "P-71")
			c.WantDeadLetter(t, "no es JSON")
			c.Cache.WantReached(t)
		})
	}
}
