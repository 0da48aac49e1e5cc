package sqsbatch_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// TestSNSFanOutDelivery runs the processor on what an SNS topic delivers to
// its SQS subscriptions. Without raw message delivery the body is the
// notification envelope (testdata/sns-notification.json, as an SNS
// emulator's fan-out delivered it, not written by hand), which the
// processor dead-letters with the fix in its reason; with it, the body is
// the event itself and the publisher's attributes arrive as message
// attributes, and the handler runs.
func TestSNSFanOutDelivery(t *testing.T) {
	ctx := context.Background()
	envelopeBody, err := os.ReadFile("testdata/sns-notification.json")
	if err != nil {
		t.Fatal(err)
	}
	var notification struct{ Message string }
	if err := json.Unmarshal(envelopeBody, &notification); err != nil {
		t.Fatal(err)
	}
	f := localaws.NewSQS(localaws.SQSConfig{})
	deliver := func(queue, body string, attrs map[string]types.MessageAttributeValue) events.SQSMessage {
		t.Helper()
		url, err := f.CreateQueue(queue, localaws.QueueConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body, MessageAttributes: attrs}); err != nil {
			t.Fatal(err)
		}
		ev, err := f.Receive(ctx, url, f.ARN(url), 10)
		if err != nil || len(ev.Records) != 1 {
			t.Fatalf("receive from %s = %+v, %v; want the one notification", url, ev, err)
		}
		return ev.Records[0]
	}
	envelope := deliver("sin-entrega-directa", string(envelopeBody), nil)
	raw := deliver("con-entrega-directa", notification.Message,
		map[string]types.MessageAttributeValue{"tipo": sqsbatch.StringAttribute("PedidoConfirmado")})

	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(envelope.Body), &top); err != nil || !sqsbatch.IsSNSEnvelope(top) {
		t.Fatalf("the delivered envelope is not recognised (%v): %s", err, envelope.Body)
	}

	e := newEnv(t, false)
	log, _ := newLogger()
	var runs atomic.Int32
	p := mustNew(t, sqsbatch.Config{
		Handler: sqsbatch.JSON(func(_ context.Context, rec *sqsbatch.Record, ped *pedido) error {
			runs.Add(1)
			return nil
		}),
		Envelope:       sqsbatch.EnvelopeRules{RequiredKeys: []string{"pedido_id", "importe"}},
		IdempotencyKey: keyByPedido,
		DLQ:            e.fake, DLQRoutes: lambdaapi.DLQRoutes{"sin-entrega-directa": e.dlqURL, "con-entrega-directa": e.dlqURL}, ConsumerVersion: "preparar-pedido@abc123",
		Logger: log,
	})
	resp, err := p.Process(ctx, events.SQSEvent{Records: []events.SQSMessage{envelope, raw}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Process = %+v, %v", resp, err)
	}
	if runs.Load() != 1 {
		t.Errorf("the handler ran %d times, want once (the raw delivery)", runs.Load())
	}
	dlq := e.dlq(t)
	if len(dlq) != 1 || dlq[0].Body != envelope.Body || !strings.Contains(attr(dlq[0], sqsbatch.AttrFailureReason), "enable raw message delivery") {
		t.Fatalf("DLQ = %+v, want the envelope with the raw-delivery reason", dlq)
	}
}
