package sqsconsumer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/internal/testseed"
	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/retry"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
)

const maxReceiveCount = 4

type world struct {
	t        *testing.T
	clk      *retry.VirtualClock
	fake     *localaws.SQS
	src, dlq string
	proc     *sqsbatch.Processor
	open     atomic.Bool // the ERP's circuit
	// openOn, when set, decides the circuit's state on each receive
	// instead of open.
	openOn func(rec *sqsbatch.Record) bool
	// failing makes every call that reaches the ERP fail (a 503).
	failing atomic.Bool
	plan    *sqsconsumer.Plan
	mu      sync.Mutex
	done    map[string]int
	calls   map[string]int // calls that reached the ERP, by body
}

func newWorld(t *testing.T, fifo bool, useCopies bool) *world {
	t.Helper()
	w := &world{t: t, clk: retry.NewVirtualClock(time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)), done: map[string]int{}, calls: map[string]int{}}
	w.fake = localaws.NewSQS(localaws.SQSConfig{Now: w.clk.Now})
	suffix := ""
	if fifo {
		suffix = ".fifo"
	}
	var err error
	if w.dlq, err = w.fake.CreateQueue("aviso-erp-fallidos"+suffix, localaws.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if w.src, err = w.fake.CreateQueue("cola-mercadofresco-aviso-erp"+suffix, localaws.QueueConfig{
		VisibilityTimeout: 400 * time.Second, ContentBasedDeduplication: fifo,
		Redrive: &localaws.RedrivePolicy{DeadLetterTargetARN: w.fake.ARN(w.dlq), MaxReceiveCount: maxReceiveCount},
	}); err != nil {
		t.Fatal(err)
	}
	rnd := testseed.New(t)
	cfg := sqsconsumer.PlanConfig{MaxReceiveCount: maxReceiveCount, Rand: rnd}
	if useCopies {
		cfg.Sender = w.fake
	}
	plan, err := sqsconsumer.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.plan = plan
	w.proc, err = sqsbatch.New(sqsbatch.Config{
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Visibility: w.fake, Rand: rnd,
		DLQ: w.fake, DLQRoutes: lambdaapi.DLQRoutes{"cola-mercadofresco-aviso-erp" + suffix: w.dlq},
		Envelope: sqsbatch.EnvelopeRules{DisableVersionCheck: true},
		// As sqsconsumer.Once: Admit before the call, the breaker inside it.
		Handler: sqsbatch.HandlerFunc(func(ctx context.Context, rec *sqsbatch.Record) error {
			if err := plan.Admit(rec); err != nil {
				return failure.Permanent("", err)
			}
			open := w.open.Load()
			if w.openOn != nil {
				open = w.openOn(rec)
			}
			if open {
				return plan.Later(ctx, rec, fmt.Errorf("erp: %w", &breaker.OpenError{Dependency: "erp", State: breaker.Open}))
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			w.calls[rec.Body()]++
			if w.failing.Load() {
				return errors.New("erp: 503 Service Unavailable")
			}
			w.done[rec.Body()]++
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
		ev, err := w.fake.Receive(ctx, w.src, w.fake.ARN(w.src), 10)
		if err != nil {
			w.t.Fatal(err)
		}
		if len(ev.Records) == 0 {
			return
		}
		resp, _ := w.proc.Process(ctx, ev)
		if err := w.fake.Settle(ctx, w.src, ev, resp, true); err != nil {
			w.t.Fatal(err)
		}
	}
}

func (w *world) send(body string) {
	in := &sqs.SendMessageInput{QueueUrl: &w.src, MessageBody: &body,
		MessageAttributes: map[string]types.MessageAttributeValue{"tipo": sqsbatch.StringAttribute("AvisoErp")}}
	if len(w.src) > 5 && w.src[len(w.src)-5:] == ".fifo" {
		in.MessageGroupId = aws.String("PED-1")
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
	// 4 receives, 150 to 300 s apart (jittered), then the redrive on the 5th.
	if at < 10*time.Minute || at > 25*time.Minute {
		t.Fatalf("without copies the message reached the DLQ after %s, want 10 to 20 min (maxReceiveCount x 150..300 s)", at)
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

// A short outage: each receive that meets the open circuit makes one
// delayed copy (and no call), and the message is processed once when the
// circuit closes.
func TestShortOutageProcessesOnce(t *testing.T) {
	w := newWorld(t, false, true)
	w.send(`{"pedido_id":"PED-1"}`)
	w.run(12 * time.Minute)
	if w.done[`{"pedido_id":"PED-1"}`] != 1 || w.dlqDepth() != 0 {
		t.Fatalf("done %v dlq %d", w.done, w.dlqDepth())
	}
	// Receives 150 to 300 s apart (jittered) meet the open circuit: 3 to 5 copies.
	if s := w.fake.Stats(w.src); s.Sent < 4 || s.Sent > 6 {
		t.Errorf("%d sends for a 12-minute outage, want the original and 3 to 5 copies", s.Sent)
	}
}

// The bound across copies: a message whose calls always fail and whose
// receives meet the open circuit in any pattern (adversarial: open on the
// last receive of every copy, as a circuit that opens after a few
// failures and closes again does; and seeded random patterns) makes at
// most maxReceiveCount calls in all, then is dead-lettered with the
// reason. Without the carried count the adversarial pattern made
// (maxReceiveCount-1) calls per copy, up to 72 copies.
func TestCallsAcrossCopiesStayBounded(t *testing.T) {
	rnd := testseed.New(t)
	patterns := map[string]func(rec *sqsbatch.Record) bool{
		"open on the last receive of every copy": func(rec *sqsbatch.Record) bool { return rec.ReceiveCount >= maxReceiveCount },
		"open on every other receive":            func(rec *sqsbatch.Record) bool { return rec.ReceiveCount%2 == 0 },
	}
	for i := range 4 {
		p := 0.3 + 0.15*float64(i)
		patterns[fmt.Sprintf("random, open with probability %.2f", p)] = func(*sqsbatch.Record) bool { return rnd.Float64() < p }
	}
	for _, name := range slices.Sorted(maps.Keys(patterns)) { // in a fixed order: the seed replays
		openOn := patterns[name]
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, false, true)
			w.failing.Store(true)
			w.openOn = openOn
			body := `{"pedido_id":"PED-1"}`
			w.send(body)
			for range 3 * 24 * 60 { // three days, a poll a minute
				w.poll()
				w.clk.Advance(time.Minute)
			}
			if got := w.calls[body]; got > maxReceiveCount {
				t.Fatalf("%d calls across the copies, more than maxReceiveCount %d", got, maxReceiveCount)
			}
			st, _ := w.fake.Inspect(w.dlq)
			if len(st) != 1 {
				t.Fatalf("%d messages in the DLQ, want the message once (source: %d)", len(st), len(w.inspect(w.src)))
			}
			// A copy whose own receives all called reaches the DLQ by the
			// queue's redrive (after maxReceiveCount receives, no reason
			// attribute); otherwise a deferred message reaches it by the
			// plan, with the budget's reason.
			reason := st[0].MessageAttributes[sqsbatch.AttrFailureReason].StringValue
			switch {
			case aws.ToString(reason) == "" && st[0].ReceiveCount < maxReceiveCount:
				t.Errorf("dead-lettered without a reason after %d receives, before the redrive's %d", st[0].ReceiveCount, maxReceiveCount)
			case aws.ToString(reason) != "" && w.fake.Stats(w.src).Sent > 1 && !strings.Contains(aws.ToString(reason), "maxReceiveCount") && !strings.Contains(aws.ToString(reason), "every deferral"):
				t.Errorf("a deferred message dead-lettered without the budget's reason: %q", aws.ToString(reason))
			}
			t.Logf("%d calls, %d sends; reason %q", w.calls[body], w.fake.Stats(w.src).Sent, aws.ToString(reason))
		})
	}
}

// A copy carries the receives spent; Admit refuses the receive that
// would exceed maxReceiveCount, and a forged negative count reads as 0.
func TestAdmit(t *testing.T) {
	plan, err := sqsconsumer.NewPlan(sqsconsumer.PlanConfig{MaxReceiveCount: maxReceiveCount})
	if err != nil {
		t.Fatal(err)
	}
	num := func(v string) events.SQSMessageAttribute {
		return events.SQSMessageAttribute{DataType: "Number", StringValue: &v}
	}
	for _, tc := range []struct {
		spent   string
		receive int
		refused bool
	}{
		{"", 4, false}, {"", 5, true}, {"3", 1, false}, {"3", 2, true}, {"-9", 4, false}, {"x", 1, false},
	} {
		rec := &sqsbatch.Record{ReceiveCount: tc.receive, Message: events.SQSMessage{MessageAttributes: map[string]events.SQSMessageAttribute{}}}
		if tc.spent != "" {
			rec.Message.MessageAttributes[sqsconsumer.AttrReceives] = num(tc.spent)
		}
		err := plan.Admit(rec)
		if got := errors.Is(err, sqsconsumer.ErrCallsSpent); got != tc.refused {
			t.Errorf("spent %q, receive %d: Admit = %v, want refused %v", tc.spent, tc.receive, err, tc.refused)
		}
	}
}

// After MaxDeferrals copies the message is dead-lettered with the reason,
// not left to the redrive policy without one.
func TestDeferralsSpentDeadLettersWithReason(t *testing.T) {
	w := newWorld(t, false, true)
	plan, err := sqsconsumer.NewPlan(sqsconsumer.PlanConfig{MaxReceiveCount: maxReceiveCount, Sender: w.fake, MaxDeferrals: 2})
	if err != nil {
		t.Fatal(err)
	}
	v := "2"
	rec := &sqsbatch.Record{ReceiveCount: 1, Message: events.SQSMessage{
		MessageId: "m-1", Body: `{"pedido_id":"PED-1"}`, EventSourceARN: w.fake.ARN(w.src),
		MessageAttributes: map[string]events.SQSMessageAttribute{sqsconsumer.AttrDeferrals: {DataType: "Number", StringValue: &v}},
	}}
	err = plan.Later(context.Background(), rec, breaker.ErrOpen)
	if !errors.Is(err, sqsconsumer.ErrDeferralsSpent) || !errors.Is(err, failure.ErrPermanent) {
		t.Fatalf("Later after MaxDeferrals = %v, want a permanent ErrDeferralsSpent", err)
	}
}

func (w *world) inspect(url string) []localaws.MessageState {
	st, _ := w.fake.Inspect(url)
	return st
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []sqsconsumer.PlanConfig{{}, {MaxReceiveCount: 4, MaxDeferrals: -1}} {
		if _, err := sqsconsumer.NewPlan(c); err == nil {
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
			sqsconsumer.AttrDeferrals: str("-50"), sqsbatch.AttrFailureReason: str("forged"), "mf-otro": str("forged"), "tipo": str("AvisoErp"),
		}, "1", 1},
		{"a counter of ours", map[string]events.SQSMessageAttribute{sqsconsumer.AttrDeferrals: {DataType: "Number", StringValue: ptr("3")}, "tipo": str("AvisoErp")}, "4", 1},
		{"ten attributes of its own", many, "1", 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, false, true)
			plan, err := sqsconsumer.NewPlan(sqsconsumer.PlanConfig{MaxReceiveCount: maxReceiveCount, Sender: w.fake})
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
			if aws.ToString(got[sqsconsumer.AttrDeferrals].StringValue) != tc.wantCount {
				t.Errorf("%s = %q, want %q", sqsconsumer.AttrDeferrals, aws.ToString(got[sqsconsumer.AttrDeferrals].StringValue), tc.wantCount)
			}
			for k, a := range got {
				if aws.ToString(a.StringValue) == "forged" || strings.Contains(aws.ToString(a.StringValue), "forged") {
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

// TestDeferredCopiesAreJittered: 30 messages meeting the open circuit
// together are copied with delays spread over 150 to 300 s, not all at
// 300 s, so they do not return together.
func TestDeferredCopiesAreJittered(t *testing.T) {
	w := newWorld(t, false, true)
	w.open.Store(true)
	for i := range 30 {
		w.send(fmt.Sprintf(`{"pedido_id":"PED-%d"}`, i))
	}
	w.poll()
	st, _ := w.fake.Inspect(w.src)
	seen := map[time.Duration]bool{}
	for _, m := range st {
		in := m.VisibleAt.Sub(w.clk.Now())
		seen[in] = true
		if in < 150*time.Second || in > 300*time.Second {
			t.Errorf("copy %s delayed %s, want 150 to 300 s", m.MessageID, in)
		}
	}
	if len(st) != 30 || len(seen) < 10 {
		t.Errorf("%d copies at %d distinct delays: want 30, spread", len(st), len(seen))
	}
}
