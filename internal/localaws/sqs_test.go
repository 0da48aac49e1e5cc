package localaws_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/retry"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

var t0 = time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC) // a Sunday night

func newFake(t *testing.T) (*localaws.SQS, *retry.VirtualClock) {
	t.Helper()
	clk := retry.NewVirtualClock(t0)
	return localaws.NewSQS(localaws.SQSConfig{Now: clk.Now}), clk
}

func mustCreate(t *testing.T, f *localaws.SQS, name string, cfg localaws.QueueConfig) string {
	t.Helper()
	url, err := f.CreateQueue(name, cfg)
	if err != nil {
		t.Fatalf("CreateQueue(%s): %v", name, err)
	}
	return url
}

func send(t *testing.T, f *localaws.SQS, in sqs.SendMessageInput) string {
	t.Helper()
	out, err := f.SendMessage(context.Background(), &in)
	if err != nil {
		t.Fatalf("SendMessage(%q): %v", aws.ToString(in.MessageBody), err)
	}
	return *out.MessageId
}

func receive(t *testing.T, f *localaws.SQS, url string, max int) []types.Message {
	t.Helper()
	out, err := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: int32(max), MessageSystemAttributeNames: allSystem, MessageAttributeNames: allAttrs})
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	return out.Messages
}

func bodies(msgs []types.Message) string {
	var b []string
	for _, m := range msgs {
		b = append(b, aws.ToString(m.Body))
	}
	return strings.Join(b, ",")
}

func TestVisibilityTimeoutAndReceiveCount(t *testing.T) {
	f, clk := newFake(t)
	url := mustCreate(t, f, "cola", localaws.QueueConfig{VisibilityTimeout: 400 * time.Second})
	id := send(t, f, sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(`{"pedido_id":"P1"}`)})

	first := receive(t, f, url, 10)
	if len(first) != 1 || aws.ToString(first[0].MessageId) != id || receiveCount(first[0]) != 1 {
		t.Fatalf("first receive = %+v, want %s with count 1", first, id)
	}
	if got := first[0].Attributes[string(types.MessageSystemAttributeNameSentTimestamp)]; got != fmt.Sprint(t0.UnixMilli()) {
		t.Errorf("SentTimestamp = %s, want %d", got, t0.UnixMilli())
	}
	if sum := md5.Sum([]byte(`{"pedido_id":"P1"}`)); aws.ToString(first[0].MD5OfBody) != hex.EncodeToString(sum[:]) {
		t.Errorf("MD5OfBody = %q", *first[0].MD5OfBody)
	}
	clk.Advance(399 * time.Second)
	if got := receive(t, f, url, 10); len(got) != 0 {
		t.Fatalf("message visible before its visibility timeout: %+v", got)
	}
	clk.Advance(time.Second)
	second := receive(t, f, url, 10)
	if len(second) != 1 || receiveCount(second[0]) != 2 {
		t.Fatalf("after timeout = %+v, want the message again with count 2", second)
	}
	if *second[0].ReceiptHandle == *first[0].ReceiptHandle {
		t.Error("a new receive must issue a new receipt handle")
	}
	if a, b := first[0].Attributes[string(types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp)], second[0].Attributes[string(types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp)]; a != b {
		t.Errorf("ApproximateFirstReceiveTimestamp changed: %s -> %s", a, b)
	}
	// A receive-time override (the runbook's VisibilityTimeout=5).
	clk.Advance(400 * time.Second)
	out, err := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 1, VisibilityTimeout: 5})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive with override: %v %v", out, err)
	}
	clk.Advance(5 * time.Second)
	if got := receive(t, f, url, 1); len(got) != 1 || receiveCount(got[0]) != 4 {
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
			dlq := mustCreate(t, f, "mercadofresco-pedidos-fallidos"+suffix, localaws.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour})
			src := mustCreate(t, f, "cola-mercadofresco-pedidos"+suffix, localaws.QueueConfig{
				VisibilityTimeout: 30 * time.Second,
				Redrive:           &localaws.RedrivePolicy{DeadLetterTargetARN: f.ARN(dlq), MaxReceiveCount: 4},
			})
			in := sqs.SendMessageInput{QueueUrl: &src, MessageBody: aws.String(`{"version":2}`), MessageAttributes: map[string]types.MessageAttributeValue{"tipo": sqsbatch.StringAttribute("PedidoConfirmado")}}
			if fifo {
				in.MessageGroupId, in.MessageDeduplicationId = aws.String("P1"), aws.String("d1")
			}
			id := send(t, f, in)
			for i := 1; i <= 4; i++ {
				got := receive(t, f, src, 10)
				if len(got) != 1 || receiveCount(got[0]) != i {
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
			if len(got) != 1 || receiveCount(got[0]) != 5 {
				t.Fatalf("first DLQ receive = %+v, want receive count 5 (maxReceiveCount 4, as SQS)", got)
			}
			if got[0].Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)] != f.ARN(src) || aws.ToString(got[0].MessageAttributes["tipo"].StringValue) != "PedidoConfirmado" {
				t.Errorf("DLQ message lost attributes: %+v", got[0])
			}
			if fifo && got[0].Attributes[string(types.MessageSystemAttributeNameMessageGroupId)] != "P1" {
				t.Errorf("FIFO DLQ message lost its group: %+v", got[0].Attributes)
			}
		})
	}
}

func TestFIFOGroups(t *testing.T) {
	f, clk := newFake(t)
	url := mustCreate(t, f, "movimientos-stock.fifo", localaws.QueueConfig{ContentBasedDeduplication: true})
	for _, m := range []struct{ group, body string }{{"SKU-A", "a1"}, {"SKU-A", "a2"}, {"SKU-B", "b1"}, {"SKU-A", "a3"}, {"SKU-B", "b2"}} {
		send(t, f, sqs.SendMessageInput{QueueUrl: &url, MessageBody: &m.body, MessageGroupId: &m.group})
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
	clk.Advance(localaws.DefaultVisibilityTimeout)
	again := receive(t, f, url, 2)
	if bodies(again) != "a1,a2" || receiveCount(again[0]) != 2 {
		t.Fatalf("after expiry got %s (count %d), want a1,a2", bodies(again), receiveCount(again[0]))
	}
	for _, m := range again {
		if err := deleteMessage(context.Background(), f, url, *m.ReceiptHandle); err != nil {
			t.Fatal(err)
		}
	}
	// b1 and b2 were never deleted either: everything visible again, in order.
	got := receive(t, f, url, 10)
	if bodies(got) != "b1,a3,b2" {
		t.Fatalf("after deleting a1,a2 got %s, want b1,a3,b2", bodies(got))
	}
	if got[1].Attributes[string(types.MessageSystemAttributeNameSequenceNumber)] <= again[1].Attributes[string(types.MessageSystemAttributeNameSequenceNumber)] {
		t.Errorf("sequence numbers must increase: %s then %s", again[1].Attributes[string(types.MessageSystemAttributeNameSequenceNumber)], got[1].Attributes[string(types.MessageSystemAttributeNameSequenceNumber)])
	}
}

func TestFIFORedriveUnblocksGroup(t *testing.T) {
	f, clk := newFake(t)
	dlq := mustCreate(t, f, "dlq.fifo", localaws.QueueConfig{})
	src := mustCreate(t, f, "src.fifo", localaws.QueueConfig{ContentBasedDeduplication: true,
		Redrive: &localaws.RedrivePolicy{DeadLetterTargetARN: f.ARN(dlq), MaxReceiveCount: 1}})
	send(t, f, sqs.SendMessageInput{QueueUrl: &src, MessageBody: aws.String("poison"), MessageGroupId: aws.String("g")})
	send(t, f, sqs.SendMessageInput{QueueUrl: &src, MessageBody: aws.String("next"), MessageGroupId: aws.String("g")})
	if got := bodies(receive(t, f, src, 1)); got != "poison" {
		t.Fatalf("got %s", got)
	}
	clk.Advance(localaws.DefaultVisibilityTimeout)
	if got := bodies(receive(t, f, src, 10)); got != "next" {
		t.Fatalf("after the head moved to the DLQ the group must continue, got %q", got)
	}
	if st, _ := f.Inspect(dlq); len(st) != 1 || st[0].Body != "poison" || st[0].GroupID != "g" {
		t.Fatalf("DLQ = %+v", st)
	}
}

func TestFIFODeduplication(t *testing.T) {
	f, clk := newFake(t)
	url := mustCreate(t, f, "q.fifo", localaws.QueueConfig{ContentBasedDeduplication: true})
	ctx := context.Background()
	a, _ := f.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("k")})
	clk.Advance(4 * time.Minute)
	b, _ := f.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("y"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("k")})
	if aws.ToString(a.MessageId) != aws.ToString(b.MessageId) || aws.ToString(a.SequenceNumber) != aws.ToString(b.SequenceNumber) {
		t.Errorf("duplicate within 5 min must return the first id: %+v %+v", a, b)
	}
	c, _ := f.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x"), MessageGroupId: aws.String("g")})
	d, _ := f.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x"), MessageGroupId: aws.String("g")})
	if aws.ToString(c.MessageId) != aws.ToString(d.MessageId) {
		t.Error("content-based deduplication did not deduplicate")
	}
	clk.Advance(5 * time.Minute)
	e, _ := f.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("z"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("k")})
	if aws.ToString(e.MessageId) == aws.ToString(a.MessageId) {
		t.Error("after the 5-minute window the id must be accepted again")
	}
	if s := f.Stats(url); s.Sent != 3 {
		t.Errorf("stats = %+v, want 3 sent (2 deduplicated)", s)
	}
}

func TestSendValidation(t *testing.T) {
	f, _ := newFake(t)
	std := mustCreate(t, f, "std", localaws.QueueConfig{MaxMessageSize: 1024})
	fifo := mustCreate(t, f, "f.fifo", localaws.QueueConfig{})
	attrs := func(n int) map[string]types.MessageAttributeValue {
		m := map[string]types.MessageAttributeValue{}
		for i := range n {
			m[fmt.Sprintf("a%d", i)] = sqsbatch.StringAttribute("v")
		}
		return m
	}
	tests := []struct {
		name string
		in   sqs.SendMessageInput
		ok   bool
	}{
		{"ok", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("x"), MessageAttributes: attrs(10)}, true},
		{"custom type", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("x"), MessageAttributes: map[string]types.MessageAttributeValue{"n": {DataType: aws.String("Number.int"), StringValue: aws.String("-12.5")}}}, true},
		{"binary", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("x"), MessageAttributes: map[string]types.MessageAttributeValue{"b": {DataType: aws.String("Binary"), BinaryValue: []byte{0}}}}, true},
		{"11 attributes", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("x"), MessageAttributes: attrs(11)}, false},
		{"empty body", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("")}, false},
		{"NUL in body", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("a\x00b")}, false},
		{"invalid UTF-8", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("\xff")}, false},
		{"too large", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String(strings.Repeat("x", 1025))}, false},
		{"attributes count in size", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String(strings.Repeat("x", 1020)), MessageAttributes: attrs(1)}, false},
		{"reserved name", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("x"), MessageAttributes: map[string]types.MessageAttributeValue{"AWS.trace": sqsbatch.StringAttribute("v")}}, false},
		{"bad name", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("x"), MessageAttributes: map[string]types.MessageAttributeValue{"a b": sqsbatch.StringAttribute("v")}}, false},
		{"leading period", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("x"), MessageAttributes: map[string]types.MessageAttributeValue{".a": sqsbatch.StringAttribute("v")}}, false},
		{"double period", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("x"), MessageAttributes: map[string]types.MessageAttributeValue{"a..b": sqsbatch.StringAttribute("v")}}, false},
		{"empty value", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("x"), MessageAttributes: map[string]types.MessageAttributeValue{"a": {DataType: aws.String("String")}}}, false},
		{"bad type", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("x"), MessageAttributes: map[string]types.MessageAttributeValue{"a": {DataType: aws.String("Json"), StringValue: aws.String("{}")}}}, false},
		{"bad number", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("x"), MessageAttributes: map[string]types.MessageAttributeValue{"a": {DataType: aws.String("Number"), StringValue: aws.String("doce")}}}, false},
		{"dedup id on standard", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("x"), MessageDeduplicationId: aws.String("d")}, false},
		{"delay too long", sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("x"), DelaySeconds: int32(16 * time.Minute / time.Second)}, false},
		{"fifo ok", sqs.SendMessageInput{QueueUrl: &fifo, MessageBody: aws.String("x"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d")}, true},
		{"fifo group with a space", sqs.SendMessageInput{QueueUrl: &fifo, MessageBody: aws.String("x"), MessageGroupId: aws.String("g 1"), MessageDeduplicationId: aws.String("d4")}, false},
		{"fifo without group", sqs.SendMessageInput{QueueUrl: &fifo, MessageBody: aws.String("x"), MessageDeduplicationId: aws.String("d2")}, false},
		{"fifo without dedup id", sqs.SendMessageInput{QueueUrl: &fifo, MessageBody: aws.String("x"), MessageGroupId: aws.String("g")}, false},
		{"fifo per-message delay", sqs.SendMessageInput{QueueUrl: &fifo, MessageBody: aws.String("x"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d3"), DelaySeconds: int32(time.Second / time.Second)}, false},
		{"unknown queue", sqs.SendMessageInput{QueueUrl: aws.String(std + "-no"), MessageBody: aws.String("x")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.SendMessage(context.Background(), &tt.in)
			if tt.ok && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			var api smithy.APIError
			if !tt.ok && (!errors.As(err, &api) || api.ErrorFault() != smithy.FaultClient) {
				t.Fatalf("err = %v, want an SQS error of the sender", err)
			}
		})
	}
}

func TestCreateQueueValidation(t *testing.T) {
	f, _ := newFake(t)
	stdDLQ := mustCreate(t, f, "dlq", localaws.QueueConfig{})
	fifoDLQ := mustCreate(t, f, "dlq.fifo", localaws.QueueConfig{})
	tests := []struct {
		name string
		cfg  localaws.QueueConfig
		q    string
	}{
		{"fifo with standard DLQ", localaws.QueueConfig{Redrive: &localaws.RedrivePolicy{DeadLetterTargetARN: f.ARN(stdDLQ), MaxReceiveCount: 4}}, "a.fifo"},
		{"standard with FIFO DLQ", localaws.QueueConfig{Redrive: &localaws.RedrivePolicy{DeadLetterTargetARN: f.ARN(fifoDLQ), MaxReceiveCount: 4}}, "b"},
		{"missing DLQ", localaws.QueueConfig{Redrive: &localaws.RedrivePolicy{DeadLetterTargetARN: "arn:aws:sqs:eu-west-1:000000000000:nope", MaxReceiveCount: 4}}, "c"},
		{"maxReceiveCount 0", localaws.QueueConfig{Redrive: &localaws.RedrivePolicy{DeadLetterTargetARN: f.ARN(stdDLQ)}}, "d"},
		{"content dedup on standard", localaws.QueueConfig{ContentBasedDeduplication: true}, "e"},
		{"visibility over 12h", localaws.QueueConfig{VisibilityTimeout: 13 * time.Hour}, "f"},
		{"duplicate name", localaws.QueueConfig{}, "dlq"},
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
			url := mustCreate(t, f, name, localaws.QueueConfig{ContentBasedDeduplication: strings.HasSuffix(name, ".fifo")})
			send(t, f, sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x"), MessageGroupId: aws.String("g")})
			old := receive(t, f, url, 1)[0]
			clk.Advance(localaws.DefaultVisibilityTimeout) // a slow consumer: another one gets it
			cur := receive(t, f, url, 1)[0]
			err := deleteMessage(ctx, f, url, aws.ToString(old.ReceiptHandle))
			if strings.HasSuffix(name, ".fifo") {
				if errorCode(err) != "ReceiptHandleIsInvalid" {
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
			if err := deleteMessage(ctx, f, url, aws.ToString(cur.ReceiptHandle)); err != nil {
				t.Fatal(err)
			}
			if err := deleteMessage(ctx, f, url, aws.ToString(cur.ReceiptHandle)); err != nil {
				t.Errorf("deleting twice must succeed: %v", err)
			}
			if err := deleteMessage(ctx, f, url, "garbage"); errorCode(err) != "ReceiptHandleIsInvalid" {
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
	url := mustCreate(t, f, "erp", localaws.QueueConfig{})
	send(t, f, sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x")})
	m := receive(t, f, url, 1)[0]
	// The ERP notice waits while the breaker is open: back in 300 s.
	if err := changeVisibility(ctx, f, url, aws.ToString(m.ReceiptHandle), 300*time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Advance(299 * time.Second)
	if got := receive(t, f, url, 1); len(got) != 0 {
		t.Fatal("visible before the changed timeout")
	}
	clk.Advance(time.Second)
	m = receive(t, f, url, 1)[0]
	if err := changeVisibility(ctx, f, url, aws.ToString(m.ReceiptHandle), 0); err != nil {
		t.Fatal(err)
	}
	m2 := receive(t, f, url, 1)
	if len(m2) != 1 {
		t.Fatal("visibility 0 must make the message visible at once")
	}
	if err := changeVisibility(ctx, f, url, aws.ToString(m.ReceiptHandle), time.Minute); errorCode(err) != "ReceiptHandleIsInvalid" {
		t.Errorf("stale handle err = %v", err)
	}
	clk.Advance(localaws.DefaultVisibilityTimeout)
	if err := changeVisibility(ctx, f, url, aws.ToString(m2[0].ReceiptHandle), time.Minute); errorCode(err) != "MessageNotInflight" {
		t.Errorf("expired handle err = %v, want ErrMessageNotInflight", err)
	}
	if err := changeVisibility(ctx, f, url, aws.ToString(m2[0].ReceiptHandle), 13*time.Hour); errorCode(err) != "InvalidParameterValue" {
		t.Errorf("13h err = %v", err)
	}
}

func TestQueueAttributesDelayAndRetention(t *testing.T) {
	ctx := context.Background()
	f, clk := newFake(t)
	dlq := mustCreate(t, f, "dlq", localaws.QueueConfig{})
	url := mustCreate(t, f, "q", localaws.QueueConfig{VisibilityTimeout: 400 * time.Second,
		Redrive: &localaws.RedrivePolicy{DeadLetterTargetARN: f.ARN(dlq), MaxReceiveCount: 5}})
	send(t, f, sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("a")})
	send(t, f, sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("b")})
	send(t, f, sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("later"), DelaySeconds: int32(time.Minute / time.Second)})
	receive(t, f, url, 1)
	attrs, err := queueAttributes(ctx, f, url)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		string(types.QueueAttributeNameApproximateNumberOfMessages):           "1",
		string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible): "1",
		string(types.QueueAttributeNameApproximateNumberOfMessagesDelayed):    "1",
		string(types.QueueAttributeNameVisibilityTimeout):                     "400",
		string(types.QueueAttributeNameMessageRetentionPeriod):                "345600",
		string(types.QueueAttributeNameRedrivePolicy):                         `{"deadLetterTargetArn":"` + f.ARN(dlq) + `","maxReceiveCount":5}`,
	}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("%s = %q, want %q", k, attrs[k], v)
		}
	}
	one, err := queueAttributes(ctx, f, url, types.QueueAttributeNameApproximateNumberOfMessages)
	if err != nil || len(one) != 1 {
		t.Errorf("single attribute: %v %v", one, err)
	}
	if _, err := queueAttributes(ctx, f, url, "Nope"); errorCode(err) != "InvalidAttributeName" {
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
}

func TestFaultsAndContext(t *testing.T) {
	f, _ := newFake(t)
	url := mustCreate(t, f, "q", localaws.QueueConfig{})
	boom := errors.New("throttled")
	f.SetFault(func(op, u string) error {
		if op == "SendMessage" && u == url {
			return boom
		}
		return nil
	})
	if _, err := f.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x")}); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if s := f.Stats(url); s.Sent != 0 {
		t.Fatal("a failed send must have no effect")
	}
	f.SetFault(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MessageSystemAttributeNames: allSystem, MessageAttributeNames: allAttrs}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx err = %v", err)
	}
	if _, err := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 11, MessageSystemAttributeNames: allSystem, MessageAttributeNames: allAttrs}); errorCode(err) != "InvalidParameterValue" {
		t.Fatalf("11 messages err = %v", err)
	}
}

// Many concurrent consumers: while a message is in flight nobody else gets
// it, so with a long visibility timeout every message is handled exactly once.
func TestConcurrentConsumersExactlyOnceWhileInFlight(t *testing.T) {
	f, _ := newFake(t)
	url := mustCreate(t, f, "q", localaws.QueueConfig{VisibilityTimeout: time.Hour})
	const n = 500
	for i := range n {
		send(t, f, sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(fmt.Sprint(i))})
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				out, err := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10})
				if err != nil {
					t.Error(err)
					return
				}
				if len(out.Messages) == 0 {
					return
				}
				for _, m := range out.Messages {
					mu.Lock()
					seen[*m.Body]++
					mu.Unlock()
					if err := deleteMessage(context.Background(), f, url, *m.ReceiptHandle); err != nil {
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
	f := localaws.NewSQS(localaws.SQSConfig{Region: "eu-south-2", Account: "123456789012"})
	url, err := f.CreateQueue("cola-mercadofresco-pedidos", localaws.QueueConfig{})
	if err != nil {
		t.Fatal(err)
	}
	arn := f.ARN(url)
	u, err := sqsbatch.QueueURL(arn)
	if err != nil || u != url || f.Region() != "eu-south-2" {
		t.Fatalf("url %s arn %s (%v)", url, arn, err)
	}
	// The wall clock is the default: a real receive works without a clock of its own.
	if _, err := f.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x")}); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, f, url, 1); len(got) != 1 {
		t.Fatal("no message")
	}
}

var (
	allSystem = []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}
	allAttrs  = []string{"All"}
)

// receiveCount is m's ApproximateReceiveCount.
func receiveCount(m types.Message) int {
	n, _ := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	return n
}

// errorCode is the SQS error code of err, "" when it has none.
func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

func deleteMessage(ctx context.Context, f *localaws.SQS, url, handle string) error {
	_, err := f.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: &handle})
	return err
}

func changeVisibility(ctx context.Context, f *localaws.SQS, url, handle string, d time.Duration) error {
	_, err := f.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &url, ReceiptHandle: &handle, VisibilityTimeout: int32(d / time.Second)})
	return err
}

func queueAttributes(ctx context.Context, f *localaws.SQS, url string, names ...types.QueueAttributeName) (map[string]string, error) {
	out, err := f.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: names})
	if err != nil {
		return nil, err
	}
	return out.Attributes, nil
}

// TestMalformedBatchFailsWhole: SendMessageBatch's rules on the request as
// a whole fail the call, each with SQS's error type.
func TestMalformedBatchFailsWhole(t *testing.T) {
	f, _ := newFake(t)
	url := mustCreate(t, f, "cola", localaws.QueueConfig{})
	entries := func(ids ...string) []types.SendMessageBatchRequestEntry {
		var out []types.SendMessageBatchRequestEntry
		for _, id := range ids {
			out = append(out, types.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String("x")})
		}
		return out
	}
	big := entries("a", "b", "c", "d", "e")
	for i := range big {
		big[i].MessageBody = aws.String(strings.Repeat("x", localaws.MaxBatchPayload/4))
	}
	for _, tt := range []struct {
		name    string
		entries []types.SendMessageBatchRequestEntry
		want    any
	}{
		{"eleven entries", entries("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"), new(*types.TooManyEntriesInBatchRequest)},
		{"id with a space", entries("a b"), new(*types.InvalidBatchEntryId)},
		{"repeated id", entries("a", "a"), new(*types.BatchEntryIdsNotDistinct)},
		{"over 1 MiB together", big, new(*types.BatchRequestTooLong)},
	} {
		_, err := f.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: &url, Entries: tt.entries})
		if !errors.As(err, tt.want) {
			t.Errorf("%s: %v, want %T", tt.name, err, tt.want)
		}
	}
	if st, _ := f.Inspect(url); len(st) != 0 {
		t.Errorf("a malformed batch enqueued %d messages", len(st))
	}
}
