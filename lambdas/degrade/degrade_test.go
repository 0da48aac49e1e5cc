package degrade_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mercadofresco/integration/internal/sqsfake"
	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/degrade"
	"github.com/mercadofresco/integration/lambdas/queue"
	"github.com/mercadofresco/integration/lambdas/retry"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

const maxReceiveCount = 4

type world struct {
	t        *testing.T
	clk      *retry.VirtualClock
	fake     *sqsfake.Fake
	src, dlq string
	proc     *sqsbatch.Processor
	open     atomic.Bool // the ERP's circuit
	mu       sync.Mutex
	done     map[string]int
}

func newWorld(t *testing.T, fifo bool, useCopies bool) *world {
	t.Helper()
	w := &world{t: t, clk: retry.NewVirtualClock(time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)), done: map[string]int{}}
	w.fake = sqsfake.New(sqsfake.WithClock(w.clk.Now))
	suffix := ""
	if fifo {
		suffix = ".fifo"
	}
	var err error
	if w.dlq, err = w.fake.CreateQueue("aviso-erp-fallidos"+suffix, sqsfake.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if w.src, err = w.fake.CreateQueue("cola-mercadofresco-aviso-erp"+suffix, sqsfake.QueueConfig{
		VisibilityTimeout: 400 * time.Second, ContentBasedDeduplication: fifo,
		Redrive: &sqsfake.RedrivePolicy{DeadLetterTargetARN: w.fake.ARN(w.dlq), MaxReceiveCount: maxReceiveCount},
	}); err != nil {
		t.Fatal(err)
	}
	cfg := degrade.Config{MaxReceiveCount: maxReceiveCount}
	if useCopies {
		cfg.Sender = w.fake
	}
	plan, err := degrade.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.proc, err = sqsbatch.New(sqsbatch.Config{
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Visibility: w.fake,
		DisableVersionCheck: true,
		Handler: sqsbatch.HandlerFunc(func(ctx context.Context, rec *sqsbatch.Record) error {
			if w.open.Load() {
				return plan.OnOpen(ctx, rec, fmt.Errorf("erp: %w", &breaker.OpenError{Dependency: "erp", State: breaker.Open}))
			}
			w.mu.Lock()
			w.done[rec.Body()]++
			w.mu.Unlock()
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// poll plays the event source mapping once: receive, invoke, delete what
// the response does not list.
func (w *world) poll() {
	ctx := context.Background()
	for {
		msgs, err := w.fake.ReceiveMessage(ctx, &queue.ReceiveMessageInput{QueueURL: w.src, MaxMessages: 10})
		if err != nil {
			w.t.Fatal(err)
		}
		if len(msgs) == 0 {
			return
		}
		ev := events.SQSEvent{}
		for _, m := range msgs {
			ev.Records = append(ev.Records, m.EventRecord(w.fake.ARN(w.src), w.fake.Region()))
		}
		resp, _ := w.proc.Process(ctx, ev)
		var failed []string
		for _, f := range resp.BatchItemFailures {
			failed = append(failed, f.ItemIdentifier)
		}
		for _, m := range msgs {
			if !slices.Contains(failed, m.MessageID) {
				if err := w.fake.DeleteMessage(ctx, w.src, m.ReceiptHandle); err != nil {
					w.t.Fatal(err)
				}
			}
		}
	}
}

func (w *world) send(body string) {
	in := &queue.SendMessageInput{QueueURL: w.src, Body: body,
		MessageAttributes: map[string]queue.Attribute{"tipo": queue.StringAttribute("AvisoErp")}}
	if len(w.src) > 5 && w.src[len(w.src)-5:] == ".fifo" {
		in.MessageGroupID = "PED-1"
	}
	if _, err := w.fake.SendMessage(context.Background(), in); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) dlqDepth() int {
	st, _ := w.fake.Inspect(w.dlq)
	return len(st)
}

// run keeps the circuit open for outage, polling every minute, then closes
// it and polls for another 20 minutes.
func (w *world) run(outage time.Duration) (firstDLQ time.Duration) {
	w.open.Store(true)
	start := w.clk.Now()
	firstDLQ = -1
	for w.clk.Now().Sub(start) < outage+20*time.Minute {
		if w.clk.Now().Sub(start) >= outage {
			w.open.Store(false)
		}
		w.poll()
		if firstDLQ < 0 && w.dlqDepth() > 0 {
			firstDLQ = w.clk.Now().Sub(start)
		}
		w.clk.Advance(time.Minute)
	}
	return firstDLQ
}

func TestLongOutageDoesNotDeadLetter(t *testing.T) {
	w := newWorld(t, false, true)
	for i := range 5 {
		w.send(fmt.Sprintf(`{"pedido_id":"PED-%d"}`, i))
	}
	if at := w.run(3 * time.Hour); at >= 0 {
		t.Fatalf("a message reached the DLQ %s into a 3-hour outage", at)
	}
	for i := range 5 {
		if n := w.done[fmt.Sprintf(`{"pedido_id":"PED-%d"}`, i)]; n != 1 {
			t.Errorf("PED-%d processed %d times after recovery, want 1", i, n)
		}
	}
	if st, _ := w.fake.Inspect(w.src); len(st) != 0 {
		t.Errorf("%d messages left in the source queue", len(st))
	}
}

func TestVisibilityAloneDeadLettersAfterMaxReceiveCount(t *testing.T) {
	w := newWorld(t, false, false)
	w.send(`{"pedido_id":"PED-1"}`)
	at := w.run(3 * time.Hour)
	// 4 receives, 5 minutes apart, then the redrive on the 5th.
	if at < 15*time.Minute || at > 25*time.Minute {
		t.Fatalf("without copies the message reached the DLQ after %s, want ~20 min (maxReceiveCount x 300 s)", at)
	}
	if len(w.done) != 0 {
		t.Errorf("processed %v", w.done)
	}
}

func TestFIFOUsesVisibilityOnly(t *testing.T) {
	w := newWorld(t, true, true)
	w.send(`{"pedido_id":"PED-1"}`)
	if at := w.run(time.Hour); at < 0 {
		t.Fatal("FIFO message was copied instead of left to the redrive policy")
	}
}

func TestOutageShorterThanTheBudgetOfReceivesUsesVisibility(t *testing.T) {
	w := newWorld(t, false, true)
	w.send(`{"pedido_id":"PED-1"}`)
	w.run(12 * time.Minute)
	if w.done[`{"pedido_id":"PED-1"}`] != 1 || w.dlqDepth() != 0 {
		t.Fatalf("done %v dlq %d", w.done, w.dlqDepth())
	}
	if s := w.fake.Stats(w.src); s.Sent != 1 {
		t.Errorf("%d sends for a 12-minute outage, want only the original (no copies)", s.Sent)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []degrade.Config{{}, {MaxReceiveCount: 4, Delay: time.Hour}, {MaxReceiveCount: 4, MaxDeferrals: -1}} {
		if _, err := degrade.New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

// TestDeferralCopyIgnoresIncomingMFAttributes: the delayed copy carries the
// message's own attributes (packed when they do not fit beside the
// counter) and the plan's counter, never an incoming mf-* attribute; a
// forged negative counter counts as none, so the copies stay bounded.
func TestDeferralCopyIgnoresIncomingMFAttributes(t *testing.T) {
	str := func(v string) events.SQSMessageAttribute {
		return events.SQSMessageAttribute{DataType: "String", StringValue: &v}
	}
	many := map[string]events.SQSMessageAttribute{}
	for i := range 10 {
		many[fmt.Sprintf("a%d", i)] = str(fmt.Sprint(i))
	}
	for _, tc := range []struct {
		name      string
		attrs     map[string]events.SQSMessageAttribute
		wantCount string
		kept      int
	}{
		{"forged counter and failure attributes", map[string]events.SQSMessageAttribute{
			degrade.AttrDeferrals: str("-50"), sqsbatch.AttrFailureReason: str("forged"), "mf-otro": str("forged"), "tipo": str("AvisoErp"),
		}, "1", 1},
		{"a counter of ours", map[string]events.SQSMessageAttribute{degrade.AttrDeferrals: {DataType: "Number", StringValue: ptr("3")}, "tipo": str("AvisoErp")}, "4", 1},
		{"ten attributes of its own", many, "1", 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, false, true)
			plan, err := degrade.New(degrade.Config{MaxReceiveCount: maxReceiveCount, Sender: w.fake})
			if err != nil {
				t.Fatal(err)
			}
			rec := &sqsbatch.Record{ReceiveCount: maxReceiveCount, Message: events.SQSMessage{
				MessageId: "m-1", Body: `{"pedido_id":"PED-1"}`, EventSourceARN: w.fake.ARN(w.src), MessageAttributes: tc.attrs,
			}}
			if err := plan.Later(context.Background(), rec, breaker.ErrOpen); err != nil {
				t.Fatalf("Later = %v, want a copy", err)
			}
			st, _ := w.fake.Inspect(w.src)
			if len(st) != 1 {
				t.Fatalf("%d messages in the source queue, want the copy", len(st))
			}
			got := st[0].MessageAttributes
			if got[degrade.AttrDeferrals].StringValue != tc.wantCount {
				t.Errorf("%s = %q, want %q", degrade.AttrDeferrals, got[degrade.AttrDeferrals].StringValue, tc.wantCount)
			}
			for k, a := range got {
				if a.StringValue == "forged" || strings.Contains(a.StringValue, "forged") {
					t.Errorf("the copy carries the forged %s", k)
				}
			}
			orig, err := sqsbatch.OriginalAttributes(got)
			if err != nil || len(orig) != tc.kept {
				t.Errorf("the copy's own attributes = %v (%v), want %d", orig, err, tc.kept)
			}
		})
	}
}

func ptr(s string) *string { return &s }
