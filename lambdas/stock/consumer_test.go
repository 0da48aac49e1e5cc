package stock_test

import (
	"fmt"
	"github.com/mercadofresco/integration/internal/lambdatest"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/mercadofresco/integration/internal/testseed"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/stock"
)

func mov(tipo, pedido, sku string, n, seq int64) string {
	owner := fmt.Sprintf(`"pedido_id":%q`, pedido)
	if tipo == "ajuste" {
		owner = fmt.Sprintf(`"referencia":%q`, pedido)
	}
	return fmt.Sprintf(`{"version":1,"tipo":%q,%s,"sku":%q,"cantidad":%d,"secuencia":%d,"emitido_en":"2026-11-27T18:00:00Z"}`, tipo, owner, sku, n, seq)
}

// visibility is the queue's visibility timeout as deployed (6 x 30 s).
const visibility = 180 * time.Second

func newConsumer(t *testing.T, db ...stock.DynamoDBAPI) (*lambdatest.Queues, *stock.Store, *sqsbatch.Processor) {
	t.Helper()
	q := lambdatest.NewQueues(t, "mercadofresco-movimientos-stock", lambdatest.QueueOptions{Fifo: true, Visibility: visibility})
	client := stock.DynamoDBAPI(ddb.Client)
	if len(db) > 0 {
		client = db[0]
	}
	s := newStore(t, client)
	settings := q.Settings()
	settings.VisibilityTimeout, settings.Rand = visibility, testseed.New(t)
	p, err := stock.NewProcessor(settings, stock.Deps{Store: s, DLQ: q.Fake, Visibility: q.Fake, Logger: lambdatest.Logger(t)})
	lambdatest.Must(t, err)
	return q, s, p
}

// Movements of 20 SKUs that fail together (DynamoDB down) do not come back
// together: each group returns, all its movements at once (a FIFO group is
// held while any of them is in flight), after a wait drawn from [90 s,
// 180 s] of the queue's 180 s visibility timeout.
func TestFailedGroupsReturnJittered(t *testing.T) {
	q, _, p := newConsumer(t, &crashingDB{DynamoDBAPI: ddb.Client, crash: func(int) bool { return true }})
	ctx := lambdatest.Ctx(t, 30*time.Second)
	groups := map[string][]string{}
	for i := range 20 {
		sku := fmt.Sprintf("SKU-J%d", i)
		groups[sku] = []string{q.Send(t, mov("ajuste", "INV-J", sku, 5, 1), sku), q.Send(t, mov("reserva", "P-J", sku, 2, 1), sku)}
	}
	for {
		if ev, _ := q.Pump(ctx, t, p, 10); len(ev.Records) == 0 {
			break
		}
	}
	back := map[time.Duration]bool{}
	for sku, ids := range groups {
		var in []time.Duration
		for _, id := range ids {
			d, ok := q.VisibleIn(t, id)
			if !ok {
				t.Fatalf("%s: message %s is gone", sku, id)
			}
			in = append(in, d)
		}
		if in[0] < visibility/2 || in[1] > visibility || in[1]-in[0] > time.Second || in[0]-in[1] > time.Second {
			t.Errorf("%s returns after %v, want both together within [%s, %s]", sku, in, visibility/2, visibility)
		}
		back[in[0].Truncate(time.Second)] = true
	}
	if len(back) < 8 {
		t.Errorf("20 groups come back at %d distinct times: not jittered", len(back))
	}
}

// A FIFO batch of two SKUs' groups: a reservation that would make the stock
// negative goes to the DLQ with the numbers while its group carries on;
// poison goes to the DLQ; duplicates count once.
func TestFIFOBatchNegativeStockToDLQGroupCarriesOn(t *testing.T) {
	q, s, p := newConsumer(t)
	ctx := lambdatest.Ctx(t, 30*time.Second)
	resp, err := p.Process(ctx, events.SQSEvent{Records: []events.SQSMessage{
		q.GroupRecord("a1", mov("ajuste", "INV-1", "SKU-A", 5, 1), "SKU-A"),
		q.GroupRecord("b1", mov("ajuste", "INV-1", "SKU-B", 9, 1), "SKU-B"),
		q.GroupRecord("a2", mov("reserva", "P-1", "SKU-A", 3, 1), "SKU-A"),
		q.GroupRecord("a2", mov("reserva", "P-1", "SKU-A", 3, 1), "SKU-A"), // same message twice
		q.GroupRecord("a3", mov("reserva", "P-2", "SKU-A", 4, 1), "SKU-A"), // 2 left: negative
		q.GroupRecord("a4", mov("reserva", "P-3", "SKU-A", 2, 1), "SKU-A"),
		q.GroupRecord("b2", `{"version":1,"tipo":"robo","sku":"SKU-B","cantidad":1,"secuencia":1}`, "SKU-B"),
		q.GroupRecord("b3", `{"version":2,"tipo":"reserva","pedido_id":"P-9","sku":"SKU-B","cantidad":1,"secuencia":1}`, "SKU-B"),
		q.GroupRecord("b4", mov("reserva", "P-4", "SKU-B", 9, 1), "SKU-B"),
		q.GroupRecord("b5", mov("reserva", "P-4", "SKU-B", 9, 1), "SKU-B"), // redelivered under a new id
	}})
	lambdatest.Must(t, err)
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v", resp.BatchItemFailures)
	}
	requireTotals(t, s, "SKU-A", 5, 5)
	requireTotals(t, s, "SKU-B", 9, 9)
	q.RequireDeadLetters(t, map[string]string{
		"a3": "has 2 units available and the movement takes 4",
		"b2": `tipo "robo" is not reserva, liberacion or ajuste`,
		"b3": "unknown major version 2",
	})
	if d := q.DeadLetters(t)["a3"]; d.Class != "permanent" {
		t.Fatalf("negative stock dead-lettered as %q, want permanent (a data error, not poison or a retry)", d.Class)
	}
}

// A liberacion redriven ahead of its reserva, and the late reserva after it,
// across batches: nothing stays reserved, as in order.
func TestReleaseBeforeItsReservationAcrossBatches(t *testing.T) {
	q, s, p := newConsumer(t)
	ctx := lambdatest.Ctx(t, 30*time.Second)
	for i, batch := range [][]events.SQSMessage{
		{q.GroupRecord("1", mov("ajuste", "INV-1", "SKU-C", 10, 1), "SKU-C"), q.GroupRecord("2", mov("liberacion", "P-7", "SKU-C", 6, 2), "SKU-C")},
		{q.GroupRecord("3", mov("reserva", "P-7", "SKU-C", 6, 1), "SKU-C"), q.GroupRecord("4", mov("reserva", "P-8", "SKU-C", 1, 1), "SKU-C")},
		{q.GroupRecord("5", mov("liberacion", "P-7", "SKU-C", 6, 2), "SKU-C"), q.GroupRecord("6", mov("reserva", "P-8", "SKU-C", 1, 1), "SKU-C")},
	} {
		resp, err := p.Process(ctx, events.SQSEvent{Records: batch})
		lambdatest.Must(t, err)
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("batch %d failures %v", i, resp.BatchItemFailures)
		}
	}
	requireTotals(t, s, "SKU-C", 10, 1)
	q.RequireDeadLetters(t, nil)
}

// Through the FIFO queue itself (internal/localaws: one message of a group in
// flight at a time, order kept): movements of many SKUs drain to the right
// totals, and a consumer that dies after a write (its answer lost) only
// delays its group until the retry finishes the movement.
func TestDrainThroughTheFIFOQueue(t *testing.T) {
	db := &crashingDB{DynamoDBAPI: ddb.Client, crash: func(n int) bool { return n == 7 || n == 40 }}
	q, s, p := newConsumer(t, db)
	ctx := lambdatest.Ctx(t, 60*time.Second)
	want := map[string]int64{}
	for i := range 5 {
		sku := fmt.Sprintf("SKU-%d", i)
		q.Send(t, mov("ajuste", "APERTURA", sku, 50, 1), sku)
		for o := range 6 {
			q.Send(t, mov("reserva", fmt.Sprintf("P-%d", o), sku, int64(o+1), 1), sku)
			want[sku] += int64(o + 1)
		}
		q.Send(t, mov("liberacion", "P-0", sku, 1, 2), sku)
		want[sku]--
	}
	retried := 0
	for range 60 {
		if st, _ := q.Fake.Inspect(q.Source); len(st) == 0 {
			break
		}
		ev, resp := q.Pump(ctx, t, p, 10)
		retried += len(resp.BatchItemFailures)
		if len(ev.Records) == 0 {
			q.Clock.Advance(401 * time.Second)
		}
	}
	if retried == 0 {
		t.Fatal("no record was retried: the crashes did not happen")
	}
	for sku, r := range want {
		requireTotals(t, s, sku, 50, r)
	}
	q.RequireDeadLetters(t, nil)
}

// The stock consumer has no replay window: its line items (the records of
// the movements applied, keyed like reserva:<pedido_id>:<sku>) never
// expire, and a movement is applied only if its secuencia is newer than
// its line's. So a reserva redriven 60 days later (long after any 45-day
// idempotency record, and SQS's 5-minute FIFO deduplication, would have
// forgotten it) takes nothing twice, and an old reserva replayed after its
// liberacion does not take the stock back.
func TestOldReservaReplayedMonthsLaterChangesNothing(t *testing.T) {
	q, s, p := newConsumer(t)
	ctx := lambdatest.Ctx(t, 30*time.Second)
	send := func(body string) {
		q.Send(t, body, "SKU-R")
		q.Drain(ctx, t, p, 10, 5)
	}
	send(mov("ajuste", "INV-R", "SKU-R", 10, 1))
	send(mov("reserva", "P-R", "SKU-R", 3, 1))
	requireTotals(t, s, "SKU-R", 10, 3)
	q.Clock.Advance(60 * 24 * time.Hour)
	send(mov("reserva", "P-R", "SKU-R", 3, 1))
	requireTotals(t, s, "SKU-R", 10, 3)
	send(mov("liberacion", "P-R", "SKU-R", 3, 2))
	requireTotals(t, s, "SKU-R", 10, 0)
	q.Clock.Advance(60 * 24 * time.Hour)
	send(mov("reserva", "P-R", "SKU-R", 3, 1))
	requireTotals(t, s, "SKU-R", 10, 0)
	q.RequireDeadLetters(t, nil)
}
