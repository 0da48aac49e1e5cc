package sqsbatch_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mercadofresco/integration/internal/sqsfake"
	"github.com/mercadofresco/integration/internal/sqsfake/fauxqstest"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// TestSNSFanOutDelivery runs the processor on the bodies an SNS topic
// really delivers to its SQS subscriptions (fauxqs's fan-out), rather than
// on a hand-written envelope: without raw message delivery the body is the
// notification envelope, which the processor dead-letters with the fix in
// its reason; with it, the body is the event itself and the publisher's
// attributes arrive as message attributes, and the handler runs.
func TestSNSFanOutDelivery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := fauxqstest.Launch(ctx, time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()
	mkQueue := func(name string) (url, arn string) {
		out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.QueueUrl), attrs.Attributes["QueueArn"]
	}
	topic, err := srv.CreateTopic(ctx, "mercadofresco-pedidos-confirmados")
	if err != nil {
		t.Fatal(err)
	}
	envURL, envARN := mkQueue("sin-entrega-directa")
	rawURL, rawARN := mkQueue("con-entrega-directa")
	for _, s := range []struct {
		arn string
		raw bool
	}{{envARN, false}, {rawARN, true}} {
		if _, err := srv.Subscribe(ctx, topic, s.arn, s.raw); err != nil {
			t.Fatal(err)
		}
	}
	event := order("P1")
	if _, err := srv.Publish(ctx, topic, event, map[string]string{"tipo": "PedidoConfirmado"}); err != nil {
		t.Fatal(err)
	}
	receiveOne := func(url, arn string) events.SQSMessage {
		t.Helper()
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}, MessageAttributeNames: []string{"All"}})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("receive from %s = %+v, %v; want the one notification", url, out, err)
		}
		return sqsfake.EventRecord(out.Messages[0], arn, fauxqstest.Region)
	}
	envelope, raw := receiveOne(envURL, envARN), receiveOne(rawURL, rawARN)

	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(envelope.Body), &top); err != nil || !sqsbatch.IsSNSEnvelope(top) {
		t.Fatalf("the delivered envelope is not recognised (%v): %s", err, envelope.Body)
	}
	if raw.Body != event || raw.MessageAttributes["tipo"].StringValue == nil || *raw.MessageAttributes["tipo"].StringValue != "PedidoConfirmado" {
		t.Fatalf("raw delivery = body %s, attributes %+v; want the event and tipo", raw.Body, raw.MessageAttributes)
	}

	e := newEnv(t, false)
	log, _ := newLogger()
	var runs atomic.Int32
	p := mustNew(t, sqsbatch.Config{
		Handler: sqsbatch.JSON(func(_ context.Context, rec *sqsbatch.Record, ped *pedido) error {
			rec.SetIdempotencyKey("preparacion:" + ped.PedidoID)
			runs.Add(1)
			return nil
		}),
		RequiredKeys: []string{"pedido_id", "importe"},
		DLQ:          e.fake, DLQURL: e.dlqURL, ConsumerVersion: "preparar-pedido@abc123",
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
