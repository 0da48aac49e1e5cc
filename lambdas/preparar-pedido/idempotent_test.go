package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/internal/dynalitetest"
	"github.com/mercadofresco/integration/lambdas/queue/queuefake"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// The consumer end to end on a real (dynalite) idempotency table: however
// often an order is delivered, the warehouse is asked once, and a
// cancelled order is refused once and replayed to every repeat.
func TestOrderIsPreparedOnceWhateverTheDeliveries(t *testing.T) {
	srv := dynalitetest.Start(t)
	srv.CreateTable(t, "mercadofresco-idempotencia-test", idempotency.DefaultKeyAttribute)
	store, err := idempotency.NewStore(srv.Client, idempotency.Config{TableName: "mercadofresco-idempotencia-test"})
	if err != nil {
		t.Fatal(err)
	}
	f := queuefake.New()
	dlq, err := f.CreateQueue("mercadofresco-pedidos-fallidos", queuefake.QueueConfig{})
	if err != nil {
		t.Fatal(err)
	}
	warehouse := &fakePreparer{fails: map[string]error{"P-CANCELADO": ErrNoPreparable}}
	s, err := loadSettings(func(k string) string {
		return map[string]string{"DLQ_URLS": `{"cola-mercadofresco-pedidos":"` + dlq + `"}`, "IDEMPOTENCY_TABLE_NAME": "mercadofresco-idempotencia-test"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := newProcessor(s, f, f, idempotentPreparer{store: store, next: warehouse}, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	msg := func(id, body string) events.SQSMessage {
		return events.SQSMessage{MessageId: id, ReceiptHandle: "rh-" + id, Body: body, EventSource: "aws:sqs",
			EventSourceARN: "arn:aws:sqs:eu-west-1:000000000000:cola-mercadofresco-pedidos",
			Attributes:     map[string]string{"ApproximateReceiveCount": "1"}}
	}
	order := `{"version":1,"pedido_id":"P-084417","lineas":[{"sku":"SKU-1","cantidad":2}]}`
	cancelled := `{"version":1,"pedido_id":"P-CANCELADO","lineas":[{"sku":"SKU-1","cantidad":1}]}`
	// Three deliveries of the same order (different message ids: SNS
	// redelivery, a replay), over two batches, and two of a cancelled one.
	for i, batch := range [][]events.SQSMessage{
		{msg("m1", order), msg("c1", cancelled)},
		{msg("m2", order), msg("m3", order), msg("c2", cancelled)},
	} {
		resp, err := p.Process(context.Background(), events.SQSEvent{Records: batch})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("batch %d: failures %+v", i, resp.BatchItemFailures)
		}
	}
	calls := map[string]int{}
	for _, k := range warehouse.keys {
		calls[k]++
	}
	if calls["preparacion:P-084417"] != 1 || calls["preparacion:P-CANCELADO"] != 1 {
		t.Fatalf("warehouse calls %v, want each order asked exactly once", calls)
	}
	// Both deliveries of the cancelled order are in the DLQ with the reason;
	// the second one got it from the FALLIDO record, not from the warehouse.
	dead, _ := f.Inspect(dlq)
	if len(dead) != 2 {
		t.Fatalf("DLQ holds %d messages, want the 2 deliveries of the cancelled order", len(dead))
	}
	for _, m := range dead {
		if reason := m.MessageAttributes[sqsbatch.AttrFailureReason].StringValue; !strings.Contains(reason, "order cannot be prepared") {
			t.Errorf("DLQ reason %q", reason)
		}
	}
}

func TestIdempotentPreparerClassifiesStoreAnswers(t *testing.T) {
	srv := dynalitetest.Start(t)
	srv.CreateTable(t, "idempotencia", idempotency.DefaultKeyAttribute)
	store, _ := idempotency.NewStore(srv.Client, idempotency.Config{TableName: "idempotencia"})
	prep := idempotentPreparer{store: store, next: &fakePreparer{}}
	ctx := context.Background()
	first := &PedidoConfirmado{PedidoID: "P1", Lineas: []Linea{{SKU: "A", Cantidad: 1}}}
	if ref, err := prep.Prepare(ctx, "preparacion:P1", first); err != nil || ref != "ref-P1" {
		t.Fatalf("first: %q %v", ref, err)
	}
	// Same order id, other lines: poison with the reason, never a replay.
	other := &PedidoConfirmado{PedidoID: "P1", Lineas: []Linea{{SKU: "B", Cantidad: 9}}}
	_, err := prep.Prepare(ctx, "preparacion:P1", other)
	if !errors.Is(err, idempotency.ErrPayloadMismatch) || sqsbatch.Classify(err) != sqsbatch.ClassPermanent {
		t.Errorf("payload mismatch: %v (class %v), want a permanent failure", err, sqsbatch.Classify(err))
	}
}
