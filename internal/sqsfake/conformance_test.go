package sqsfake_test

// The conformance suite: every test body runs twice, through the real
// aws-sdk-go-v2 SQS client, once against the fake (served by sqsserver) and
// once against fauxqs, an independent emulator (fauxqstest, one process for
// the package, started in TestMain). Both clocks are virtual and start at
// t0. Where the two differ, the test asserts what SQS's documentation says
// on the side that matches it, and the documented divergence (the
// divergences table below, listed in docs/design.md#sqs-fake) on the other:
// if fauxqs changes, the test fails and the table is revisited.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/mercadofresco/integration/internal/sqsfake"
	"github.com/mercadofresco/integration/internal/sqsfake/fauxqstest"
	"github.com/mercadofresco/integration/internal/sqsfake/sqsserver"
	"github.com/mercadofresco/integration/lambdas/queue"
	"github.com/mercadofresco/integration/lambdas/retry"
)

var fauxqs *fauxqstest.Server

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	srv, err := fauxqstest.Launch(ctx, t0)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqsfake: the conformance suite needs fauxqs: %v\n", err)
		os.Exit(1)
	}
	fauxqs = srv
	code := m.Run()
	_ = srv.Close()
	os.Exit(code)
}

// Documented divergences: where a backend departs from SQS's documentation
// (or where SQS documents nothing and the two chose differently). The key
// is what a test passes to backend.diverges.
var divergences = map[string]struct{ backend, what string }{
	"cmv-expired-handle": {"fauxqs", "ChangeMessageVisibility on a handle whose visibility timeout has expired succeeds (and hides the message again) until the next receive; SQS's reference warns that a change after the timeout might fail and names MessageNotInflight for a message not in flight, which is what the fake answers"},
	"dlq-receive-count":  {"fauxqs", "a redriven message arrives in the DLQ with maxReceiveCount+1 (the failed receive counted), so the first DLQ receive shows maxReceiveCount+2; the fake keeps maxReceiveCount (first DLQ receive maxReceiveCount+1). SQS documents no number"},
	"dlq-source-arn":     {"fauxqs", "a redriven message has no DeadLetterQueueSourceArn system attribute; SQS documents it for messages moved to a DLQ, and the fake sets it"},
	"fifo-dlq-dedup-id":  {"fauxqs", "a message redriven to a FIFO DLQ keeps its deduplication id; SQS documents that it is replaced with the message id (so two messages that shared one are not deduplicated in the DLQ), and the fake does so"},
	"fifo-one-per-group": {"fauxqs", "a FIFO receive returns at most one message per group (and one in flight per group); SQS returns as many messages of one group as it can in a single call, as the fake does"},
	"delay-range":        {"fauxqs", "a per-message DelaySeconds over 900 is accepted; SQS allows 0..900, and the fake refuses it"},
	"supplementary-char": {"fauxqs", "a body with a character from U+10000..U+10FFFF (an emoji) is refused as InvalidMessageContents; SQS allows #x10000 to #x10FFFF, and the fake accepts it"},
	"binary-size":        {"fauxqs", "a Binary attribute counts toward the size limit by its base64 length, not its bytes; the fake counts the bytes"},
	"attribute-rules":    {"fauxqs", "message attributes are not validated (more than 10, reserved AWS. prefix, bad names, empty values, unknown types, non-numeric Number); SQS refuses each, and so does the fake"},
	"query-error-code":   {"fauxqs", "every error's query-compatible code (x-amzn-query-error, which the SDK reports as the error code) is prefixed AWS.SimpleQueueService., so MissingParameter arrives as AWS.SimpleQueueService.MissingParameter; SQS prefixes only some codes (NonExistentQueue), and the fake sends the plain code"},
	"batch-id-length":    {"fauxqs", "a batch entry id longer than 80 characters is accepted; SQS allows at most 80, and the fake refuses it (InvalidBatchEntryId)"},
	"stale-counts":       {"fauxqs", "ApproximateNumberOfMessages, ...NotVisible and ...Delayed move only on a receive: a message whose visibility timeout or delay has passed is still counted in flight or delayed until someone receives; the fake counts at the time asked (SQS calls the numbers approximate, and documents no such lag)"},
	"no-retention":       {"fauxqs", "MessageRetentionPeriod is stored but never applied: messages outlive it; SQS deletes them when it ends, and so does the fake"},
	"delete-bad-handle":  {"fauxqs", "DeleteMessage with a receipt handle the queue never issued succeeds; SQS answers ReceiptHandleIsInvalid, as the fake does"},
}

// backend is one SQS implementation reached through the real SDK client.
type backend struct {
	name    string
	sdk     *sqs.Client
	api     *queue.Client
	create  func(t *testing.T, name string, cfg sqsfake.QueueConfig) (url, arn string)
	advance func(t *testing.T, d time.Duration)
	now     func() time.Time
}

// diverges reports whether b has the documented divergence id.
func (b *backend) diverges(t *testing.T, id string) bool {
	t.Helper()
	d, ok := divergences[id]
	if !ok {
		t.Fatalf("divergence %q is not in the table", id)
	}
	return d.backend == b.name
}

// TestDivergencesDocumented keeps the table above and the one in
// docs/design.md#sqs-fake the same list.
func TestDivergencesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "| divergence (test key) |")
	if !ok {
		t.Fatal("docs/design.md has no divergence table")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	documented := map[string]bool{}
	for _, row := range strings.Split(table, "\n")[2:] {
		key, _, _ := strings.Cut(strings.TrimPrefix(row, "| "), " |")
		documented[key] = true
	}
	for key := range divergences {
		if !documented[key] {
			t.Errorf("divergence %q is tested but not in docs/design.md's table", key)
		}
	}
	for key := range documented {
		if _, ok := divergences[key]; !ok {
			t.Errorf("docs/design.md lists divergence %q, which no test asserts", key)
		}
	}
}

var fauxqsQueues atomic.Int64

// forEachBackend runs body against a fresh fake and against fauxqs.
func forEachBackend(t *testing.T, body func(t *testing.T, b *backend)) {
	t.Run("sqsfake", func(t *testing.T) {
		clk := retry.NewVirtualClock(t0)
		f := sqsfake.New(sqsfake.WithClock(clk.Now))
		srv := httptest.NewServer(sqsserver.Handler(f))
		t.Cleanup(srv.Close)
		sdk := fauxqstest.NewClient(srv.URL)
		body(t, &backend{
			name: "sqsfake", sdk: sdk, api: queue.New(sdk),
			create: func(t *testing.T, name string, cfg sqsfake.QueueConfig) (string, string) {
				t.Helper()
				url, err := f.CreateQueue(name, cfg)
				if err != nil {
					t.Fatalf("CreateQueue(%s): %v", name, err)
				}
				return url, f.ARN(url)
			},
			advance: func(_ *testing.T, d time.Duration) { clk.Advance(d) },
			now:     clk.Now,
		})
	})
	t.Run("fauxqs", func(t *testing.T) {
		sdk := fauxqs.Client()
		body(t, &backend{
			name: "fauxqs", sdk: sdk, api: queue.New(sdk),
			create: func(t *testing.T, name string, cfg sqsfake.QueueConfig) (string, string) {
				t.Helper()
				// One server for the package: every queue gets a name of its own.
				name = fmt.Sprintf("c%d-%s", fauxqsQueues.Add(1), name)
				out, err := sdk.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: queueAttributes(cfg)})
				if err != nil {
					t.Fatalf("CreateQueue(%s): %v", name, err)
				}
				attrs, err := sdk.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
				if err != nil {
					t.Fatalf("GetQueueAttributes(%s): %v", name, err)
				}
				return aws.ToString(out.QueueUrl), attrs.Attributes["QueueArn"]
			},
			advance: func(t *testing.T, d time.Duration) {
				t.Helper()
				if _, err := fauxqs.Advance(d); err != nil {
					t.Fatal(err)
				}
			},
			now: fauxqs.Now,
		})
	})
}

// queueAttributes is cfg as CreateQueue attributes.
func queueAttributes(cfg sqsfake.QueueConfig) map[string]string {
	a := map[string]string{}
	secs := func(k string, d time.Duration) {
		if d > 0 {
			a[k] = strconv.Itoa(int(d / time.Second))
		}
	}
	secs("VisibilityTimeout", cfg.VisibilityTimeout)
	secs("MessageRetentionPeriod", cfg.RetentionPeriod)
	secs("DelaySeconds", cfg.Delay)
	if cfg.ContentBasedDeduplication {
		a["ContentBasedDeduplication"] = "true"
	}
	if cfg.MaxMessageSize > 0 {
		a["MaximumMessageSize"] = strconv.Itoa(cfg.MaxMessageSize)
	}
	if rp := cfg.Redrive; rp != nil {
		b, _ := json.Marshal(map[string]any{"deadLetterTargetArn": rp.DeadLetterTargetARN, "maxReceiveCount": rp.MaxReceiveCount})
		a["RedrivePolicy"] = string(b)
	}
	return a
}

func (b *backend) send(t *testing.T, in queue.SendMessageInput) *queue.SendMessageOutput {
	t.Helper()
	out, err := b.api.SendMessage(context.Background(), &in)
	if err != nil {
		t.Fatalf("SendMessage(%.40q): %v", in.Body, err)
	}
	return out
}

func (b *backend) receive(t *testing.T, url string, max int) []queue.Message {
	t.Helper()
	return b.receiveWith(t, queue.ReceiveMessageInput{QueueURL: url, MaxMessages: max})
}

func (b *backend) receiveWith(t *testing.T, in queue.ReceiveMessageInput) []queue.Message {
	t.Helper()
	msgs, err := b.api.ReceiveMessage(context.Background(), &in)
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	return msgs
}

func millis(tm time.Time) string { return strconv.FormatInt(tm.UnixMilli(), 10) }

func TestConformanceVisibilityAndReceiveCount(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		url, _ := b.create(t, "visibilidad", sqsfake.QueueConfig{VisibilityTimeout: 400 * time.Second})
		sentAt := b.now()
		id := b.send(t, queue.SendMessageInput{QueueURL: url, Body: `{"pedido_id":"P1"}`}).MessageID
		b.advance(t, 2*time.Second)
		first := b.receive(t, url, 10)
		if len(first) != 1 || first[0].MessageID != id || first[0].ReceiveCount() != 1 {
			t.Fatalf("first receive = %+v, want %s with count 1", first, id)
		}
		if got := first[0].Attributes[queue.AttrSentTimestamp]; got != millis(sentAt) {
			t.Errorf("SentTimestamp = %s, want %s", got, millis(sentAt))
		}
		firstReceive := first[0].Attributes[queue.AttrApproximateFirstReceiveTimestamp]
		if firstReceive != millis(sentAt.Add(2*time.Second)) {
			t.Errorf("ApproximateFirstReceiveTimestamp = %s, want %s", firstReceive, millis(sentAt.Add(2*time.Second)))
		}
		b.advance(t, 399*time.Second)
		if got := b.receive(t, url, 10); len(got) != 0 {
			t.Fatalf("visible 1 s before its visibility timeout: %+v", got)
		}
		b.advance(t, time.Second)
		second := b.receive(t, url, 10)
		if len(second) != 1 || second[0].ReceiveCount() != 2 {
			t.Fatalf("after the timeout = %+v, want the message with count 2", second)
		}
		if second[0].ReceiptHandle == first[0].ReceiptHandle {
			t.Error("a new receive must issue a new receipt handle")
		}
		if got := second[0].Attributes[queue.AttrApproximateFirstReceiveTimestamp]; got != firstReceive {
			t.Errorf("ApproximateFirstReceiveTimestamp changed: %s -> %s", firstReceive, got)
		}
		// A receive-time override (the DLQ runbook inspects with 5 s).
		b.advance(t, 400*time.Second)
		if got := b.receiveWith(t, queue.ReceiveMessageInput{QueueURL: url, VisibilityTimeout: 5 * time.Second}); len(got) != 1 || got[0].ReceiveCount() != 3 {
			t.Fatalf("receive with a 5 s override = %+v", got)
		}
		b.advance(t, 4*time.Second)
		if got := b.receive(t, url, 1); len(got) != 0 {
			t.Fatal("visible before the 5 s override ended")
		}
		b.advance(t, time.Second)
		if got := b.receive(t, url, 1); len(got) != 1 || got[0].ReceiveCount() != 4 {
			t.Fatalf("after the 5 s override = %+v, want count 4", got)
		}
	})
}

func TestConformanceChangeMessageVisibility(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, b *backend) {
		url, _ := b.create(t, "erp", sqsfake.QueueConfig{VisibilityTimeout: 30 * time.Second})
		b.send(t, queue.SendMessageInput{QueueURL: url, Body: "aviso"})
		m := b.receive(t, url, 1)[0]
		// The ERP notice waits while the breaker is open: back in 300 s.
		if err := b.api.ChangeMessageVisibility(ctx, url, m.ReceiptHandle, 300*time.Second); err != nil {
			t.Fatal(err)
		}
		b.advance(t, 299*time.Second)
		if got := b.receive(t, url, 1); len(got) != 0 {
			t.Fatal("visible before the changed timeout")
		}
		b.advance(t, time.Second)
		old := b.receive(t, url, 1)[0]
		if old.ReceiveCount() != 2 {
			t.Fatalf("count = %d, want 2", old.ReceiveCount())
		}
		if err := b.api.ChangeMessageVisibility(ctx, url, old.ReceiptHandle, 0); err != nil {
			t.Fatal(err)
		}
		cur := b.receive(t, url, 1)
		if len(cur) != 1 || cur[0].ReceiveCount() != 3 {
			t.Fatalf("visibility 0 must make the message visible at once: %+v", cur)
		}
		// A handle from an earlier receive: both refuse it (SQS documents
		// neither code for this case).
		err := b.api.ChangeMessageVisibility(ctx, url, old.ReceiptHandle, time.Minute)
		if !errors.Is(err, queue.ErrReceiptHandleInvalid) && !errors.Is(err, queue.ErrMessageNotInflight) {
			t.Errorf("earlier handle: err = %v, want ReceiptHandleIsInvalid or MessageNotInflight", err)
		}
		// The current handle after its timeout expired: not in flight.
		b.advance(t, 30*time.Second)
		err = b.api.ChangeMessageVisibility(ctx, url, cur[0].ReceiptHandle, time.Minute)
		if b.diverges(t, "cmv-expired-handle") {
			if err != nil {
				t.Fatalf("fauxqs now refuses an expired handle (%v): update the divergences", err)
			}
			if got := b.receive(t, url, 1); len(got) != 0 {
				t.Fatalf("fauxqs's accepted change did not hide the message: %+v", got)
			}
		} else if !errors.Is(err, queue.ErrMessageNotInflight) {
			t.Errorf("expired handle: err = %v, want MessageNotInflight", err)
		}
		// Out of range (the SDK client, not the adapter, which checks first).
		_, err = b.sdk.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(cur[0].ReceiptHandle), VisibilityTimeout: 43201})
		if code := errorCode(err); !strings.HasSuffix(code, "InvalidParameterValue") {
			t.Errorf("43201 s: err = %v (code %q), want InvalidParameterValue", err, code)
		}
	})
}

// errorCode is the API error code of err ("" when none).
func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

func TestConformanceDelete(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, b *backend) {
		url, _ := b.create(t, "borrar", sqsfake.QueueConfig{VisibilityTimeout: 30 * time.Second})
		b.send(t, queue.SendMessageInput{QueueURL: url, Body: "x"})
		old := b.receive(t, url, 1)[0]
		b.advance(t, 30*time.Second) // a slow consumer: another one gets it
		if got := b.receive(t, url, 1); len(got) != 1 {
			t.Fatalf("not redelivered after the timeout: %+v", got)
		}
		// Standard queue, earlier handle: succeeds and deletes nothing.
		if err := b.api.DeleteMessage(ctx, url, old.ReceiptHandle); err != nil {
			t.Fatalf("delete with an earlier handle: %v", err)
		}
		b.advance(t, 30*time.Second)
		again := b.receive(t, url, 1)
		if len(again) != 1 || again[0].ReceiveCount() != 3 {
			t.Fatalf("an earlier handle deleted the message: %+v", again)
		}
		if err := b.api.DeleteMessage(ctx, url, again[0].ReceiptHandle); err != nil {
			t.Fatal(err)
		}
		if err := b.api.DeleteMessage(ctx, url, again[0].ReceiptHandle); err != nil {
			t.Errorf("deleting twice must succeed: %v", err)
		}
		b.advance(t, time.Hour)
		if got := b.receive(t, url, 10); len(got) != 0 {
			t.Fatalf("deleted message delivered: %+v", got)
		}
		err := b.api.DeleteMessage(ctx, url, "not-a-handle")
		if b.diverges(t, "delete-bad-handle") {
			if err != nil {
				t.Fatalf("fauxqs now refuses an unknown handle (%v): update the divergences", err)
			}
		} else if !errors.Is(err, queue.ErrReceiptHandleInvalid) {
			t.Errorf("unknown handle: err = %v, want ReceiptHandleIsInvalid", err)
		}
	})
}

func TestConformanceRedriveToDLQ(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, b *backend) {
				suffix := ""
				if fifo {
					suffix = ".fifo"
				}
				dlq, dlqARN := b.create(t, "fallidos"+suffix, sqsfake.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour})
				src, srcARN := b.create(t, "pedidos"+suffix, sqsfake.QueueConfig{
					VisibilityTimeout: 30 * time.Second,
					Redrive:           &sqsfake.RedrivePolicy{DeadLetterTargetARN: dlqARN, MaxReceiveCount: 3},
				})
				in := queue.SendMessageInput{QueueURL: src, Body: `{"version":2}`,
					MessageAttributes: map[string]queue.Attribute{"tipo": queue.StringAttribute("PedidoConfirmado")}}
				if fifo {
					in.MessageGroupID, in.MessageDeduplicationID = "P1", "d1"
				}
				id := b.send(t, in).MessageID
				for i := 1; i <= 3; i++ {
					got := b.receive(t, src, 10)
					if len(got) != 1 || got[0].ReceiveCount() != i {
						t.Fatalf("receive %d = %+v", i, got)
					}
					b.advance(t, 30*time.Second)
				}
				if got := b.receive(t, src, 10); len(got) != 0 {
					t.Fatalf("the receive after maxReceiveCount must move the message, got %+v", got)
				}
				got := b.receive(t, dlq, 10)
				if len(got) != 1 || got[0].MessageID != id || got[0].Body != `{"version":2}` || got[0].MessageAttributes["tipo"].StringValue != "PedidoConfirmado" {
					t.Fatalf("DLQ receive = %+v, want message %s with its body and attributes", got, id)
				}
				wantCount := 4
				if b.diverges(t, "dlq-receive-count") {
					wantCount = 5
				}
				if got[0].ReceiveCount() != wantCount {
					t.Errorf("first DLQ receive count = %d, want %d", got[0].ReceiveCount(), wantCount)
				}
				wantSource := srcARN
				if b.diverges(t, "dlq-source-arn") {
					wantSource = ""
				}
				if s := got[0].Attributes[queue.AttrDeadLetterQueueSourceArn]; s != wantSource {
					t.Errorf("DeadLetterQueueSourceArn = %q, want %q", s, wantSource)
				}
				if fifo && got[0].Attributes[queue.AttrMessageGroupID] != "P1" {
					t.Errorf("the FIFO DLQ message lost its group: %+v", got[0].Attributes)
				}
				if fifo {
					// SQS replaces the deduplication id with the message id.
					wantDedup := id
					if b.diverges(t, "fifo-dlq-dedup-id") {
						wantDedup = "d1"
					}
					if d := got[0].Attributes[queue.AttrMessageDeduplicationID]; d != wantDedup {
						t.Errorf("FIFO DLQ MessageDeduplicationId = %q, want %q", d, wantDedup)
					}
				}
			})
		})
	}
}

// groupOf returns, per group, the bodies received in order.
func groupOf(msgs []queue.Message) map[string][]string {
	out := map[string][]string{}
	for _, m := range msgs {
		g := m.Attributes[queue.AttrMessageGroupID]
		out[g] = append(out[g], m.Body)
	}
	return out
}

func TestConformanceFIFOGroupLocking(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, b *backend) {
		url, _ := b.create(t, "stock.fifo", sqsfake.QueueConfig{ContentBasedDeduplication: true, VisibilityTimeout: 30 * time.Second})
		for _, m := range []struct{ group, body string }{{"SKU-A", "a1"}, {"SKU-A", "a2"}, {"SKU-B", "b1"}, {"SKU-A", "a3"}, {"SKU-B", "b2"}} {
			out := b.send(t, queue.SendMessageInput{QueueURL: url, Body: m.body, MessageGroupID: m.group})
			if out.SequenceNumber == "" {
				t.Fatalf("no sequence number for %s", m.body)
			}
		}
		first := b.receive(t, url, 1)
		if len(first) != 1 || first[0].Body != "a1" {
			t.Fatalf("first = %+v, want a1", first)
		}
		// SKU-A has a1 in flight: nothing more of it; SKU-B flows.
		wantB := []string{"b1", "b2"}
		if b.diverges(t, "fifo-one-per-group") {
			wantB = []string{"b1"}
		}
		got := groupOf(b.receive(t, url, 10))
		if len(got["SKU-A"]) != 0 || !slices.Equal(got["SKU-B"], wantB) {
			t.Fatalf("while a1 is in flight got %v, want SKU-B %v only", got, wantB)
		}
		// a1 deleted: SKU-A continues in order; SKU-B is still in flight.
		if err := b.api.DeleteMessage(ctx, url, first[0].ReceiptHandle); err != nil {
			t.Fatal(err)
		}
		wantA := []string{"a2", "a3"}
		if b.diverges(t, "fifo-one-per-group") {
			wantA = []string{"a2"}
		}
		next := b.receive(t, url, 10)
		if got := groupOf(next); len(got["SKU-B"]) != 0 || !slices.Equal(got["SKU-A"], wantA) {
			t.Fatalf("after deleting a1 got %v, want SKU-A %v only", got, wantA)
		}
		// Nothing deleted since: after the timeout each group starts again
		// from its oldest undeleted message, with the receive count kept.
		b.advance(t, 30*time.Second)
		again := b.receive(t, url, 10)
		heads := map[string]queue.Message{}
		for _, m := range again {
			if _, ok := heads[m.Attributes[queue.AttrMessageGroupID]]; !ok {
				heads[m.Attributes[queue.AttrMessageGroupID]] = m
			}
		}
		if heads["SKU-A"].Body != "a2" || heads["SKU-A"].ReceiveCount() != 2 || heads["SKU-B"].Body != "b1" || heads["SKU-B"].ReceiveCount() != 2 {
			t.Fatalf("after the timeout got %v, want SKU-A from a2 and SKU-B from b1, count 2", groupOf(again))
		}
		if a, b := next[0].Attributes[queue.AttrSequenceNumber], first[0].Attributes[queue.AttrSequenceNumber]; a <= b {
			t.Errorf("sequence numbers must increase: a1 %s, a2 %s", b, a)
		}
	})
}

func TestConformanceFIFODeduplication(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, b *backend) {
		url, _ := b.create(t, "dedup.fifo", sqsfake.QueueConfig{ContentBasedDeduplication: true})
		a := b.send(t, queue.SendMessageInput{QueueURL: url, Body: "x", MessageGroupID: "g1", MessageDeduplicationID: "k"})
		b.advance(t, 4*time.Minute)
		dup := b.send(t, queue.SendMessageInput{QueueURL: url, Body: "y", MessageGroupID: "g2", MessageDeduplicationID: "k"})
		if dup.MessageID != a.MessageID || dup.SequenceNumber != a.SequenceNumber {
			t.Errorf("a duplicate within 5 minutes must answer the first id: %+v, then %+v", a, dup)
		}
		c := b.send(t, queue.SendMessageInput{QueueURL: url, Body: "contenido", MessageGroupID: "g3"})
		d := b.send(t, queue.SendMessageInput{QueueURL: url, Body: "contenido", MessageGroupID: "g4"})
		if c.MessageID != d.MessageID {
			t.Error("content-based deduplication did not deduplicate")
		}
		b.advance(t, time.Minute+time.Second) // 5 min 1 s after the first "k"
		e := b.send(t, queue.SendMessageInput{QueueURL: url, Body: "z", MessageGroupID: "g5", MessageDeduplicationID: "k"})
		if e.MessageID == a.MessageID {
			t.Error("after the 5-minute window the id must be accepted again")
		}
		var bodies []string
		for _, m := range b.receive(t, url, 10) {
			bodies = append(bodies, m.Body)
		}
		slices.Sort(bodies)
		if want := []string{"contenido", "x", "z"}; !slices.Equal(bodies, want) {
			t.Errorf("enqueued %v, want %v (duplicates dropped)", bodies, want)
		}
		// No deduplication id and no content-based deduplication: refused.
		strict, _ := b.create(t, "estricta.fifo", sqsfake.QueueConfig{})
		if _, err := b.api.SendMessage(ctx, &queue.SendMessageInput{QueueURL: strict, Body: "x", MessageGroupID: "g"}); !errors.Is(err, queue.ErrInvalidParameter) {
			t.Errorf("FIFO send without a deduplication id: err = %v, want InvalidParameter", err)
		}
		_, err := b.api.SendMessage(ctx, &queue.SendMessageInput{QueueURL: strict, Body: "x", MessageDeduplicationID: "d"})
		if b.diverges(t, "query-error-code") {
			// The right answer under a code the adapter does not know.
			if code := errorCode(err); code != "AWS.SimpleQueueService.MissingParameter" {
				t.Errorf("FIFO send without a group: err = %v, want fauxqs's AWS.SimpleQueueService.MissingParameter", err)
			}
		} else if !errors.Is(err, queue.ErrInvalidParameter) {
			t.Errorf("FIFO send without a group: err = %v, want InvalidParameter", err)
		}
	})
}

func TestConformanceDelays(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, b *backend) {
		url, _ := b.create(t, "retrasos", sqsfake.QueueConfig{Delay: time.Minute})
		b.send(t, queue.SendMessageInput{QueueURL: url, Body: "cola"})                             // the queue's 60 s
		b.send(t, queue.SendMessageInput{QueueURL: url, Body: "mensaje", Delay: 10 * time.Second}) // its own 10 s
		if got := b.receive(t, url, 10); len(got) != 0 {
			t.Fatalf("delayed messages delivered at once: %+v", got)
		}
		attrs, err := b.api.GetQueueAttributes(ctx, url, queue.QueueAttrApproximateNumberOfMessagesDelayed, queue.QueueAttrApproximateNumberOfMessages, "DelaySeconds")
		if err != nil {
			t.Fatal(err)
		}
		if attrs[queue.QueueAttrApproximateNumberOfMessagesDelayed] != "2" || attrs[queue.QueueAttrApproximateNumberOfMessages] != "0" || attrs["DelaySeconds"] != "60" {
			t.Errorf("attributes = %v, want 2 delayed, 0 visible, DelaySeconds 60", attrs)
		}
		b.advance(t, 10*time.Second)
		got := b.receive(t, url, 10)
		if len(got) != 1 || got[0].Body != "mensaje" {
			t.Fatalf("after 10 s got %+v, want the message with its own delay", got)
		}
		if err := b.api.DeleteMessage(ctx, url, got[0].ReceiptHandle); err != nil {
			t.Fatal(err)
		}
		b.advance(t, 49*time.Second)
		if got := b.receive(t, url, 10); len(got) != 0 {
			t.Fatalf("after 59 s got %+v", got)
		}
		b.advance(t, time.Second)
		if got := b.receive(t, url, 10); len(got) != 1 || got[0].Body != "cola" {
			t.Fatalf("after 60 s got %+v, want the queue-delayed message", got)
		}
		_, err = b.api.SendMessage(ctx, &queue.SendMessageInput{QueueURL: url, Body: "x", Delay: 901 * time.Second})
		if b.diverges(t, "delay-range") {
			if err != nil {
				t.Fatalf("fauxqs now refuses DelaySeconds 901 (%v): update the divergences", err)
			}
		} else if !errors.Is(err, queue.ErrInvalidParameter) {
			t.Errorf("DelaySeconds 901: err = %v, want InvalidParameter", err)
		}
		// FIFO: the queue's delay applies; a message's own delay is refused.
		fifo, _ := b.create(t, "retrasos.fifo", sqsfake.QueueConfig{Delay: 30 * time.Second, ContentBasedDeduplication: true})
		if _, err := b.api.SendMessage(ctx, &queue.SendMessageInput{QueueURL: fifo, Body: "x", MessageGroupID: "g", Delay: time.Second}); !errors.Is(err, queue.ErrInvalidParameter) {
			t.Errorf("FIFO per-message delay: err = %v, want InvalidParameter", err)
		}
		b.send(t, queue.SendMessageInput{QueueURL: fifo, Body: "f", MessageGroupID: "g"})
		b.advance(t, 29*time.Second)
		if got := b.receive(t, fifo, 10); len(got) != 0 {
			t.Fatalf("FIFO message delivered before the queue's delay: %+v", got)
		}
		b.advance(t, time.Second)
		if got := b.receive(t, fifo, 10); len(got) != 1 {
			t.Fatalf("FIFO message not delivered after the queue's delay: %+v", got)
		}
	})
}

func TestConformanceSizeAndContent(t *testing.T) {
	attr := map[string]queue.Attribute{"a": queue.StringAttribute("v")} // 1 + 6 + 1 = 8 bytes
	bin := map[string]queue.Attribute{"b": {DataType: "Binary", BinaryValue: []byte("0123456789abcdef")}}
	tests := []struct {
		name       string
		in         queue.SendMessageInput
		ok         bool
		divergence string // the backend with it gets the opposite answer
	}{
		{"body at the limit", queue.SendMessageInput{Body: strings.Repeat("x", 1024)}, true, ""},
		{"body one byte over", queue.SendMessageInput{Body: strings.Repeat("x", 1025)}, false, ""},
		{"body and attribute at the limit", queue.SendMessageInput{Body: strings.Repeat("x", 1016), MessageAttributes: attr}, true, ""},
		{"body and attribute one byte over", queue.SendMessageInput{Body: strings.Repeat("x", 1017), MessageAttributes: attr}, false, ""},
		{"UTF-8 bytes at the limit", queue.SendMessageInput{Body: strings.Repeat("ñ", 512)}, true, ""},
		{"UTF-8 bytes one over", queue.SendMessageInput{Body: strings.Repeat("ñ", 512) + "x"}, false, ""},
		{"binary attribute counted by its bytes", queue.SendMessageInput{Body: strings.Repeat("x", 1000), MessageAttributes: bin}, true, "binary-size"},
		{"NUL in the body", queue.SendMessageInput{Body: "a\x00b"}, false, ""},
		{"supplementary character", queue.SendMessageInput{Body: "manzana 🍎"}, true, "supplementary-char"},
	}
	forEachBackend(t, func(t *testing.T, b *backend) {
		url, _ := b.create(t, "tamano", sqsfake.QueueConfig{MaxMessageSize: 1024})
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				tt.in.QueueURL = url
				want := tt.ok
				if tt.divergence != "" && b.diverges(t, tt.divergence) {
					want = !want
				}
				_, err := b.api.SendMessage(context.Background(), &tt.in)
				switch {
				case want && err != nil:
					t.Fatalf("refused: %v", err)
				case !want && !errors.Is(err, queue.ErrInvalidParameter):
					t.Fatalf("err = %v, want InvalidParameter", err)
				}
			})
		}
	})
}

func TestConformanceMessageAttributes(t *testing.T) {
	sent := map[string]queue.Attribute{
		"tipo":     queue.StringAttribute("PedidoConfirmado"),
		"nombre":   queue.StringAttribute("Begoña Ibáñez"),
		"version":  queue.NumberAttribute(2),
		"importe":  {DataType: "Number.eur", StringValue: "-12.50"},
		"firma":    {DataType: "Binary", BinaryValue: []byte{0, 1, 2, 0xff}},
		"pedido":   {DataType: "String.id", StringValue: "P-000123"},
		"mf-razon": queue.StringAttribute("version no soportada"),
	}
	many := map[string]queue.Attribute{}
	for i := range 11 {
		many[fmt.Sprintf("a%d", i)] = queue.StringAttribute("v")
	}
	invalid := []struct {
		name  string
		attrs map[string]queue.Attribute
	}{
		{"11 attributes", many},
		{"reserved prefix", map[string]queue.Attribute{"AWS.traza": queue.StringAttribute("v")}},
		{"space in the name", map[string]queue.Attribute{"a b": queue.StringAttribute("v")}},
		{"two periods", map[string]queue.Attribute{"a..b": queue.StringAttribute("v")}},
		{"empty value", map[string]queue.Attribute{"a": {DataType: "String"}}},
		{"unknown type", map[string]queue.Attribute{"a": {DataType: "Json", StringValue: "{}"}}},
		{"Number not a number", map[string]queue.Attribute{"a": {DataType: "Number", StringValue: "doce"}}},
	}
	digests := map[string]string{}
	forEachBackend(t, func(t *testing.T, b *backend) {
		url, _ := b.create(t, "atributos", sqsfake.QueueConfig{})
		b.send(t, queue.SendMessageInput{QueueURL: url, Body: "x", MessageAttributes: sent})
		// The same attributes through the SDK directly, for the digest.
		raw := map[string]sqstypes.MessageAttributeValue{}
		for k, a := range sent {
			v := sqstypes.MessageAttributeValue{DataType: aws.String(a.DataType), BinaryValue: a.BinaryValue}
			if a.BinaryValue == nil {
				v.StringValue = aws.String(a.StringValue)
			}
			raw[k] = v
		}
		out, err := b.sdk.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("digest"), MessageAttributes: raw})
		if err != nil {
			t.Fatal(err)
		}
		digests[b.name] = aws.ToString(out.MD5OfMessageAttributes)
		got := b.receive(t, url, 1)
		if len(got) != 1 {
			t.Fatalf("receive = %+v", got)
		}
		if len(got[0].MessageAttributes) != len(sent) {
			t.Errorf("received %d attributes, sent %d: %+v", len(got[0].MessageAttributes), len(sent), got[0].MessageAttributes)
		}
		if err := b.api.DeleteMessage(context.Background(), url, got[0].ReceiptHandle); err != nil {
			t.Fatal(err)
		}
		for k, want := range sent {
			a := got[0].MessageAttributes[k]
			if a.DataType != want.DataType || a.StringValue != want.StringValue || string(a.BinaryValue) != string(want.BinaryValue) {
				t.Errorf("attribute %s = %+v, want %+v", k, a, want)
			}
		}
		for _, tt := range invalid {
			t.Run(tt.name, func(t *testing.T) {
				_, err := b.api.SendMessage(context.Background(), &queue.SendMessageInput{QueueURL: url, Body: "x", MessageAttributes: tt.attrs})
				if b.diverges(t, "attribute-rules") {
					if err != nil {
						t.Fatalf("fauxqs now refuses it (%v): update the divergences", err)
					}
					return
				}
				if !errors.Is(err, queue.ErrInvalidParameter) {
					t.Fatalf("err = %v, want InvalidParameter", err)
				}
			})
		}
	})
	// MD5OfMessageAttributes is SQS's digest on both (the SDK checks only the body's).
	if digests["sqsfake"] == "" || digests["sqsfake"] != digests["fauxqs"] {
		t.Errorf("MD5OfMessageAttributes: sqsfake %q, fauxqs %q", digests["sqsfake"], digests["fauxqs"])
	}
}

// batchAnswer is a batch response reduced to what SQS specifies: the ids
// that succeeded and, per failed id, its code and fault.
func batchAnswer(ok []string, failed []sqstypes.BatchResultErrorEntry) string {
	slices.Sort(ok)
	var f []string
	for _, e := range failed {
		f = append(f, fmt.Sprintf("%s:%s:%v", aws.ToString(e.Id), aws.ToString(e.Code), e.SenderFault))
	}
	slices.Sort(f)
	return fmt.Sprintf("ok %v failed %v", ok, f)
}

func TestConformanceBatchRequestErrors(t *testing.T) {
	ctx := context.Background()
	entries := func(n, size int) []sqstypes.SendMessageBatchRequestEntry {
		out := make([]sqstypes.SendMessageBatchRequestEntry, n)
		for i := range out {
			out[i] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprintf("e%d", i)), MessageBody: aws.String(strings.Repeat("x", size))}
		}
		return out
	}
	withID := func(ids ...string) []sqstypes.SendMessageBatchRequestEntry {
		out := entries(len(ids), 1)
		for i, id := range ids {
			out[i].Id = aws.String(id)
		}
		return out
	}
	var (
		empty     *sqstypes.EmptyBatchRequest
		tooMany   *sqstypes.TooManyEntriesInBatchRequest
		badID     *sqstypes.InvalidBatchEntryId
		notUnique *sqstypes.BatchEntryIdsNotDistinct
		tooLong   *sqstypes.BatchRequestTooLong
	)
	tests := []struct {
		name       string
		entries    []sqstypes.SendMessageBatchRequestEntry
		want       any // a pointer to the SDK's typed error, or nil
		divergence string
	}{
		{"no entries", []sqstypes.SendMessageBatchRequestEntry{}, &empty, ""},
		{"11 entries", entries(11, 1), &tooMany, ""},
		{"10 entries", entries(10, 1), nil, ""},
		{"a space in an id", withID("a b"), &badID, ""},
		{"an id of 80", withID(strings.Repeat("i", 80)), nil, ""},
		{"an id of 81", withID(strings.Repeat("i", 81)), &badID, "batch-id-length"},
		{"the same id twice", withID("a", "b", "a"), &notUnique, ""},
		// Each entry within the queue's limit, together over 1 MiB.
		{"payload over 1 MiB", entries(5, 220_000), &tooLong, ""},
		{"payload at 1 MiB", entries(4, 262_144), nil, ""},
	}
	forEachBackend(t, func(t *testing.T, b *backend) {
		url, _ := b.create(t, "lotes", sqsfake.QueueConfig{MaxMessageSize: 262_144})
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				out, err := b.sdk.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: tt.entries})
				want := tt.want
				if tt.divergence != "" && b.diverges(t, tt.divergence) {
					want = nil
				}
				if want == nil {
					if err != nil || len(out.Failed) != 0 || len(out.Successful) != len(tt.entries) {
						t.Fatalf("want every entry sent, got %+v, %v", out, err)
					}
					return
				}
				if !errors.As(err, want) {
					t.Fatalf("err = %v, want %T", err, want)
				}
			})
		}
	})
}

func TestConformanceBatchEntryErrors(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, b *backend) {
		url, _ := b.create(t, "entradas", sqsfake.QueueConfig{MaxMessageSize: 1024, VisibilityTimeout: 30 * time.Second})
		entry := func(id, body string) sqstypes.SendMessageBatchRequestEntry {
			return sqstypes.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String(body)}
		}
		out, err := b.sdk.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []sqstypes.SendMessageBatchRequestEntry{
			entry("uno", "1"), entry("grande", strings.Repeat("x", 1025)), entry("nul", "a\x00b"), entry("dos", "2"),
		}})
		if err != nil {
			t.Fatal(err)
		}
		var ok []string
		for _, e := range out.Successful {
			ok = append(ok, aws.ToString(e.Id))
		}
		if got, want := batchAnswer(ok, out.Failed), "ok [dos uno] failed [grande:InvalidParameterValue:true nul:InvalidMessageContents:true]"; got != want {
			t.Errorf("SendMessageBatch = %s, want %s", got, want)
		}
		msgs := b.receive(t, url, 10)
		if len(msgs) != 2 {
			t.Fatalf("received %d messages, want the 2 accepted", len(msgs))
		}
		// FIFO: an entry without a group fails alone.
		fifo, _ := b.create(t, "entradas.fifo", sqsfake.QueueConfig{ContentBasedDeduplication: true})
		fout, err := b.sdk.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(fifo), Entries: []sqstypes.SendMessageBatchRequestEntry{
			{Id: aws.String("con"), MessageBody: aws.String("a"), MessageGroupId: aws.String("g")},
			{Id: aws.String("sin"), MessageBody: aws.String("b")},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if len(fout.Successful) != 1 || aws.ToString(fout.Successful[0].SequenceNumber) == "" || len(fout.Failed) != 1 || aws.ToString(fout.Failed[0].Code) != "MissingParameter" {
			t.Errorf("FIFO batch = %+v", fout)
		}

		// ChangeMessageVisibilityBatch: a good handle, an unknown one, a timeout out of range.
		cmv, err := b.sdk.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: []sqstypes.ChangeMessageVisibilityBatchRequestEntry{
			{Id: aws.String("bien"), ReceiptHandle: aws.String(msgs[0].ReceiptHandle), VisibilityTimeout: 0},
			{Id: aws.String("falso"), ReceiptHandle: aws.String("not-a-handle"), VisibilityTimeout: 10},
			{Id: aws.String("largo"), ReceiptHandle: aws.String(msgs[1].ReceiptHandle), VisibilityTimeout: 43201},
		}})
		if err != nil {
			t.Fatal(err)
		}
		ok = nil
		for _, e := range cmv.Successful {
			ok = append(ok, aws.ToString(e.Id))
		}
		if got, want := batchAnswer(ok, cmv.Failed), "ok [bien] failed [falso:ReceiptHandleIsInvalid:true largo:InvalidParameterValue:true]"; got != want {
			t.Errorf("ChangeMessageVisibilityBatch = %s, want %s", got, want)
		}
		again := b.receive(t, url, 10)
		if len(again) != 1 || again[0].MessageID != msgs[0].MessageID {
			t.Fatalf("after visibility 0 got %+v, want %s back", again, msgs[0].MessageID)
		}

		// DeleteMessageBatch: the current handles and an unknown one.
		del, err := b.sdk.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []sqstypes.DeleteMessageBatchRequestEntry{
			{Id: aws.String("a"), ReceiptHandle: aws.String(again[0].ReceiptHandle)},
			{Id: aws.String("b"), ReceiptHandle: aws.String(msgs[1].ReceiptHandle)},
			{Id: aws.String("c"), ReceiptHandle: aws.String("not-a-handle")},
		}})
		if err != nil {
			t.Fatal(err)
		}
		ok = nil
		for _, e := range del.Successful {
			ok = append(ok, aws.ToString(e.Id))
		}
		want := "ok [a b] failed [c:ReceiptHandleIsInvalid:true]"
		if b.diverges(t, "delete-bad-handle") {
			want = "ok [a b c] failed []"
		}
		if got := batchAnswer(ok, del.Failed); got != want {
			t.Errorf("DeleteMessageBatch = %s, want %s", got, want)
		}
		b.advance(t, time.Hour)
		if got := b.receive(t, url, 10); len(got) != 0 {
			t.Fatalf("deleted messages delivered again: %+v", got)
		}
	})
}

func TestConformanceFIFOReturnAndRedrive(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, b *backend) {
		// Visibility 0 puts a FIFO message back at the head of its group.
		url, _ := b.create(t, "orden.fifo", sqsfake.QueueConfig{ContentBasedDeduplication: true})
		b.send(t, queue.SendMessageInput{QueueURL: url, Body: "m1", MessageGroupID: "g"})
		b.send(t, queue.SendMessageInput{QueueURL: url, Body: "m2", MessageGroupID: "g"})
		first := b.receive(t, url, 1)
		if len(first) != 1 || first[0].Body != "m1" {
			t.Fatalf("first = %+v", first)
		}
		if err := b.api.ChangeMessageVisibility(ctx, url, first[0].ReceiptHandle, 0); err != nil {
			t.Fatal(err)
		}
		if got := b.receive(t, url, 1); len(got) != 1 || got[0].Body != "m1" || got[0].ReceiveCount() != 2 {
			t.Fatalf("after visibility 0 got %+v, want m1 again with count 2", got)
		}
		// A deleted message's deduplication id is still remembered.
		dedup := b.send(t, queue.SendMessageInput{QueueURL: url, Body: "m1", MessageGroupID: "g"})
		if dedup.MessageID != first[0].MessageID {
			t.Errorf("resending m1 within 5 minutes = %s, want the first id %s", dedup.MessageID, first[0].MessageID)
		}

		// The poison head of a group goes to the DLQ and the group goes on.
		dlq, dlqARN := b.create(t, "veneno-dlq.fifo", sqsfake.QueueConfig{})
		src, _ := b.create(t, "veneno.fifo", sqsfake.QueueConfig{ContentBasedDeduplication: true,
			Redrive: &sqsfake.RedrivePolicy{DeadLetterTargetARN: dlqARN, MaxReceiveCount: 1}})
		b.send(t, queue.SendMessageInput{QueueURL: src, Body: "poison", MessageGroupID: "g"})
		b.send(t, queue.SendMessageInput{QueueURL: src, Body: "next", MessageGroupID: "g"})
		if got := b.receive(t, src, 1); len(got) != 1 || got[0].Body != "poison" {
			t.Fatalf("got %+v, want poison", got)
		}
		b.advance(t, sqsfake.DefaultVisibilityTimeout)
		if got := b.receive(t, src, 10); len(got) != 1 || got[0].Body != "next" {
			t.Fatalf("after the head moved to the DLQ got %+v, want next", got)
		}
		if got := b.receive(t, dlq, 10); len(got) != 1 || got[0].Body != "poison" || got[0].Attributes[queue.AttrMessageGroupID] != "g" {
			t.Fatalf("DLQ = %+v, want poison in group g", got)
		}
	})
}

func TestConformanceReceiveLimits(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, b *backend) {
		url, _ := b.create(t, "limites", sqsfake.QueueConfig{})
		for _, in := range []*sqs.ReceiveMessageInput{
			{QueueUrl: aws.String(url), MaxNumberOfMessages: 11},
			{QueueUrl: aws.String(url), WaitTimeSeconds: 21},
			{QueueUrl: aws.String(url), VisibilityTimeout: 43201},
		} {
			if _, err := b.sdk.ReceiveMessage(ctx, in); !strings.HasSuffix(errorCode(err), "InvalidParameterValue") {
				t.Errorf("ReceiveMessage(max %d, wait %d, visibility %d): err = %v, want InvalidParameterValue",
					in.MaxNumberOfMessages, in.WaitTimeSeconds, in.VisibilityTimeout, err)
			}
		}
		if _, err := b.api.ReceiveMessage(ctx, &queue.ReceiveMessageInput{QueueURL: url + "-no-existe"}); !errors.Is(err, queue.ErrQueueNotFound) {
			t.Errorf("unknown queue: err = %v, want QueueDoesNotExist", err)
		}
	})
}

func TestConformanceCountsAndRetention(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, b *backend) {
		url, _ := b.create(t, "cuentas", sqsfake.QueueConfig{VisibilityTimeout: 30 * time.Second, RetentionPeriod: 10 * time.Minute})
		b.send(t, queue.SendMessageInput{QueueURL: url, Body: "a"})
		b.send(t, queue.SendMessageInput{QueueURL: url, Body: "b", Delay: 20 * time.Second})
		b.receive(t, url, 1)
		counts := func() string {
			t.Helper()
			a, err := b.api.GetQueueAttributes(ctx, url, queue.QueueAttrApproximateNumberOfMessages,
				queue.QueueAttrApproximateNumberOfMessagesNotVisible, queue.QueueAttrApproximateNumberOfMessagesDelayed)
			if err != nil {
				t.Fatal(err)
			}
			return a[queue.QueueAttrApproximateNumberOfMessages] + " visible, " + a[queue.QueueAttrApproximateNumberOfMessagesNotVisible] +
				" in flight, " + a[queue.QueueAttrApproximateNumberOfMessagesDelayed] + " delayed"
		}
		if got, want := counts(), "0 visible, 1 in flight, 1 delayed"; got != want {
			t.Errorf("after a receive: %s, want %s", got, want)
		}
		// The in-flight message's timeout and the delay pass; nobody receives.
		b.advance(t, 30*time.Second)
		want := "2 visible, 0 in flight, 0 delayed"
		if b.diverges(t, "stale-counts") {
			want = "0 visible, 1 in flight, 1 delayed"
		}
		if got := counts(); got != want {
			t.Errorf("after the timeout and the delay: %s, want %s", got, want)
		}
		// Past the retention period SQS deletes the messages.
		b.advance(t, 10*time.Minute)
		got := b.receive(t, url, 10)
		wantN := 0
		if b.diverges(t, "no-retention") {
			wantN = 2
		}
		if len(got) != wantN {
			t.Errorf("after the 10-minute retention period received %d messages, want %d", len(got), wantN)
		}
	})
}

// Concurrent consumers: while a message is in flight nobody else gets it,
// so with a long visibility timeout each message is delivered once.
func TestConformanceConcurrentConsumers(t *testing.T) {
	const n = 100
	forEachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		url, _ := b.create(t, "concurrente", sqsfake.QueueConfig{VisibilityTimeout: time.Hour})
		for i := 0; i < n; i += 10 {
			entries := make([]sqstypes.SendMessageBatchRequestEntry, 10)
			for j := range entries {
				entries[j] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprintf("e%d", j)), MessageBody: aws.String(strconv.Itoa(i + j))}
			}
			if out, err := b.sdk.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil || len(out.Failed) != 0 {
				t.Fatalf("SendMessageBatch = %+v, %v", out, err)
			}
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					msgs, err := b.api.ReceiveMessage(ctx, &queue.ReceiveMessageInput{QueueURL: url, MaxMessages: 10})
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
					}
				}
			})
		}
		wg.Wait()
		if len(seen) != n {
			t.Fatalf("saw %d distinct messages, want %d", len(seen), n)
		}
		for body, c := range seen {
			if c != 1 {
				t.Fatalf("message %s delivered %d times while in flight", body, c)
			}
		}
	})
}
