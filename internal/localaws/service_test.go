package localaws

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"
)

type counterHandler struct {
	mu sync.Mutex
	n  int
}

func (c *counterHandler) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *counterHandler) handle(r ServiceRequest) ServiceResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return JSON(201, `{"n":`+string(rune('0'+c.n))+`}`)
}

func post(t *testing.T, ctx context.Context, s *Service, key, body string) (*http.Response, string, error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/x", bytes.NewBufferString(body))
	// net/http replays a request carrying Idempotency-Key once on a reused
	// connection that fails; the tests count every attempt themselves.
	req.GetBody = nil
	if key != "" {
		req.Header.Set(HeaderIdempotencyKey, key)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b), nil
}

func TestIdempotencyKeySemantics(t *testing.T) {
	h := &counterHandler{}
	s := NewService(h.handle)
	defer s.Close()
	ctx := context.Background()
	r1, b1, err := post(t, ctx, s, "cobro:P1", `{"a":1}`)
	if err != nil || r1.StatusCode != 201 {
		t.Fatal(r1, err)
	}
	r2, b2, _ := post(t, ctx, s, "cobro:P1", `{"a":1}`)
	if r2.StatusCode != 201 || b2 != b1 || r2.Header.Get(HeaderReplayed) != "true" {
		t.Errorf("repeat: %d %q %v, want the stored answer %q replayed", r2.StatusCode, b2, r2.Header, b1)
	}
	if r3, _, _ := post(t, ctx, s, "cobro:P1", `{"a":2}`); r3.StatusCode != 422 {
		t.Errorf("same key, other body: %d, want 422", r3.StatusCode)
	}
	post(t, ctx, s, "", `{}`)
	post(t, ctx, s, "", `{}`)
	if h.count() != 3 || len(s.Effects()) != 3 {
		t.Errorf("effects %d (handler %d), want 3: one per key plus one per keyless request", len(s.Effects()), h.count())
	}
	reqs := s.Requests()
	if len(reqs) != 5 || !reqs[1].Replayed || reqs[1].Effect || !reqs[0].Effect {
		t.Errorf("ledger %+v", reqs)
	}
}

func TestConcurrentSameKeyGets409(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	s := NewService(func(ServiceRequest) ServiceResponse {
		entered <- struct{}{}
		<-release
		return JSON(201, `{}`)
	})
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan int)
	go func() {
		r, _, _ := post(t, ctx, s, "k", `{}`)
		done <- r.StatusCode
	}()
	<-entered
	r, _, _ := post(t, ctx, s, "k", `{}`)
	if r.StatusCode != http.StatusConflict {
		t.Errorf("second request while the first runs: %d, want 409", r.StatusCode)
	}
	close(release)
	if got := <-done; got != 201 {
		t.Errorf("first: %d", got)
	}
}

func TestFaults(t *testing.T) {
	h := &counterHandler{}
	s := NewService(h.handle)
	defer s.Close()
	ctx := context.Background()

	s.Inject(Rule{Times: 1, Fault: Fault{Status: 429, RetryAfter: "2"}})
	r, _, _ := post(t, ctx, s, "k1", `{}`)
	if r.StatusCode != 429 || r.Header.Get("Retry-After") != "2" || h.count() != 0 {
		t.Errorf("429 fault: %d %q effects %d", r.StatusCode, r.Header.Get("Retry-After"), h.count())
	}
	if r, _, _ := post(t, ctx, s, "k1", `{}`); r.StatusCode != 201 || h.count() != 1 {
		t.Errorf("after a one-time fault, the same key must run the effect (nothing was stored): %d", r.StatusCode)
	}

	s.Inject(Rule{Times: 1, Fault: Fault{Reset: true}})
	_, _, err := post(t, ctx, s, "k2", `{}`)
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
		t.Errorf("reset: err = %v, want a connection reset", err)
	}
	if h.count() != 1 {
		t.Errorf("reset before the effect applied it")
	}

	s.Inject(Rule{Times: 1, Fault: Fault{HangAfterEffect: true}})
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, _, err = post(t, tctx, s, "k3", `{}`)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hang after effect: err = %v, want the client's timeout", err)
	}
	if h.count() != 2 {
		t.Errorf("effects %d after hang-after-effect, want 2", h.count())
	}
	r, _, _ = post(t, ctx, s, "k3", `{}`)
	if r.StatusCode != 201 || r.Header.Get(HeaderReplayed) != "true" || h.count() != 2 {
		t.Errorf("retry after the timeout: %d replayed=%q effects %d; want the stored answer, no new effect", r.StatusCode, r.Header.Get(HeaderReplayed), h.count())
	}

	s.Inject(Rule{Times: 1, Fault: Fault{ResetAfterEffect: true}})
	if _, _, err := post(t, ctx, s, "k4", `{}`); err == nil {
		t.Error("reset after effect: no error")
	}
	if h.count() != 3 {
		t.Errorf("reset after effect did not apply it")
	}

	s.Inject(Rule{Times: 1, Fault: Fault{Latency: 50 * time.Millisecond}})
	start := time.Now()
	post(t, ctx, s, "k5", `{}`)
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Errorf("latency fault: answered in %s", el)
	}
	faults := map[string]int{}
	for _, r := range s.Requests() {
		faults[r.Fault]++
	}
	for _, f := range []string{"status-429", "reset", "hang-after-effect", "reset-after-effect", "latency"} {
		if faults[f] != 1 {
			t.Errorf("ledger: fault %s recorded %d times (%v)", f, faults[f], faults)
		}
	}
}

// manualClock is a clock a test moves by hand.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestKeyRetentionAndModes(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		opts    []ServiceOption
		advance time.Duration
		// effects after two requests with one key, the clock advanced
		// between them
		wantEffects  int
		wantReplayed int
	}{
		{name: "default retention, within it", advance: 23 * time.Hour, wantEffects: 1, wantReplayed: 1},
		{name: "default retention, past it", advance: DefaultKeyRetention, wantEffects: 2},
		{name: "short retention, past it", opts: []ServiceOption{WithKeyRetention(time.Minute)}, advance: time.Minute, wantEffects: 2},
		{name: "forever", opts: []ServiceOption{WithKeyRetention(0)}, advance: 1000 * time.Hour, wantEffects: 1, wantReplayed: 1},
		{name: "keys ignored", opts: []ServiceOption{WithoutIdempotency()}, wantEffects: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &counterHandler{}
			clock := &manualClock{now: time.Date(2026, 11, 27, 19, 0, 0, 0, time.UTC)}
			s := NewService(h.handle, append([]ServiceOption{WithClock(clock.Now)}, tt.opts...)...)
			defer s.Close()
			if r, _, err := post(t, ctx, s, "cobro:P1", `{"a":1}`); err != nil || r.StatusCode != 201 {
				t.Fatalf("first: %v %v", r, err)
			}
			clock.advance(tt.advance)
			r, _, err := post(t, ctx, s, "cobro:P1", `{"a":1}`)
			if err != nil || r.StatusCode != 201 {
				t.Fatalf("second: %v %v", r, err)
			}
			replayed := 0
			for _, r := range s.Requests() {
				if r.Replayed {
					replayed++
				}
			}
			if h.count() != tt.wantEffects || len(s.Effects()) != tt.wantEffects || replayed != tt.wantReplayed {
				t.Errorf("handler ran %d times, %d effects and %d replays in the ledger; want %d effects, %d replayed", h.count(), len(s.Effects()), replayed, tt.wantEffects, tt.wantReplayed)
			}
		})
	}
}

func TestAnswerLostIsRecorded(t *testing.T) {
	h := &counterHandler{}
	s := NewService(h.handle)
	defer s.Close()
	ctx := context.Background()
	s.Inject(Rule{Times: 1, Fault: Fault{HangAfterEffect: true}},
		Rule{Times: 1, Fault: Fault{ResetAfterEffect: true}},
		Rule{Times: 1, Fault: Fault{Reset: true}})
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, _, _ = post(t, tctx, s, "k1", `{}`)
	cancel()
	_, _, _ = post(t, ctx, s, "k2", `{}`)
	_, _, _ = post(t, ctx, s, "k3", `{}`)
	_, _, _ = post(t, ctx, s, "k4", `{}`)
	want := map[string]bool{"k1": true, "k2": true, "k3": false, "k4": false}
	for _, r := range s.Requests() {
		if r.AnswerLost != want[r.IdempotencyKey] {
			t.Errorf("%s (%s): AnswerLost %v, want %v", r.IdempotencyKey, r.Fault, r.AnswerLost, want[r.IdempotencyKey])
		}
	}
}
