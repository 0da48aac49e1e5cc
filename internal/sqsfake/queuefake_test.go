package sqsfake_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mercadofresco/integration/internal/sqsfake"
	"github.com/mercadofresco/integration/lambdas/queue"
	"github.com/mercadofresco/integration/lambdas/retry"
)

var t0 = time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC) // a Sunday night

func newFake(t *testing.T) (*sqsfake.Fake, *retry.VirtualClock) {
	t.Helper()
	clk := retry.NewVirtualClock(t0)
	return sqsfake.New(sqsfake.WithClock(clk.Now)), clk
}

func mustCreate(t *testing.T, f *sqsfake.Fake, name string, cfg sqsfake.QueueConfig) string {
	t.Helper()
	url, err := f.CreateQueue(name, cfg)
	if err != nil {
		t.Fatalf("CreateQueue(%s): %v", name, err)
	}
	return url
}

func send(t *testing.T, f *sqsfake.Fake, in queue.SendMessageInput) string {
	t.Helper()
	out, err := f.SendMessage(context.Background(), &in)
	if err != nil {
		t.Fatalf("SendMessage(%q): %v", in.Body, err)
	}
	return out.MessageID
}

func receive(t *testing.T, f *sqsfake.Fake, url string, max int) []queue.Message {
	t.Helper()
	msgs, err := f.ReceiveMessage(context.Background(), &queue.ReceiveMessageInput{QueueURL: url, MaxMessages: max})
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	return msgs
}

func bodies(msgs []queue.Message) string {
	var b []string
	for _, m := range msgs {
		b = append(b, m.Body)
	}
	return strings.Join(b, ",")
}

func TestVisibilityTimeoutAndReceiveCount(t *testing.T) {
	f, clk := newFake(t)
	url := mustCreate(t, f, "cola", sqsfake.QueueConfig{VisibilityTimeout: 400 * time.Second})
	id := send(t, f, queue.SendMessageInput{QueueURL: url, Body: `{"pedido_id":"P1"}`})

	first := receive(t, f, url, 10)
	if len(first) != 1 || first[0].MessageID != id || first[0].ReceiveCount() != 1 {
		t.Fatalf("first receive = %+v, want %s with count 1", first, id)
	}
	if got := first[0].Attributes[queue.AttrSentTimestamp]; got != fmt.Sprint(t0.UnixMilli()) {
		t.Errorf("SentTimestamp = %s, want %d", got, t0.UnixMilli())
	}
	if sum := md5.Sum([]byte(`{"pedido_id":"P1"}`)); first[0].MD5OfBody != hex.EncodeToString(sum[:]) {
		t.Errorf("MD5OfBody = %q", first[0].MD5OfBody)
	}
	clk.Advance(399 * time.Second)
	if got := receive(t, f, url, 10); len(got) != 0 {
		t.Fatalf("message visible before its visibility timeout: %+v", got)
	}
	clk.Advance(time.Second)
	second := receive(t, f, url, 10)
	if len(second) != 1 || second[0].ReceiveCount() != 2 {
		t.Fatalf("after timeout = %+v, want the message again with count 2", second)
	}
	if second[0].ReceiptHandle == first[0].ReceiptHandle {
		t.Error("a new receive must issue a new receipt handle")
	}
	if a, b := first[0].Attributes[queue.AttrApproximateFirstReceiveTimestamp], second[0].Attributes[queue.AttrApproximateFirstReceiveTimestamp]; a != b {
		t.Errorf("ApproximateFirstReceiveTimestamp changed: %s -> %s", a, b)
	}
	// A receive-time override (the runbook's VisibilityTimeout=5).
	clk.Advance(400 * time.Second)
	msgs, err := f.ReceiveMessage(context.Background(), &queue.ReceiveMessageInput{QueueURL: url, MaxMessages: 1, VisibilityTimeout: 5 * time.Second})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("receive with override: %v %v", msgs, err)
	}
	clk.Advance(5 * time.Second)
	if got := receive(t, f, url, 1); len(got) != 1 || got[0].ReceiveCount() != 4 {
		t.Fatalf("after the 5 s override the message must be back with count 4, got %+v", got)
	}
}

func TestRedriveToDLQ(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			f, clk := newFake(t)
			suffix := ""
			if fifo {
				suffix = ".fifo"
			}
			dlq := mustCreate(t, f, "mercadofresco-pedidos-fallidos"+suffix, sqsfake.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour})
			src := mustCreate(t, f, "cola-mercadofresco-pedidos"+suffix, sqsfake.QueueConfig{
				VisibilityTimeout: 30 * time.Second,
				Redrive:           &sqsfake.RedrivePolicy{DeadLetterTargetARN: f.ARN(dlq), MaxReceiveCount: 4},
			})
			in := queue.SendMessageInput{QueueURL: src, Body: `{"version":2}`,
				MessageAttributes: map[string]queue.Attribute{"tipo": queue.StringAttribute("PedidoConfirmado")}}
			if fifo {
				in.MessageGroupID, in.MessageDeduplicationID = "P1", "d1"
			}
			id := send(t, f, in)
			for i := 1; i <= 4; i++ {
				got := receive(t, f, src, 10)
				if len(got) != 1 || got[0].ReceiveCount() != i {
					t.Fatalf("receive %d = %+v", i, got)
				}
				clk.Advance(30 * time.Second)
			}
			if got := receive(t, f, src, 10); len(got) != 0 {
				t.Fatalf("a 5th receive must move the message, got %+v", got)
			}
			if s := f.Stats(src); s.MovedToDLQ != 1 || s.Received != 4 {
				t.Errorf("source stats = %+v", s)
			}
			states, _ := f.Inspect(dlq)
			if len(states) != 1 || states[0].MessageID != id || states[0].ReceiveCount != 4 || states[0].DLQSourceARN != f.ARN(src) {
				t.Fatalf("DLQ content = %+v", states)
			}
			if fifo && states[0].DeduplicationID != id {
				t.Errorf("FIFO DLQ deduplication id = %q, want the message id %s", states[0].DeduplicationID, id)
			}
			got := receive(t, f, dlq, 10)
			if len(got) != 1 || got[0].ReceiveCount() != 5 {
				t.Fatalf("first DLQ receive = %+v, want receive count 5 (maxReceiveCount 4, as SQS)", got)
			}
			if got[0].Attributes[queue.AttrDeadLetterQueueSourceArn] != f.ARN(src) || got[0].MessageAttributes["tipo"].StringValue != "PedidoConfirmado" {
				t.Errorf("DLQ message lost attributes: %+v", got[0])
			}
			if fifo && got[0].Attributes[queue.AttrMessageGroupID] != "P1" {
				t.Errorf("FIFO DLQ message lost its group: %+v", got[0].Attributes)
			}
		})
	}
}

func TestFIFOGroups(t *testing.T) {
	f, clk := newFake(t)
	url := mustCreate(t, f, "movimientos-stock.fifo", sqsfake.QueueConfig{ContentBasedDeduplication: true})
	for _, m := range []struct{ group, body string }{{"SKU-A", "a1"}, {"SKU-A", "a2"}, {"SKU-B", "b1"}, {"SKU-A", "a3"}, {"SKU-B", "b2"}} {
		send(t, f, queue.SendMessageInput{QueueURL: url, Body: m.body, MessageGroupID: m.group})
	}
	first := receive(t, f, url, 1)
	if bodies(first) != "a1" {
		t.Fatalf("first = %s, want a1", bodies(first))
	}
	// SKU-A has a message in flight: nothing more of it, SKU-B flows.
	if got := bodies(receive(t, f, url, 10)); got != "b1,b2" {
		t.Fatalf("while a1 in flight got %s, want b1,b2", got)
	}
	// a1 not deleted: when its visibility expires it comes back first (order kept).
	clk.Advance(sqsfake.DefaultVisibilityTimeout)
	again := receive(t, f, url, 2)
	if bodies(again) != "a1,a2" || again[0].ReceiveCount() != 2 {
		t.Fatalf("after expiry got %s (count %d), want a1,a2", bodies(again), again[0].ReceiveCount())
	}
	for _, m := range again {
		if err := f.DeleteMessage(context.Background(), url, m.ReceiptHandle); err != nil {
			t.Fatal(err)
		}
	}
	// b1 and b2 were never deleted either: everything visible again, in order.
	got := receive(t, f, url, 10)
	if bodies(got) != "b1,a3,b2" {
		t.Fatalf("after deleting a1,a2 got %s, want b1,a3,b2", bodies(got))
	}
	if got[1].Attributes[queue.AttrSequenceNumber] <= again[1].Attributes[queue.AttrSequenceNumber] {
		t.Errorf("sequence numbers must increase: %s then %s", again[1].Attributes[queue.AttrSequenceNumber], got[1].Attributes[queue.AttrSequenceNumber])
	}
}

func TestFIFORedriveUnblocksGroup(t *testing.T) {
	f, clk := newFake(t)
	dlq := mustCreate(t, f, "dlq.fifo", sqsfake.QueueConfig{})
	src := mustCreate(t, f, "src.fifo", sqsfake.QueueConfig{ContentBasedDeduplication: true,
		Redrive: &sqsfake.RedrivePolicy{DeadLetterTargetARN: f.ARN(dlq), MaxReceiveCount: 1}})
	send(t, f, queue.SendMessageInput{QueueURL: src, Body: "poison", MessageGroupID: "g"})
	send(t, f, queue.SendMessageInput{QueueURL: src, Body: "next", MessageGroupID: "g"})
	if got := bodies(receive(t, f, src, 1)); got != "poison" {
		t.Fatalf("got %s", got)
	}
	clk.Advance(sqsfake.DefaultVisibilityTimeout)
	if got := bodies(receive(t, f, src, 10)); got != "next" {
		t.Fatalf("after the head moved to the DLQ the group must continue, got %q", got)
	}
	if st, _ := f.Inspect(dlq); len(st) != 1 || st[0].Body != "poison" || st[0].GroupID != "g" {
		t.Fatalf("DLQ = %+v", st)
	}
}

func TestFIFODeduplication(t *testing.T) {
	f, clk := newFake(t)
	url := mustCreate(t, f, "q.fifo", sqsfake.QueueConfig{ContentBasedDeduplication: true})
	ctx := context.Background()
	a, _ := f.SendMessage(ctx, &queue.SendMessageInput{QueueURL: url, Body: "x", MessageGroupID: "g", MessageDeduplicationID: "k"})
	clk.Advance(4 * time.Minute)
	b, _ := f.SendMessage(ctx, &queue.SendMessageInput{QueueURL: url, Body: "y", MessageGroupID: "g", MessageDeduplicationID: "k"})
	if a.MessageID != b.MessageID || a.SequenceNumber != b.SequenceNumber {
		t.Errorf("duplicate within 5 min must return the first id: %+v %+v", a, b)
	}
	c, _ := f.SendMessage(ctx, &queue.SendMessageInput{QueueURL: url, Body: "x", MessageGroupID: "g"})
	d, _ := f.SendMessage(ctx, &queue.SendMessageInput{QueueURL: url, Body: "x", MessageGroupID: "g"})
	if c.MessageID != d.MessageID {
		t.Error("content-based deduplication did not deduplicate")
	}
	clk.Advance(5 * time.Minute)
	e, _ := f.SendMessage(ctx, &queue.SendMessageInput{QueueURL: url, Body: "z", MessageGroupID: "g", MessageDeduplicationID: "k"})
	if e.MessageID == a.MessageID {
		t.Error("after the 5-minute window the id must be accepted again")
	}
	if s := f.Stats(url); s.Sent != 3 || s.Deduplicated != 2 {
		t.Errorf("stats = %+v, want 3 sent, 2 deduplicated", s)
	}
}

func TestSendValidation(t *testing.T) {
	f, _ := newFake(t)
	std := mustCreate(t, f, "std", sqsfake.QueueConfig{MaxMessageSize: 1024})
	fifo := mustCreate(t, f, "f.fifo", sqsfake.QueueConfig{})
	attrs := func(n int) map[string]queue.Attribute {
		m := map[string]queue.Attribute{}
		for i := range n {
			m[fmt.Sprintf("a%d", i)] = queue.StringAttribute("v")
		}
		return m
	}
	tests := []struct {
		name string
		in   queue.SendMessageInput
		ok   bool
	}{
		{"ok", queue.SendMessageInput{QueueURL: std, Body: "x", MessageAttributes: attrs(10)}, true},
		{"custom type", queue.SendMessageInput{QueueURL: std, Body: "x", MessageAttributes: map[string]queue.Attribute{"n": {DataType: "Number.int", StringValue: "-12.5"}}}, true},
		{"binary", queue.SendMessageInput{QueueURL: std, Body: "x", MessageAttributes: map[string]queue.Attribute{"b": {DataType: "Binary", BinaryValue: []byte{0}}}}, true},
		{"11 attributes", queue.SendMessageInput{QueueURL: std, Body: "x", MessageAttributes: attrs(11)}, false},
		{"empty body", queue.SendMessageInput{QueueURL: std, Body: ""}, false},
		{"NUL in body", queue.SendMessageInput{QueueURL: std, Body: "a\x00b"}, false},
		{"invalid UTF-8", queue.SendMessageInput{QueueURL: std, Body: "\xff"}, false},
		{"too large", queue.SendMessageInput{QueueURL: std, Body: strings.Repeat("x", 1025)}, false},
		{"attributes count in size", queue.SendMessageInput{QueueURL: std, Body: strings.Repeat("x", 1020), MessageAttributes: attrs(1)}, false},
		{"reserved name", queue.SendMessageInput{QueueURL: std, Body: "x", MessageAttributes: map[string]queue.Attribute{"AWS.trace": queue.StringAttribute("v")}}, false},
		{"bad name", queue.SendMessageInput{QueueURL: std, Body: "x", MessageAttributes: map[string]queue.Attribute{"a b": queue.StringAttribute("v")}}, false},
		{"double period", queue.SendMessageInput{QueueURL: std, Body: "x", MessageAttributes: map[string]queue.Attribute{"a..b": queue.StringAttribute("v")}}, false},
		{"empty value", queue.SendMessageInput{QueueURL: std, Body: "x", MessageAttributes: map[string]queue.Attribute{"a": {DataType: "String"}}}, false},
		{"bad type", queue.SendMessageInput{QueueURL: std, Body: "x", MessageAttributes: map[string]queue.Attribute{"a": {DataType: "Json", StringValue: "{}"}}}, false},
		{"bad number", queue.SendMessageInput{QueueURL: std, Body: "x", MessageAttributes: map[string]queue.Attribute{"a": {DataType: "Number", StringValue: "doce"}}}, false},
		{"dedup id on standard", queue.SendMessageInput{QueueURL: std, Body: "x", MessageDeduplicationID: "d"}, false},
		{"delay too long", queue.SendMessageInput{QueueURL: std, Body: "x", Delay: 16 * time.Minute}, false},
		{"fifo ok", queue.SendMessageInput{QueueURL: fifo, Body: "x", MessageGroupID: "g", MessageDeduplicationID: "d"}, true},
		{"fifo without group", queue.SendMessageInput{QueueURL: fifo, Body: "x", MessageDeduplicationID: "d2"}, false},
		{"fifo without dedup id", queue.SendMessageInput{QueueURL: fifo, Body: "x", MessageGroupID: "g"}, false},
		{"fifo per-message delay", queue.SendMessageInput{QueueURL: fifo, Body: "x", MessageGroupID: "g", MessageDeduplicationID: "d3", Delay: time.Second}, false},
		{"unknown queue", queue.SendMessageInput{QueueURL: std + "-no", Body: "x"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.SendMessage(context.Background(), &tt.in)
			if tt.ok && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !tt.ok && !errors.Is(err, queue.ErrInvalidParameter) && !errors.Is(err, queue.ErrQueueNotFound) {
				t.Fatalf("err = %v, want ErrInvalidParameter or ErrQueueNotFound", err)
			}
		})
	}
}

func TestCreateQueueValidation(t *testing.T) {
	f, _ := newFake(t)
	stdDLQ := mustCreate(t, f, "dlq", sqsfake.QueueConfig{})
	fifoDLQ := mustCreate(t, f, "dlq.fifo", sqsfake.QueueConfig{})
	tests := []struct {
		name string
		cfg  sqsfake.QueueConfig
		q    string
	}{
		{"fifo with standard DLQ", sqsfake.QueueConfig{Redrive: &sqsfake.RedrivePolicy{DeadLetterTargetARN: f.ARN(stdDLQ), MaxReceiveCount: 4}}, "a.fifo"},
		{"standard with FIFO DLQ", sqsfake.QueueConfig{Redrive: &sqsfake.RedrivePolicy{DeadLetterTargetARN: f.ARN(fifoDLQ), MaxReceiveCount: 4}}, "b"},
		{"missing DLQ", sqsfake.QueueConfig{Redrive: &sqsfake.RedrivePolicy{DeadLetterTargetARN: "arn:aws:sqs:eu-west-1:000000000000:nope", MaxReceiveCount: 4}}, "c"},
		{"maxReceiveCount 0", sqsfake.QueueConfig{Redrive: &sqsfake.RedrivePolicy{DeadLetterTargetARN: f.ARN(stdDLQ)}}, "d"},
		{"content dedup on standard", sqsfake.QueueConfig{ContentBasedDeduplication: true}, "e"},
		{"visibility over 12h", sqsfake.QueueConfig{VisibilityTimeout: 13 * time.Hour}, "f"},
		{"duplicate name", sqsfake.QueueConfig{}, "dlq"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := f.CreateQueue(tt.q, tt.cfg); err == nil {
				t.Fatal("CreateQueue accepted an invalid configuration")
			}
		})
	}
}

func TestDeleteAndStaleHandles(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"std", "q.fifo"} {
		t.Run(name, func(t *testing.T) {
			f, clk := newFake(t)
			url := mustCreate(t, f, name, sqsfake.QueueConfig{ContentBasedDeduplication: strings.HasSuffix(name, ".fifo")})
			send(t, f, queue.SendMessageInput{QueueURL: url, Body: "x", MessageGroupID: "g"})
			old := receive(t, f, url, 1)[0]
			clk.Advance(sqsfake.DefaultVisibilityTimeout) // a slow consumer: another one gets it
			cur := receive(t, f, url, 1)[0]
			err := f.DeleteMessage(ctx, url, old.ReceiptHandle)
			if strings.HasSuffix(name, ".fifo") {
				if !errors.Is(err, queue.ErrReceiptHandleInvalid) {
					t.Fatalf("FIFO stale delete err = %v", err)
				}
			} else {
				if err != nil {
					t.Fatalf("standard stale delete must succeed (SQS), got %v", err)
				}
				if f.Stats(url).StaleDeletes != 1 {
					t.Error("stale delete not counted")
				}
			}
			if st, _ := f.Inspect(url); len(st) != 1 {
				t.Fatal("a stale handle must not delete the message")
			}
			if err := f.DeleteMessage(ctx, url, cur.ReceiptHandle); err != nil {
				t.Fatal(err)
			}
			if err := f.DeleteMessage(ctx, url, cur.ReceiptHandle); err != nil {
				t.Errorf("deleting twice must succeed: %v", err)
			}
			if err := f.DeleteMessage(ctx, url, "garbage"); !errors.Is(err, queue.ErrReceiptHandleInvalid) {
				t.Errorf("unknown handle err = %v", err)
			}
			if st, _ := f.Inspect(url); len(st) != 0 {
				t.Fatalf("message not deleted: %+v", st)
			}
		})
	}
}

func TestChangeMessageVisibility(t *testing.T) {
	ctx := context.Background()
	f, clk := newFake(t)
	url := mustCreate(t, f, "erp", sqsfake.QueueConfig{})
	send(t, f, queue.SendMessageInput{QueueURL: url, Body: "x"})
	m := receive(t, f, url, 1)[0]
	// The ERP notice waits while the breaker is open: back in 300 s.
	if err := f.ChangeMessageVisibility(ctx, url, m.ReceiptHandle, 300*time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Advance(299 * time.Second)
	if got := receive(t, f, url, 1); len(got) != 0 {
		t.Fatal("visible before the changed timeout")
	}
	clk.Advance(time.Second)
	m = receive(t, f, url, 1)[0]
	if err := f.ChangeMessageVisibility(ctx, url, m.ReceiptHandle, 0); err != nil {
		t.Fatal(err)
	}
	m2 := receive(t, f, url, 1)
	if len(m2) != 1 {
		t.Fatal("visibility 0 must make the message visible at once")
	}
	if err := f.ChangeMessageVisibility(ctx, url, m.ReceiptHandle, time.Minute); !errors.Is(err, queue.ErrReceiptHandleInvalid) {
		t.Errorf("stale handle err = %v", err)
	}
	clk.Advance(sqsfake.DefaultVisibilityTimeout)
	if err := f.ChangeMessageVisibility(ctx, url, m2[0].ReceiptHandle, time.Minute); !errors.Is(err, queue.ErrMessageNotInflight) {
		t.Errorf("expired handle err = %v, want ErrMessageNotInflight", err)
	}
	if err := f.ChangeMessageVisibility(ctx, url, m2[0].ReceiptHandle, 13*time.Hour); !errors.Is(err, queue.ErrInvalidParameter) {
		t.Errorf("13h err = %v", err)
	}
}

func TestQueueAttributesDelayAndRetention(t *testing.T) {
	ctx := context.Background()
	f, clk := newFake(t)
	dlq := mustCreate(t, f, "dlq", sqsfake.QueueConfig{})
	url := mustCreate(t, f, "q", sqsfake.QueueConfig{VisibilityTimeout: 400 * time.Second,
		Redrive: &sqsfake.RedrivePolicy{DeadLetterTargetARN: f.ARN(dlq), MaxReceiveCount: 5}})
	send(t, f, queue.SendMessageInput{QueueURL: url, Body: "a"})
	send(t, f, queue.SendMessageInput{QueueURL: url, Body: "b"})
	send(t, f, queue.SendMessageInput{QueueURL: url, Body: "later", Delay: time.Minute})
	receive(t, f, url, 1)
	attrs, err := f.GetQueueAttributes(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		queue.QueueAttrApproximateNumberOfMessages:           "1",
		queue.QueueAttrApproximateNumberOfMessagesNotVisible: "1",
		queue.QueueAttrApproximateNumberOfMessagesDelayed:    "1",
		queue.QueueAttrVisibilityTimeout:                     "400",
		queue.QueueAttrMessageRetentionPeriod:                "345600",
		queue.QueueAttrRedrivePolicy:                         `{"deadLetterTargetArn":"` + f.ARN(dlq) + `","maxReceiveCount":5}`,
	}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("%s = %q, want %q", k, attrs[k], v)
		}
	}
	one, err := f.GetQueueAttributes(ctx, url, queue.QueueAttrApproximateNumberOfMessages)
	if err != nil || len(one) != 1 {
		t.Errorf("single attribute: %v %v", one, err)
	}
	if _, err := f.GetQueueAttributes(ctx, url, "Nope"); !errors.Is(err, queue.ErrInvalidParameter) {
		t.Errorf("unknown attribute err = %v", err)
	}
	clk.Advance(time.Minute)
	if got := bodies(receive(t, f, url, 10)); got != "b,later" {
		t.Errorf("after the delay got %q, want b,later", got)
	}
	clk.Advance(4 * 24 * time.Hour)
	if st, _ := f.Inspect(url); len(st) != 0 {
		t.Errorf("messages survived the 4-day retention: %+v", st)
	}
	if f.Stats(url).Expired != 3 {
		t.Errorf("stats = %+v", f.Stats(url))
	}
}

func TestFaultsAndContext(t *testing.T) {
	f, _ := newFake(t)
	url := mustCreate(t, f, "q", sqsfake.QueueConfig{})
	boom := errors.New("throttled")
	f.SetFault(func(op, u string) error {
		if op == "SendMessage" && u == url {
			return boom
		}
		return nil
	})
	if _, err := f.SendMessage(context.Background(), &queue.SendMessageInput{QueueURL: url, Body: "x"}); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if s := f.Stats(url); s.Sent != 0 {
		t.Fatal("a failed send must have no effect")
	}
	f.SetFault(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.ReceiveMessage(ctx, &queue.ReceiveMessageInput{QueueURL: url}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx err = %v", err)
	}
	if _, err := f.ReceiveMessage(context.Background(), &queue.ReceiveMessageInput{QueueURL: url, MaxMessages: 11}); !errors.Is(err, queue.ErrInvalidParameter) {
		t.Fatalf("11 messages err = %v", err)
	}
}

// Many concurrent consumers: while a message is in flight nobody else gets
// it, so with a long visibility timeout every message is handled exactly once.
func TestConcurrentConsumersExactlyOnceWhileInFlight(t *testing.T) {
	f, _ := newFake(t)
	url := mustCreate(t, f, "q", sqsfake.QueueConfig{VisibilityTimeout: time.Hour})
	const n = 500
	for i := range n {
		send(t, f, queue.SendMessageInput{QueueURL: url, Body: fmt.Sprint(i)})
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				msgs, err := f.ReceiveMessage(context.Background(), &queue.ReceiveMessageInput{QueueURL: url, MaxMessages: 10})
				if err != nil {
					t.Error(err)
					return
				}
				if len(msgs) == 0 {
					return
				}
				for _, m := range msgs {
					mu.Lock()
					seen[m.Body]++
					mu.Unlock()
					if err := f.DeleteMessage(context.Background(), url, m.ReceiptHandle); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("saw %d distinct messages, want %d", len(seen), n)
	}
	for b, c := range seen {
		if c != 1 {
			t.Fatalf("message %s delivered %d times", b, c)
		}
	}
}

func TestRegionAndAccount(t *testing.T) {
	f := sqsfake.New(sqsfake.WithRegion("eu-south-2"), sqsfake.WithAccount("123456789012"))
	url, err := f.CreateQueue("cola-mercadofresco-pedidos", sqsfake.QueueConfig{})
	if err != nil {
		t.Fatal(err)
	}
	arn := f.ARN(url)
	a, err := queue.ParseARN(arn)
	if err != nil || a.URL() != url || f.Region() != "eu-south-2" {
		t.Fatalf("url %s arn %s (%v)", url, arn, err)
	}
	if got := f.QueueURLs(); len(got) != 1 || got[0] != url {
		t.Errorf("QueueURLs = %v", got)
	}
	// The wall clock is the default: a real receive works without a clock of its own.
	if _, err := f.SendMessage(context.Background(), &queue.SendMessageInput{QueueURL: url, Body: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, f, url, 1); len(got) != 1 {
		t.Fatal("no message")
	}
}
