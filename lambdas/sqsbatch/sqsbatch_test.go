package sqsbatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/internal/testseed"
	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/retry"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// pedido leaves "version" to the library (it may be 1, 1.0 or "1.3").
type pedido struct {
	PedidoID string  `json:"pedido_id"`
	Importe  float64 `json:"importe"`
}

// checkPedido is the consumer's content check (Envelope.Content).
func checkPedido(body string) error {
	var p pedido
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		return fmt.Errorf("body does not match the expected schema: %w", err)
	}
	if p.Importe < 0 {
		return fmt.Errorf("importe %.2f is negative", p.Importe)
	}
	return nil
}

var errGateway = errors.New("pasarela: 503")

// TestClassification runs one record through the processor per case and checks
// where it ends up: acknowledged, reported for retry, or in the DLQ with a reason.
func TestClassification(t *testing.T) {
	type want struct {
		failed      bool   // listed in batchItemFailures
		dlqClass    string // "" if it must not be in the DLQ
		reason      string // substring of the DLQ reason / log reason
		handlerRuns int
	}
	tests := []struct {
		name    string
		body    string
		handler func(ctx context.Context, rec *sqsbatch.Record, p *pedido) error
		want    want
	}{
		{name: "ok", body: order("P1"), want: want{handlerRuns: 1}},
		{name: "unknown fields ignored", body: `{"version":1,"pedido_id":"P1","importe":1,"canal":"app","nuevo":{"x":1}}`, want: want{handlerRuns: 1}},
		{name: "minor version accepted", body: `{"version":"1.3","pedido_id":"P1","importe":1}`, want: want{handlerRuns: 1}},
		{name: "float version 1.0 accepted", body: `{"version":1.0,"pedido_id":"P1","importe":1}`, want: want{handlerRuns: 1}},
		{name: "malformed JSON", body: `{"version":1,"pedido_id":"P1",`, want: want{dlqClass: "poison", reason: "malformed JSON"}},
		{name: "not JSON at all", body: `pedido P1 confirmado`, want: want{dlqClass: "poison", reason: "malformed JSON at byte 1"}},
		{name: "empty body", body: "   ", want: want{dlqClass: "poison", reason: "empty body"}},
		{name: "JSON array", body: `[{"version":1}]`, want: want{dlqClass: "poison", reason: "body is a JSON array, want an object"}},
		{name: "JSON null", body: `null`, want: want{dlqClass: "poison", reason: "JSON null"}},
		{name: "missing version", body: `{"pedido_id":"P1","importe":1}`, want: want{dlqClass: "poison", reason: `missing required key "version"`}},
		{name: "null version", body: `{"version":null,"pedido_id":"P1","importe":1}`, want: want{dlqClass: "poison", reason: `missing required key "version"`}},
		{name: "version not a number", body: `{"version":"dos","pedido_id":"P1","importe":1}`, want: want{dlqClass: "poison", reason: `version "dos" is not a version number`}},
		{name: "unknown major version (the 340 messages)", body: `{"version":2,"pedido_id":"P1","importe":1}`, want: want{dlqClass: "poison", reason: "unknown major version 2 (this consumer supports 1)"}},
		{name: "missing one key", body: `{"version":1,"importe":1}`, want: want{dlqClass: "poison", reason: `missing required key "pedido_id"`}},
		{name: "missing two keys", body: `{"version":1}`, want: want{dlqClass: "poison", reason: `missing required keys "pedido_id", "importe"`}},
		{name: "empty string key", body: `{"version":1,"pedido_id":"","importe":1}`, want: want{dlqClass: "poison", reason: `missing required key "pedido_id"`}},
		{name: "SNS envelope (raw delivery off)", body: `{"Type":"Notification","TopicArn":"arn:aws:sns:eu-west-1:1:t","Message":"{}"}`, want: want{dlqClass: "poison", reason: "enable raw message delivery"}},
		{name: "wrong type for a field", body: `{"version":1,"pedido_id":42,"importe":1}`, want: want{dlqClass: "poison", reason: "does not match the expected schema"}},
		{name: "Validate fails", body: `{"version":1,"pedido_id":"P1","importe":-3}`, want: want{dlqClass: "poison", reason: "importe -3.00 is negative"}},
		{
			name: "transient error", body: order("P1"),
			handler: func(context.Context, *sqsbatch.Record, *pedido) error { return fmt.Errorf("cobrar: %w", errGateway) },
			want:    want{failed: true, reason: "pasarela: 503", handlerRuns: 1},
		},
		{
			name: "context deadline is transient", body: order("P1"),
			handler: func(context.Context, *sqsbatch.Record, *pedido) error { return context.DeadlineExceeded },
			want:    want{failed: true, reason: "deadline exceeded", handlerRuns: 1},
		},
		{
			name: "permanent error (card declined)", body: order("P1"),
			handler: func(context.Context, *sqsbatch.Record, *pedido) error {
				return failure.Permanent("", errors.New("tarjeta rechazada"))
			},
			want: want{dlqClass: "permanent", reason: "tarjeta rechazada", handlerRuns: 1},
		},
		{
			name: "handler poison", body: order("P1"),
			handler: func(context.Context, *sqsbatch.Record, *pedido) error {
				return failure.Poisonf("pedido %s: sku %q does not exist", "P1", "SKU-0")
			},
			want: want{dlqClass: "poison", reason: `sku "SKU-0" does not exist`, handlerRuns: 1},
		},
		{
			name: "panic is transient", body: order("P1"),
			handler: func(context.Context, *sqsbatch.Record, *pedido) error {
				var m map[string]int
				m["x"]++ // nil map write
				return nil
			},
			want: want{failed: true, reason: "handler panicked", handlerRuns: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, false)
			log, logs := newLogger()
			var runs atomic.Int32
			p := mustNew(t, sqsbatch.Config{
				Handler: sqsbatch.JSON(func(ctx context.Context, rec *sqsbatch.Record, ped *pedido) error {
					if rec.Message.MessageId != "m1" {
						return nil
					}
					runs.Add(1)
					if tt.handler != nil {
						return tt.handler(ctx, rec, ped)
					}
					return nil
				}),
				Envelope:        sqsbatch.EnvelopeRules{RequiredKeys: []string{"pedido_id", "importe"}, Content: checkPedido},
				IdempotencyKey:  keyByPedido,
				DLQ:             e.fake,
				DLQRoutes:       e.routes,
				ConsumerVersion: "preparar-pedido@abc123",
				Logger:          log,
			})
			ev := events.SQSEvent{Records: []events.SQSMessage{msg("m1", tt.body), msg("ok", order("P2"))}}
			resp, err := p.Process(context.Background(), ev)
			if err != nil {
				t.Fatalf("Process: %v", err)
			}
			if got := slices.Contains(failedIDs(resp), "m1"); got != tt.want.failed {
				t.Errorf("m1 in batchItemFailures = %v, want %v (%v)", got, tt.want.failed, resp)
			}
			if slices.Contains(failedIDs(resp), "ok") {
				t.Error("the good record of the batch must not fail")
			}
			if int(runs.Load()) != tt.want.handlerRuns {
				t.Errorf("handler ran %d times for m1, want %d", runs.Load(), tt.want.handlerRuns)
			}
			dlq := e.dlq(t)
			line := logs.recordLog(t, "m1")
			if tt.want.dlqClass == "" {
				if len(dlq) != 0 {
					t.Fatalf("DLQ = %+v, want empty", dlq)
				}
			} else {
				if len(dlq) != 1 {
					t.Fatalf("DLQ has %d messages, want 1", len(dlq))
				}
				got := dlq[0]
				if got.Body != tt.body {
					t.Errorf("DLQ body = %q, want the original %q", got.Body, tt.body)
				}
				if attr(got, sqsbatch.AttrFailureClass) != tt.want.dlqClass || !strings.Contains(attr(got, sqsbatch.AttrFailureReason), tt.want.reason) {
					t.Errorf("DLQ class/reason = %q / %q, want %q / ~%q", attr(got, sqsbatch.AttrFailureClass), attr(got, sqsbatch.AttrFailureReason), tt.want.dlqClass, tt.want.reason)
				}
				if line["outcome"] != "dead_lettered" || line["dlq_message_id"] != got.MessageID {
					t.Errorf("log outcome = %v, dlq_message_id = %v (DLQ id %s)", line["outcome"], line["dlq_message_id"], got.MessageID)
				}
			}
			if tt.want.reason != "" && !strings.Contains(fmt.Sprint(line["reason"]), tt.want.reason) {
				t.Errorf("log reason = %q, want ~%q", line["reason"], tt.want.reason)
			}
			if line["receive_count"] != float64(1) {
				t.Errorf("log receive_count = %v", line["receive_count"])
			}
			if tt.want.handlerRuns == 1 && line["idempotency_key"] != "preparacion:P1" {
				t.Errorf("log idempotency_key = %v", line["idempotency_key"])
			}
		})
	}
}

func TestPanicLogsStack(t *testing.T) {
	log, logs := newLogger()
	p := mustNew(t, sqsbatch.Config{Logger: log, Handler: sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error {
		panic("boom")
	})})
	resp, err := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("m1", order("P1"))}})
	if err != nil || !slices.Equal(failedIDs(resp), []string{"m1"}) {
		t.Fatalf("resp = %v, err = %v", resp, err)
	}
	for _, l := range logs.lines(t) {
		if l["msg"] == "handler panic recovered" {
			if !strings.Contains(fmt.Sprint(l["stack"]), "sqsbatch_test.TestPanicLogsStack") {
				t.Errorf("stack does not show the handler: %v", l["stack"])
			}
			return
		}
	}
	t.Fatal("no panic log line")
}

func TestDLQMessage(t *testing.T) {
	tests := []struct {
		name      string
		original  int // number of original message attributes
		wantKept  int
		overflows bool
	}{
		{"no attributes", 0, 0, false},
		{"five fit", 5, 5, false},
		{"eight: four kept, four packed", 8, 4, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, false)
			p := mustNew(t, sqsbatch.Config{
				Handler: sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error { return nil }),
				DLQ:     e.fake, DLQRoutes: e.routes, ConsumerVersion: "v7", Logger: discard(),
			})
			m := msg("m-340", `{"version":2,"pedido_id":"P1"}`)
			m.Attributes["ApproximateReceiveCount"] = "3"
			m.MessageAttributes = map[string]events.SQSMessageAttribute{}
			for i := range tt.original {
				v := "valor-" + itoa(i)
				m.MessageAttributes["attr"+itoa(i)] = events.SQSMessageAttribute{DataType: "String", StringValue: &v}
			}
			// A message redriven earlier keeps no stale reason: ours replace it.
			old := "old reason"
			m.MessageAttributes[sqsbatch.AttrFailureReason] = events.SQSMessageAttribute{DataType: "String", StringValue: &old}
			resp, _ := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{m}})
			if len(resp.BatchItemFailures) != 0 {
				t.Fatalf("failures = %v", resp.BatchItemFailures)
			}
			dlq := e.dlq(t)
			if len(dlq) != 1 {
				t.Fatalf("DLQ = %+v", dlq)
			}
			a := dlq[0].MessageAttributes
			if len(a) > localaws.MaxMessageAttributes {
				t.Fatalf("%d attributes", len(a))
			}
			want := map[string]string{
				sqsbatch.AttrFailureClass:      "poison",
				sqsbatch.AttrConsumerVersion:   "v7",
				sqsbatch.AttrOriginalMessageID: "m-340",
				sqsbatch.AttrReceiveCount:      "3",
			}
			for k, v := range want {
				if aws.ToString(a[k].StringValue) != v {
					t.Errorf("%s = %q, want %q", k, aws.ToString(a[k].StringValue), v)
				}
			}
			if aws.ToString(a[sqsbatch.AttrReceiveCount].DataType) != "Number" {
				t.Errorf("receive count type = %s", aws.ToString(a[sqsbatch.AttrReceiveCount].DataType))
			}
			if !strings.Contains(aws.ToString(a[sqsbatch.AttrFailureReason].StringValue), "unknown major version 2") {
				t.Errorf("reason = %q", aws.ToString(a[sqsbatch.AttrFailureReason].StringValue))
			}
			kept := 0
			for k := range a {
				if strings.HasPrefix(k, "attr") {
					kept++
				}
			}
			if kept != tt.wantKept {
				t.Errorf("kept %d original attributes, want %d", kept, tt.wantKept)
			}
			packed := a[sqsbatch.AttrOriginalAttributes].StringValue
			if tt.overflows != (aws.ToString(packed) != "") {
				t.Errorf("overflow attribute = %q", aws.ToString(packed))
			}
			// A redrive tool gets back exactly the original attributes.
			orig, err := sqsbatch.OriginalAttributes(a)
			if err != nil {
				t.Fatal(err)
			}
			if len(orig) != tt.original {
				t.Errorf("OriginalAttributes has %d, want %d: %v", len(orig), tt.original, orig)
			}
			for i := range tt.original {
				if v, got := "valor-"+itoa(i), orig["attr"+itoa(i)]; aws.ToString(got.DataType) != "String" || aws.ToString(got.StringValue) != v {
					t.Errorf("original attribute attr%d = %+v, want %q", i, orig["attr"+itoa(i)], v)
				}
			}
			d, ok := sqsbatch.ParseDeadLetter(a)
			if !ok || d.Class != "poison" || d.ReceiveCount != 3 || d.OriginalMessageID != "m-340" || d.ConsumerVersion != "v7" || !strings.Contains(d.Reason, "version 2") {
				t.Errorf("ParseDeadLetter = %+v, %v", d, ok)
			}
			if _, ok := sqsbatch.ParseDeadLetter(map[string]types.MessageAttributeValue{"tipo": sqsbatch.StringAttribute("x")}); ok {
				t.Error("a message without failure attributes must not parse")
			}
		})
	}
}

func TestFIFODLQGetsGroupAndDeduplicationID(t *testing.T) {
	e := newEnv(t, true)
	p := mustNew(t, sqsbatch.Config{Logger: discard(), DLQ: e.fake, DLQRoutes: e.routes,
		Handler: sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error { return nil })})
	m := fifoMsg("m1", "SKU-1", `{"version":9}`)
	if resp, _ := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{m}}); len(resp.BatchItemFailures) != 0 {
		t.Fatal(resp)
	}
	// The same receive processed again (e.g. the invocation was retried after
	// the response was lost) is deduplicated by the DLQ...
	_, _ = p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{m}})
	// ...a later receive (new receipt handle) is not.
	m.ReceiptHandle = "rh-second"
	_, _ = p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{m}})
	dlq := e.dlq(t)
	if len(dlq) != 2 || dlq[0].GroupID != "SKU-1" || dlq[0].DeduplicationID == "" || dlq[0].DeduplicationID == dlq[1].DeduplicationID {
		t.Fatalf("DLQ = %+v", dlq)
	}
}

func TestDLQSendFailureLosesNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(e *env, cfg *sqsbatch.Config)
	}{
		{"send fails", func(e *env, cfg *sqsbatch.Config) {
			e.fake.SetFault(func(op, _ string) error {
				if op == "SendMessage" {
					return errors.New("KMS.ThrottlingException")
				}
				return nil
			})
		}},
		{"no DLQ configured", func(e *env, cfg *sqsbatch.Config) { cfg.DLQ, cfg.DLQRoutes = nil, nil }},
		{"DLQ rejects the message (too big with attributes)", func(e *env, cfg *sqsbatch.Config) {
			url, _ := e.fake.CreateQueue("tiny-dlq", localaws.QueueConfig{MaxMessageSize: 40})
			cfg.DLQRoutes = lambdaapi.DLQRoutes{"cola-mercadofresco-pedidos": url}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, false)
			log, logs := newLogger()
			cfg := sqsbatch.Config{Logger: log, DLQ: e.fake, DLQRoutes: e.routes,
				Handler: sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error { return nil })}
			tc.setup(e, &cfg)
			p := mustNew(t, cfg)
			resp, _ := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
				msg("poison", `{"version":2}`), msg("good", order("P1")),
			}})
			if !slices.Equal(failedIDs(resp), []string{"poison"}) {
				t.Fatalf("failures = %v, want [poison]", failedIDs(resp))
			}
			if l := logs.recordLog(t, "poison"); l["outcome"] != "dead_letter_failed" || !strings.Contains(fmt.Sprint(l["reason"]), "unknown major version 2") {
				t.Errorf("log = %v", l)
			}
		})
	}
}

func TestEmptyAndAllFailedBatches(t *testing.T) {
	failing := sqsbatch.HandlerFunc(func(_ context.Context, rec *sqsbatch.Record) error {
		if rec.Message.MessageId == "ok" {
			return nil
		}
		return errGateway
	})
	p := mustNew(t, sqsbatch.Config{Logger: discard(), Handler: failing})
	resp, err := p.Process(context.Background(), events.SQSEvent{})
	if err != nil || resp.BatchItemFailures == nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("empty batch: %v %v", resp, err)
	}
	if b, _ := json.Marshal(resp); string(b) != `{"batchItemFailures":[]}` {
		t.Errorf("empty batch response JSON = %s", b)
	}
	batch := events.SQSEvent{Records: []events.SQSMessage{msg("a", order("1")), msg("b", order("2")), msg("a", order("1"))}}
	resp, err = p.Process(context.Background(), batch)
	if err != nil || !slices.Equal(failedIDs(resp), []string{"a", "b"}) {
		t.Fatalf("all failed (default): %v %v", failedIDs(resp), err)
	}
}

func TestIdempotencyKeyFailures(t *testing.T) {
	e := newEnv(t, false)
	p := mustNew(t, sqsbatch.Config{Logger: discard(), DLQ: e.fake, DLQRoutes: e.routes,
		IdempotencyKey: func(rec *sqsbatch.Record) (string, error) {
			switch rec.Message.MessageId {
			case "panic":
				panic("nil pointer in key func")
			case "empty":
				return "", nil
			}
			return "", errors.New("no pedido_id")
		},
		Handler: sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error {
			t.Error("handler must not run without a key")
			return nil
		})})
	resp, err := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		msg("panic", order("1")), msg("empty", order("2")), msg("err", order("3")),
	}})
	if err != nil || !slices.Equal(failedIDs(resp), []string{"panic"}) {
		t.Fatalf("failures = %v (%v), want only the panic (transient)", failedIDs(resp), err)
	}
	if dlq := e.dlq(t); len(dlq) != 2 || !strings.Contains(attr(dlq[0], sqsbatch.AttrFailureReason), "cannot derive the idempotency key") {
		t.Fatalf("DLQ = %+v", dlq)
	}
}

func TestDuplicateMessageInBatch(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("handler fails=%v", fail), func(t *testing.T) {
			var runs atomic.Int32
			log, logs := newLogger()
			p := mustNew(t, sqsbatch.Config{Logger: log, Handler: sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error {
				runs.Add(1)
				if fail {
					return errGateway
				}
				return nil
			})})
			dup := msg("m1", order("P1"))
			dup.ReceiptHandle = "rh-other"
			resp, _ := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("m1", order("P1")), msg("m2", order("P2")), dup}})
			if runs.Load() != 2 {
				t.Errorf("handler ran %d times, want 2 (the copy is not processed)", runs.Load())
			}
			want := []string(nil)
			if fail {
				want = []string{"m1", "m2"} // m1 once, although it appears twice
			}
			if !slices.Equal(failedIDs(resp), want) {
				t.Errorf("failures = %v, want %v", failedIDs(resp), want)
			}
			n := 0
			for _, l := range logs.lines(t) {
				if l["outcome"] == "duplicate_in_batch" {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d duplicate log lines, want 1", n)
			}
		})
	}
}

// Two different messages for the same order (the outbox published twice)
// share the idempotency key: they must not run concurrently.
func TestSameIdempotencyKeyIsSerialised(t *testing.T) {
	var mu sync.Mutex
	running := map[string]int{}
	overlap := false
	p := mustNew(t, sqsbatch.Config{
		Logger:      discard(),
		Concurrency: 8,
		IdempotencyKey: func(rec *sqsbatch.Record) (string, error) {
			var ped pedido
			if err := rec.Decode(&ped); err != nil {
				return "", err
			}
			return "preparacion:" + ped.PedidoID, nil
		},
		Handler: sqsbatch.HandlerFunc(func(_ context.Context, rec *sqsbatch.Record) error {
			k := rec.IdempotencyKey()
			mu.Lock()
			running[k]++
			if running[k] > 1 {
				overlap = true
			}
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			mu.Lock()
			running[k]--
			mu.Unlock()
			return nil
		}),
	})
	var recs []events.SQSMessage
	for i := range 10 {
		recs = append(recs, msg("m"+itoa(i), order("P"+itoa(i%3))))
	}
	resp, err := p.Process(context.Background(), events.SQSEvent{Records: recs})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatal(resp, err)
	}
	if overlap {
		t.Fatal("two records with the same idempotency key ran at the same time")
	}
}

func TestFIFOGroupFailsMidway(t *testing.T) {
	e := newEnv(t, true)
	var mu sync.Mutex
	var calls []string
	log, logs := newLogger()
	p := mustNew(t, sqsbatch.Config{
		Logger: log, DLQ: e.fake, DLQRoutes: e.routes,
		Handler: sqsbatch.HandlerFunc(func(_ context.Context, rec *sqsbatch.Record) error {
			mu.Lock()
			calls = append(calls, rec.Message.MessageId)
			mu.Unlock()
			switch rec.Message.MessageId {
			case "a2":
				return errGateway
			case "c1":
				return failure.Permanent("", errors.New("sku retirado"))
			}
			return nil
		}),
	})
	body := `{"version":1,"sku":"X","delta":-1}`
	resp, err := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		fifoMsg("a1", "SKU-A", body), fifoMsg("b1", "SKU-B", body), fifoMsg("a2", "SKU-A", body),
		fifoMsg("c1", "SKU-C", body), fifoMsg("a3", "SKU-A", body), fifoMsg("b2", "SKU-B", body),
		fifoMsg("c2", "SKU-C", body), fifoMsg("a4", "SKU-A", `not json`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := failedIDs(resp), []string{"a2", "a3", "a4"}; !slices.Equal(got, want) {
		t.Fatalf("failures = %v, want %v (the rest of group A, nothing else)", got, want)
	}
	order := func(ids ...string) []string {
		var out []string
		for _, c := range calls {
			if slices.Contains(ids, c) {
				out = append(out, c)
			}
		}
		return out
	}
	if got := order("a1", "a2", "a3", "a4"); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Errorf("group A calls = %v, want a1,a2 (a3 and even the poison a4 wait for the group)", got)
	}
	if got := order("b1", "b2"); !slices.Equal(got, []string{"b1", "b2"}) {
		t.Errorf("group B calls = %v", got)
	}
	if got := order("c1", "c2"); !slices.Equal(got, []string{"c1", "c2"}) {
		t.Errorf("group C calls = %v: a dead-lettered record lets its group continue", got)
	}
	if dlq := e.dlq(t); len(dlq) != 1 || dlq[0].GroupID != "SKU-C" {
		t.Errorf("DLQ = %+v", dlq)
	}
	if l := logs.recordLog(t, "a3"); l["outcome"] != "group_blocked" || l["group_id"] != "SKU-A" {
		t.Errorf("a3 log = %v", l)
	}
}

func TestFIFOGroupsSequentialAndParallel(t *testing.T) {
	var mu sync.Mutex
	perGroup := map[string]int{}
	var groupsNow, maxGroups int
	seen := map[string][]string{}
	body := func(n int) string { return `{"version":1,"n":` + itoa(n) + `}` }
	p := mustNew(t, sqsbatch.Config{Logger: discard(), Concurrency: 3,
		Handler: sqsbatch.HandlerFunc(func(_ context.Context, rec *sqsbatch.Record) error {
			g := rec.GroupID
			mu.Lock()
			perGroup[g]++
			if perGroup[g] > 1 {
				t.Errorf("group %s: two records in flight", g)
			}
			groupsNow++
			maxGroups = max(maxGroups, groupsNow)
			seen[g] = append(seen[g], rec.Body())
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
			mu.Lock()
			perGroup[g]--
			groupsNow--
			mu.Unlock()
			return nil
		})})
	var recs []events.SQSMessage
	for i := range 10 {
		g := "G" + itoa(i%5)
		recs = append(recs, fifoMsg("m"+itoa(i), g, body(i)))
	}
	if resp, err := p.Process(context.Background(), events.SQSEvent{Records: recs}); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatal(resp, err)
	}
	for g, bodies := range seen {
		n0 := int(g[1] - '0')
		if !slices.Equal(bodies, []string{body(n0), body(n0 + 5)}) {
			t.Errorf("group %s order = %v", g, bodies)
		}
	}
	if maxGroups != 3 {
		t.Errorf("max groups in parallel = %d, want the bound 3", maxGroups)
	}
}

func TestParallelismBound(t *testing.T) {
	for _, tc := range []struct{ concurrency, want int }{{0, sqsbatch.DefaultConcurrency}, {1, 1}, {4, 4}} {
		t.Run(fmt.Sprintf("concurrency=%d", tc.concurrency), func(t *testing.T) {
			var now, peak atomic.Int32
			p := mustNew(t, sqsbatch.Config{Logger: discard(), Concurrency: tc.concurrency,
				Handler: sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error {
					n := now.Add(1)
					for {
						m := peak.Load()
						if n <= m || peak.CompareAndSwap(m, n) {
							break
						}
					}
					time.Sleep(3 * time.Millisecond)
					now.Add(-1)
					return nil
				})})
			var recs []events.SQSMessage
			for i := range 40 {
				recs = append(recs, msg("m"+itoa(i), order("P"+itoa(i))))
			}
			if resp, err := p.Process(context.Background(), events.SQSEvent{Records: recs}); err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatal(resp, err)
			}
			if int(peak.Load()) != tc.want {
				t.Errorf("peak concurrent handlers = %d, want %d", peak.Load(), tc.want)
			}
		})
	}
}

func TestDeadline(t *testing.T) {
	t.Run("stops starting records when time is short", func(t *testing.T) {
		// A manual clock an hour ahead of the wall clock: the Lambda
		// deadline (on that clock) is then still in the future for the real
		// contexts and timers, and only the handlers move time.
		clk := retry.NewVirtualClock(time.Now().Add(time.Hour))
		var runs atomic.Int32
		var handlerDeadline time.Time
		p := mustNew(t, sqsbatch.Config{Logger: discard(), Concurrency: 1, DeadlineMargin: 600 * time.Millisecond, Now: clk.Now,
			Handler: sqsbatch.HandlerFunc(func(ctx context.Context, _ *sqsbatch.Record) error {
				if runs.Add(1) == 1 {
					handlerDeadline, _ = ctx.Deadline()
				}
				clk.Advance(400 * time.Millisecond) // the record takes 400 ms
				return nil
			})})
		deadline := clk.Now().Add(1200 * time.Millisecond)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		recs := []events.SQSMessage{msg("a", order("1")), msg("b", order("2")), msg("c", order("3")), msg("d", order("4"))}
		resp, err := p.Process(ctx, events.SQSEvent{Records: recs})
		if err != nil {
			t.Fatal(err)
		}
		// a starts with 1200 ms left, b with 800 ms, c would start with 400 ms < 600 ms: not started.
		if runs.Load() != 2 || !slices.Equal(failedIDs(resp), []string{"c", "d"}) {
			t.Fatalf("runs = %d, failures = %v", runs.Load(), failedIDs(resp))
		}
		if want := deadline.Add(-300 * time.Millisecond); !handlerDeadline.Equal(want) {
			t.Errorf("handler deadline = %v, want Lambda deadline - margin/2 = %v", handlerDeadline, want)
		}
	})
	t.Run("already too late", func(t *testing.T) {
		p := mustNew(t, sqsbatch.Config{Logger: discard(), Handler: sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error {
			t.Error("handler must not start")
			return nil
		})})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second) // < 2 s default margin
		defer cancel()
		resp, err := p.Process(ctx, events.SQSEvent{Records: []events.SQSMessage{msg("a", order("1")), msg("b", order("2"))}})
		if err != nil || len(resp.BatchItemFailures) != 2 {
			t.Fatal(resp, err)
		}
	})
	t.Run("abandons a handler that ignores its context", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		log, logs := newLogger()
		p := mustNew(t, sqsbatch.Config{Logger: log, DeadlineMargin: time.Second,
			Handler: sqsbatch.HandlerFunc(func(_ context.Context, rec *sqsbatch.Record) error {
				if rec.Message.MessageId == "slow" {
					<-release // a dependency call without a timeout
				}
				return nil
			})})
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		start := time.Now()
		resp, err := p.Process(ctx, events.SQSEvent{Records: []events.SQSMessage{msg("fast", order("1")), msg("slow", order("2"))}})
		if took := time.Since(start); took >= 1500*time.Millisecond {
			t.Errorf("Process returned after %s, not before the Lambda deadline (it aims at deadline - margin/4 = 1250 ms)", took)
		}
		if err != nil || !slices.Equal(failedIDs(resp), []string{"slow"}) {
			t.Fatalf("failures = %v, err = %v", failedIDs(resp), err)
		}
		if l := logs.recordLog(t, "slow"); l["outcome"] != "deadline" || !strings.Contains(fmt.Sprint(l["reason"]), "still running") {
			t.Errorf("slow log = %v", l)
		}
	})
}

func TestRetryAfterChangesVisibility(t *testing.T) {
	clk := retry.NewVirtualClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	f := localaws.NewSQS(localaws.SQSConfig{Now: clk.Now})
	url, _ := f.CreateQueue("cola-mercadofresco-erp", localaws.QueueConfig{VisibilityTimeout: 60 * time.Second})
	_, _ = f.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(order("P1"))})
	ev, _ := f.Receive(context.Background(), url, f.ARN(url), 1)
	p := mustNew(t, sqsbatch.Config{Logger: discard(), Visibility: f,
		Handler: sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error {
			return failure.RetryAfter(errors.New("circuit open: ERP"), 300*time.Second)
		})})
	resp, _ := p.Process(context.Background(), ev)
	if len(resp.BatchItemFailures) != 1 {
		t.Fatal(resp)
	}
	clk.Advance(61 * time.Second)
	if got, _ := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url}); len(got.Messages) != 0 {
		t.Fatal("the message came back after the queue's 60 s instead of the requested 300 s")
	}
	clk.Advance(240 * time.Second)
	if got, _ := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url}); len(got.Messages) != 1 {
		t.Fatal("the message did not come back after 300 s")
	}
}

func TestNewValidates(t *testing.T) {
	h := sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error { return nil })
	for _, cfg := range []sqsbatch.Config{
		{},
		{Handler: h, Concurrency: -1},
		{Handler: h, DeadlineMargin: -time.Second},
		{Handler: h, Envelope: sqsbatch.EnvelopeRules{RequiredKeys: []string{"detail..pedido_id"}}},
	} {
		if _, err := sqsbatch.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted an invalid config", cfg)
		}
	}
}

func TestNestedKeys(t *testing.T) {
	e := newEnv(t, false)
	p := mustNew(t, sqsbatch.Config{Logger: discard(), DLQ: e.fake, DLQRoutes: e.routes,
		Envelope: sqsbatch.EnvelopeRules{VersionKey: "detail.version", RequiredKeys: []string{"detail.pedido_id"}},
		Handler:  sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error { return nil })})
	resp, _ := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		msg("ok", `{"version":"0","detail-type":"PedidoConfirmado","detail":{"version":1,"pedido_id":"P1"}}`),
		msg("bad", `{"version":"0","detail":"texto"}`),
	}})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatal(resp)
	}
	if dlq := e.dlq(t); len(dlq) != 1 || !strings.Contains(attr(dlq[0], sqsbatch.AttrFailureReason), `key "detail" is not an object`) {
		t.Fatalf("DLQ = %+v", dlq)
	}
}

// A reason longer than the limit or with characters SQS refuses in an
// attribute value must still produce a valid DLQ message (else the poison
// record could never be dead-lettered).
func TestDLQReasonIsSanitised(t *testing.T) {
	e := newEnv(t, false)
	long := strings.Repeat("é", 2000) + "\x00\x01\xff"
	p := mustNew(t, sqsbatch.Config{Logger: discard(), DLQ: e.fake, DLQRoutes: e.routes,
		Handler: sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error {
			return failure.Permanent("", errors.New(long))
		})})
	resp, _ := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("m1", order("P1"))}})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatal("the DLQ send must succeed", resp)
	}
	r := attr(e.dlq(t)[0], sqsbatch.AttrFailureReason)
	if len(r) > 1024+len("…") || !strings.HasPrefix(r, "permanent: ééé") || !strings.HasSuffix(r, "…") || !utf8.ValidString(r) {
		t.Errorf("reason (%d bytes) = %.40q...", len(r), r)
	}
	e2 := newEnv(t, false)
	p2 := mustNew(t, sqsbatch.Config{Logger: discard(), DLQ: e2.fake, DLQRoutes: e2.routes,
		Handler: sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error {
			return failure.Poisonf("bad byte \x00 here")
		})})
	if resp, _ := p2.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("m1", order("P1"))}}); len(resp.BatchItemFailures) != 0 {
		t.Fatal(resp)
	}
	if r := attr(e2.dlq(t)[0], sqsbatch.AttrFailureReason); r != "poison: bad byte \uFFFD here" {
		t.Errorf("reason = %q", r)
	}
}

// Regression: a message with more attributes than fit was dead-lettered
// (originals packed into mf-original-attributes), redriven as it was by
// SQS's own move task, and dead-lettered again: the packed originals were
// dropped the second time.
func TestRedeadLetteredMessageKeepsPackedOriginals(t *testing.T) {
	e := newEnv(t, false)
	p := mustNew(t, sqsbatch.Config{
		Handler: sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error { return nil }),
		DLQ:     e.fake, DLQRoutes: e.routes, ConsumerVersion: "v7", Logger: discard(),
	})
	m := msg("m-1", `{"version":2,"pedido_id":"P1"}`)
	m.MessageAttributes = map[string]events.SQSMessageAttribute{}
	for i := range 8 {
		v := "valor-" + itoa(i)
		m.MessageAttributes["attr"+itoa(i)] = events.SQSMessageAttribute{DataType: "String", StringValue: &v}
	}
	for round := 1; round <= 3; round++ {
		if resp, _ := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{m}}); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("round %d: failures = %v", round, resp.BatchItemFailures)
		}
		dlq := e.dlq(t)
		got := dlq[len(dlq)-1].MessageAttributes
		orig, err := sqsbatch.OriginalAttributes(got)
		if err != nil {
			t.Fatal(err)
		}
		if len(orig) != 8 {
			t.Fatalf("round %d: %d original attributes survive, want 8: %v", round, len(orig), orig)
		}
		// The move task redrives the DLQ message with every attribute as is.
		m = msg("m-1-redriven-"+itoa(round), m.Body)
		m.MessageAttributes = map[string]events.SQSMessageAttribute{}
		for k, a := range got {
			m.MessageAttributes[k] = events.SQSMessageAttribute{DataType: aws.ToString(a.DataType), StringValue: a.StringValue}
		}
	}
}

// Regression: a DLQ send still in flight when the batch hit its hard stop
// was reported for retry AND delivered to the DLQ (the message came back and
// was dead-lettered twice). Now the send's context ends at the hard stop and
// the answer waits for its verdict: one or the other, never both.
func TestDeadLetterAtTheHardStopIsNeverBoth(t *testing.T) {
	e := newEnv(t, false)
	sender := &slowSender{next: e.fake, started: make(chan struct{}, 1), finished: make(chan struct{})}
	p := mustNew(t, sqsbatch.Config{
		Handler: sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error { return nil }),
		DLQ:     sender, DLQRoutes: e.routes, Logger: discard(),
		DeadlineMargin: 400 * time.Millisecond,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// version 2: poison at once, so the only slow part is the DLQ send.
	resp, err := p.Process(ctx, events.SQSEvent{Records: []events.SQSMessage{msg("p", `{"version":2,"pedido_id":"P1"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-sender.started:
	default:
		t.Fatal("the DLQ send never started")
	}
	select { // the send may outlive Process: judge its final effect
	case <-sender.finished:
	case <-time.After(10 * time.Second):
		t.Fatal("the DLQ send never finished")
	}
	inDLQ := len(e.dlq(t)) == 1
	retried := slices.Contains(failedIDs(resp), "p")
	if inDLQ == retried {
		t.Fatalf("dead-lettered %v and reported for retry %v: want exactly one", inDLQ, retried)
	}
}

// slowSender is a DLQ whose SendMessage is accepted only when its context
// ends (an SQS call that succeeds at the last moment).
type slowSender struct {
	next     sqsbatch.Sender
	started  chan struct{}
	finished chan struct{}
}

func (s *slowSender) SendMessage(ctx context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s.started <- struct{}{}
	defer close(s.finished)
	<-ctx.Done()
	return s.next.SendMessage(context.WithoutCancel(ctx), in)
}

// With DLQ routes (a function consuming several queues), each poison record
// goes to the DLQ of the queue it came from; a record from a queue without a
// route is reported for retry (the queue's redrive then moves it).
func TestDLQRoutesSendEachRecordToItsOwnQueuesDLQ(t *testing.T) {
	e := newEnv(t, false)
	otherDLQ, err := e.fake.CreateQueue("mercadofresco-aviso-erp-fallidos", localaws.QueueConfig{})
	if err != nil {
		t.Fatal(err)
	}
	p := mustNew(t, sqsbatch.Config{
		Handler: sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error { return nil }),
		DLQ:     e.fake, Logger: discard(),
		DLQRoutes: lambdaapi.DLQRoutes{
			"cola-mercadofresco-pedidos":   e.dlqURL,
			"cola-mercadofresco-aviso-erp": otherDLQ,
		},
	})
	from := func(id, queue string) events.SQSMessage {
		m := msg(id, `{"version":2,"pedido_id":"P1"}`)
		m.EventSourceARN = "arn:aws:sqs:eu-west-1:000000000000:" + queue
		return m
	}
	resp, _ := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		from("a", "cola-mercadofresco-pedidos"), from("b", "cola-mercadofresco-aviso-erp"), from("c", "cola-sin-ruta"),
	}})
	if !slices.Equal(failedIDs(resp), []string{"c"}) {
		t.Fatalf("failures = %v, want only the record without a route", failedIDs(resp))
	}
	pedidos, _ := e.fake.Inspect(e.dlqURL)
	erp, _ := e.fake.Inspect(otherDLQ)
	if len(pedidos) != 1 || attr(pedidos[0], sqsbatch.AttrOriginalMessageID) != "a" || len(erp) != 1 || attr(erp[0], sqsbatch.AttrOriginalMessageID) != "b" {
		t.Fatalf("pedidos DLQ %d, ERP DLQ %d: each record must reach its own queue's DLQ", len(pedidos), len(erp))
	}
}

// TestFailedRecordsReturnJittered: 40 records that fail together come back
// spread over [d/2, d] of their wait (the queue's visibility timeout, a
// RetryAfter mark), never before a Retry-After the dependency sent; without
// Visibility the queue's own timeout applies.
func TestFailedRecordsReturnJittered(t *testing.T) {
	throttled := &retry.StatusError{StatusCode: 429, RetryAfter: 200 * time.Second}
	for _, tc := range []struct {
		name          string
		err           error
		visibility    bool
		lo, hi, floor time.Duration
	}{
		{"plain failure, the queue's 60 s", errors.New("503"), true, 30 * time.Second, 60 * time.Second, 0},
		{"deferred 300 s", failure.RetryAfter(errors.New("circuit open"), 300*time.Second), true, 150 * time.Second, 300 * time.Second, 0},
		{"throttled, Retry-After 200 s", failure.RetryAfter(fmt.Errorf("erp: %w", throttled), 240*time.Second), true, 120 * time.Second, 240 * time.Second, 200 * time.Second},
		{"no Visibility: the queue's timeout", errors.New("503"), false, 120 * time.Second, 120 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := retry.NewVirtualClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
			f := localaws.NewSQS(localaws.SQSConfig{Now: clk.Now})
			url, _ := f.CreateQueue("cola-mercadofresco-erp", localaws.QueueConfig{VisibilityTimeout: 120 * time.Second})
			for i := range 40 {
				_, _ = f.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(order(fmt.Sprint(i)))})
			}
			var ev events.SQSEvent
			for range 4 {
				part, _ := f.Receive(context.Background(), url, f.ARN(url), 10)
				ev.Records = append(ev.Records, part.Records...)
			}
			cfg := sqsbatch.Config{Logger: discard(), ReturnAfter: 60 * time.Second, Rand: testseed.New(t),
				Handler: sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error { return tc.err })}
			if tc.visibility {
				cfg.Visibility = f
			}
			if resp, _ := mustNew(t, cfg).Process(context.Background(), ev); len(resp.BatchItemFailures) != 40 {
				t.Fatalf("%d failures, want 40", len(resp.BatchItemFailures))
			}
			st, _ := f.Inspect(url)
			seen := map[time.Duration]bool{}
			for _, m := range st {
				in := m.VisibleAt.Sub(clk.Now())
				seen[in] = true
				if in < tc.lo-time.Second || in > tc.hi+time.Second || in < tc.floor {
					t.Errorf("%s back in %s, want %s..%s, not before %s", m.MessageID, in, tc.lo, tc.hi, tc.floor)
				}
			}
			if spread := tc.lo != tc.hi && tc.floor == 0; spread && len(seen) < 10 {
				t.Errorf("40 records come back at %d distinct times: not jittered", len(seen))
			}
		})
	}
}
