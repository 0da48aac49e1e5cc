package sqsbatch_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/retry"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// poller plays Lambda's SQS event source mapping with ReportBatchItemFailures:
// receive up to 10, invoke, delete what the response does not list (nothing
// when the invocation returns an error).
type poller struct {
	t    *testing.T
	fake *localaws.SQS
	url  string
	p    *sqsbatch.Processor
}

// drain polls until a receive comes back empty and returns the number of
// invocations.
func (pl *poller) drain() int {
	pl.t.Helper()
	ctx := context.Background()
	n := 0
	for {
		ev, err := pl.fake.Receive(ctx, pl.url, pl.fake.ARN(pl.url), 10)
		if err != nil {
			pl.t.Fatal(err)
		}
		if len(ev.Records) == 0 {
			return n
		}
		n++
		resp, err := pl.p.Process(ctx, ev)
		if err != nil {
			continue // the whole batch comes back
		}
		if err := pl.fake.Settle(ctx, pl.url, ev, resp, true); err != nil {
			pl.t.Fatal(err)
		}
	}
}

// TestEndToEndStandardQueue runs the DLQ runbook's cases through a source queue
// with a redrive policy (maxReceiveCount 4, visibility 400 s): poison goes to
// the DLQ after ONE receive with its reason; a dependency that never recovers
// exhausts maxReceiveCount and the queue's own redrive moves the message; a
// flaky dependency succeeds on the third receive; good orders are processed once.
func TestEndToEndStandardQueue(t *testing.T) {
	clk := retry.NewVirtualClock(time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC))
	f := localaws.NewSQS(localaws.SQSConfig{Now: clk.Now})
	dlq, err := f.CreateQueue("mercadofresco-pedidos-fallidos", localaws.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	const visibility = 400 * time.Second
	src, err := f.CreateQueue("cola-mercadofresco-pedidos", localaws.QueueConfig{
		VisibilityTimeout: visibility,
		Redrive:           &localaws.RedrivePolicy{DeadLetterTargetARN: f.ARN(dlq), MaxReceiveCount: 4},
	})
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	seen := map[string][]int{} // pedido -> receive counts the handler saw
	done := map[string]int{}
	p := mustNew(t, sqsbatch.Config{
		Logger: discard(), DLQ: f, DLQRoutes: lambdaapi.DLQRoutes{"cola-mercadofresco-pedidos": dlq}, ConsumerVersion: "preparar-pedido@e2e",
		Envelope: sqsbatch.EnvelopeRules{RequiredKeys: []string{"pedido_id"}},
		Handler: sqsbatch.JSON(func(_ context.Context, rec *sqsbatch.Record, ped *pedido) error {
			mu.Lock()
			defer mu.Unlock()
			seen[ped.PedidoID] = append(seen[ped.PedidoID], rec.ReceiveCount)
			switch {
			case ped.PedidoID == "P-CAIDA":
				return errGateway // the warehouse API never answers
			case ped.PedidoID == "P-INESTABLE" && rec.ReceiveCount < 3:
				return errGateway
			}
			done[ped.PedidoID]++
			return nil
		}),
	})
	ctx := context.Background()
	bodies := map[string]string{
		"P1": order("P1"), "P2": order("P2"), "P3": order("P3"),
		"P-CAIDA": order("P-CAIDA"), "P-INESTABLE": order("P-INESTABLE"),
		"v2-a": `{"version":2,"pedido_id":"P9"}`, "v2-b": `{"version":2,"pedido_id":"P10"}`,
		"roto": `{"version":1,"pedido_id":`,
	}
	ids := map[string]string{}
	for name, b := range bodies {
		out, err := f.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &src, MessageBody: &b, MessageAttributes: map[string]types.MessageAttributeValue{"tipo": sqsbatch.StringAttribute("PedidoConfirmado")}})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = aws.ToString(out.MessageId)
	}

	pl := &poller{t: t, fake: f, url: src, p: p}
	for round := 1; round <= 6; round++ {
		pl.drain()
		if round == 1 {
			st, _ := f.Inspect(dlq)
			if len(st) != 3 {
				t.Fatalf("after the first receive the DLQ has %d messages, want the 3 poison ones", len(st))
			}
			attrs, _ := f.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &src})
			if n := attrs.Attributes["ApproximateNumberOfMessagesNotVisible"]; n != "2" {
				t.Fatalf("in flight after round 1 = %s, want 2 (the transient failures wait for their visibility timeout)", n)
			}
		}
		// Nothing comes back before the visibility timeout...
		clk.Advance(visibility - time.Second)
		if n := pl.drain(); n != 0 {
			t.Fatalf("round %d: %d invocations before the visibility timeout", round, n)
		}
		clk.Advance(time.Second) // ...and everything failed comes back after it.
	}

	if st, _ := f.Inspect(src); len(st) != 0 {
		t.Fatalf("source queue not empty: %+v", st)
	}
	for _, id := range []string{"P1", "P2", "P3", "P-INESTABLE"} {
		if done[id] != 1 {
			t.Errorf("%s processed %d times, want 1", id, done[id])
		}
	}
	if !slices.Equal(seen["P-INESTABLE"], []int{1, 2, 3}) {
		t.Errorf("P-INESTABLE receive counts = %v, want 1,2,3", seen["P-INESTABLE"])
	}
	if !slices.Equal(seen["P-CAIDA"], []int{1, 2, 3, 4}) {
		t.Errorf("P-CAIDA receive counts = %v, want 1..4 then redrive", seen["P-CAIDA"])
	}
	if _, ok := seen["P9"]; ok {
		t.Error("the handler must never see a version 2 message")
	}

	st, _ := f.Inspect(dlq)
	byID := map[string]localaws.MessageState{}
	for _, m := range st {
		byID[aws.ToString(m.MessageAttributes[sqsbatch.AttrOriginalMessageID].StringValue)] = m
		if m.DLQSourceARN != "" {
			byID["redriven:"+m.MessageID] = m
		}
	}
	if len(st) != 4 {
		t.Fatalf("DLQ has %d messages, want 4: %+v", len(st), st)
	}
	for _, name := range []string{"v2-a", "v2-b", "roto"} {
		m, ok := byID[ids[name]]
		if !ok {
			t.Fatalf("%s not in the DLQ with its original message id", name)
		}
		if attr(m, sqsbatch.AttrReceiveCount) != "1" || attr(m, sqsbatch.AttrFailureClass) != "poison" ||
			attr(m, sqsbatch.AttrConsumerVersion) != "preparar-pedido@e2e" || attr(m, "tipo") != "PedidoConfirmado" || m.Body != bodies[name] {
			t.Errorf("%s in DLQ = %+v", name, m.MessageAttributes)
		}
	}
	if r := attr(byID[ids["v2-a"]], sqsbatch.AttrFailureReason); r != "poison: unknown major version 2 (this consumer supports 1): deploy the consumer before the producer" {
		t.Errorf("v2 reason = %q", r)
	}
	caida, ok := byID["redriven:"+ids["P-CAIDA"]]
	if !ok || caida.ReceiveCount != 4 || caida.DLQSourceARN != f.ARN(src) || attr(caida, sqsbatch.AttrFailureReason) != "" {
		t.Errorf("P-CAIDA must be moved by the queue's redrive after 4 receives, untouched: %+v", caida)
	}
	if s := f.Stats(src); s.MovedToDLQ != 1 || s.Deleted != 7 {
		t.Errorf("source stats = %+v, want 1 moved by redrive and 7 deleted (4 processed + 3 dead-lettered by the consumer)", s)
	}
}

// TestEndToEndFIFO: stock movements grouped by SKU. A transient failure in
// the middle of a group holds back the rest of the group across receives; the
// movements of each SKU are applied in order; a poison movement is
// dead-lettered at once and its group continues.
func TestEndToEndFIFO(t *testing.T) {
	clk := retry.NewVirtualClock(time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC))
	f := localaws.NewSQS(localaws.SQSConfig{Now: clk.Now})
	dlq, _ := f.CreateQueue("movimientos-stock-fallidos.fifo", localaws.QueueConfig{})
	src, err := f.CreateQueue("movimientos-stock.fifo", localaws.QueueConfig{
		VisibilityTimeout: 60 * time.Second,
		Redrive:           &localaws.RedrivePolicy{DeadLetterTargetARN: f.ARN(dlq), MaxReceiveCount: 5},
	})
	if err != nil {
		t.Fatal(err)
	}
	type mov struct {
		SKU   string `json:"sku"`
		Seq   int    `json:"seq"`
		Delta int    `json:"delta"`
	}
	var mu sync.Mutex
	applied := map[string][]int{}
	attempts := 0
	p := mustNew(t, sqsbatch.Config{
		Logger: discard(), DLQ: f, DLQRoutes: lambdaapi.DLQRoutes{"movimientos-stock.fifo": dlq}, Envelope: sqsbatch.EnvelopeRules{RequiredKeys: []string{"sku", "seq"}},
		Handler: sqsbatch.JSON(func(_ context.Context, rec *sqsbatch.Record, m *mov) error {
			mu.Lock()
			defer mu.Unlock()
			if m.SKU == "SKU-A" && m.Seq == 2 {
				attempts++
				if attempts < 3 {
					return errors.New("dynamodb: ProvisionedThroughputExceeded")
				}
			}
			applied[m.SKU] = append(applied[m.SKU], m.Seq)
			return nil
		}),
	})
	ctx := context.Background()
	send := func(sku, body string) {
		t.Helper()
		if _, err := f.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &src, MessageBody: &body, MessageGroupId: &sku, MessageDeduplicationId: aws.String(sku + body[len(body)-3:])}); err != nil {
			t.Fatal(err)
		}
	}
	send("SKU-A", `{"version":1,"sku":"SKU-A","seq":1,"delta":-1,"z":"a1"}`)
	send("SKU-B", `{"version":1,"sku":"SKU-B","seq":1,"delta":5,"z":"b1"}`)
	send("SKU-A", `{"version":1,"sku":"SKU-A","seq":2,"delta":-2,"z":"a2"}`)
	send("SKU-B", `{"version":2,"sku":"SKU-B","seq":2,"z":"b2"}`) // poison
	send("SKU-A", `{"version":1,"sku":"SKU-A","seq":3,"delta":-1,"z":"a3"}`)
	send("SKU-B", `{"version":1,"sku":"SKU-B","seq":3,"delta":1,"z":"b3"}`)

	pl := &poller{t: t, fake: f, url: src, p: p}
	for range 4 {
		pl.drain()
		clk.Advance(60 * time.Second)
	}
	if st, _ := f.Inspect(src); len(st) != 0 {
		t.Fatalf("source not empty: %+v", st)
	}
	if !slices.Equal(applied["SKU-A"], []int{1, 2, 3}) || !slices.Equal(applied["SKU-B"], []int{1, 3}) {
		t.Fatalf("applied = %v, want SKU-A 1,2,3 and SKU-B 1,3 in order", applied)
	}
	st, _ := f.Inspect(dlq)
	if len(st) != 1 || st[0].GroupID != "SKU-B" || attr(st[0], sqsbatch.AttrReceiveCount) != "1" {
		t.Fatalf("DLQ = %+v", st)
	}
}
