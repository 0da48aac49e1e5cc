package sqsbatch_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/retry"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

const (
	stdARN  = "arn:aws:sqs:eu-west-1:000000000000:cola-mercadofresco-pedidos"
	fifoARN = "arn:aws:sqs:eu-west-1:000000000000:movimientos-stock.fifo"
)

func msg(id, body string) events.SQSMessage {
	return events.SQSMessage{
		MessageId:      id,
		ReceiptHandle:  "rh-" + id,
		Body:           body,
		EventSourceARN: stdARN,
		EventSource:    "aws:sqs",
		AWSRegion:      "eu-west-1",
		Attributes: map[string]string{
			"ApproximateReceiveCount": "1",
			"SentTimestamp":           "1764457200000",
		},
	}
}

func fifoMsg(id, group, body string) events.SQSMessage {
	m := msg(id, body)
	m.EventSourceARN = fifoARN
	m.Attributes["MessageGroupId"] = group
	m.Attributes["MessageDeduplicationId"] = "d-" + id
	return m
}

func order(id string) string {
	return `{"version":1,"tipo":"PedidoConfirmado","pedido_id":"` + id + `","importe":48.20}`
}

// syncBuffer collects log output from concurrent handlers.
type syncBuffer struct{ localaws.Buffer }

// lines returns the JSON log lines.
func (b *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace([]byte(b.String())), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("log line is not JSON: %s", l)
		}
		out = append(out, m)
	}
	return out
}

// recordLog returns the "record" log line of a message id.
func (b *syncBuffer) recordLog(t *testing.T, id string) map[string]any {
	t.Helper()
	for _, l := range b.lines(t) {
		if l["msg"] == "record" && l["message_id"] == id {
			return l
		}
	}
	t.Fatalf("no record log line for %s", id)
	return nil
}

func newLogger() (*slog.Logger, *syncBuffer) {
	buf := &syncBuffer{}
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// env is a fake SQS with a DLQ for the processor under test.
type env struct {
	fake   *localaws.SQS
	clock  *retry.VirtualClock
	dlqURL string
	// routes send records of stdARN and fifoARN to dlqURL.
	routes lambdaapi.DLQRoutes
}

func newEnv(t testing.TB, fifo bool) *env {
	t.Helper()
	clk := retry.NewVirtualClock(time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC))
	f := localaws.NewSQS(localaws.SQSConfig{Now: clk.Now})
	name := "mercadofresco-pedidos-fallidos"
	if fifo {
		name = "movimientos-stock-fallidos.fifo"
	}
	url, err := f.CreateQueue(name, localaws.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return &env{fake: f, clock: clk, dlqURL: url, routes: lambdaapi.DLQRoutes{"cola-mercadofresco-pedidos": url, "movimientos-stock.fifo": url}}
}

func (e *env) dlq(t *testing.T) []localaws.MessageState {
	t.Helper()
	st, err := e.fake.Inspect(e.dlqURL)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func failedIDs(resp events.SQSEventResponse) []string {
	var ids []string
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func attr(st localaws.MessageState, name string) string {
	return aws.ToString(st.MessageAttributes[name].StringValue)
}

func mustNew(t testing.TB, cfg sqsbatch.Config) *sqsbatch.Processor {
	t.Helper()
	p, err := sqsbatch.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func itoa(i int) string { return strconv.Itoa(i) }

var _ sqsbatch.Sender = (*localaws.SQS)(nil)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// keyByPedido derives "preparacion:<pedido_id>" (Config.IdempotencyKey).
func keyByPedido(rec *sqsbatch.Record) (string, error) {
	var ped pedido
	err := rec.Decode(&ped)
	return "preparacion:" + ped.PedidoID, err
}
