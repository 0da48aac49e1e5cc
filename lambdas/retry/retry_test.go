package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mercadofresco/integration/internal/testseed"
	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/retry"
)

var t0 = time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)

// seeded returns a random source whose seed is logged (MF_SEED replays it).
func seeded(t *testing.T) (retry.Rand, uint64) {
	t.Helper()
	seed := testseed.New(t).Seed
	return retry.NewSeeded(seed), seed
}

func TestFullJitterIsUniformBelowTheCeilingAtEveryAttempt(t *testing.T) {
	rnd, _ := seeded(t)
	base, cap := 100*time.Millisecond, 2*time.Second
	for _, n := range []int{0, 1, 3, 4, 5, 10, 40, 70, 1000} {
		ceiling := min(cap, base<<min(n, 20))
		lo, hi := time.Duration(1<<62), time.Duration(0)
		const draws = 2000
		for range draws {
			d := retry.FullJitter(base, cap, n, rnd)
			if d < 0 || d > ceiling {
				t.Fatalf("n=%d: %s outside [0, %s]", n, d, ceiling)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		// Full jitter: draws cover the whole range, also past the cap
		// (never a fixed maximum).
		if lo > ceiling/20 || hi < ceiling*19/20 {
			t.Errorf("n=%d: %d draws span [%s, %s], want ~[0, %s]", n, draws, lo, hi, ceiling)
		}
	}
	for _, c := range []struct {
		base, cap time.Duration
		n         int
	}{{0, time.Second, 1}, {time.Second, 0, 1}, {-time.Second, time.Second, 1}} {
		if d := retry.FullJitter(c.base, c.cap, c.n, rnd); d != 0 {
			t.Errorf("FullJitter(%s, %s, %d) = %s, want 0", c.base, c.cap, c.n, d)
		}
	}
	if d := retry.FullJitter(base, cap, -3, nil); d < 0 || d > base {
		t.Errorf("negative n: %s", d)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 120 * time.Second, true},
		{" 0 ", 0, true},
		{"Sun, 29 Nov 2026 21:00:07 GMT", 7 * time.Second, true},
		{"Sunday, 29-Nov-26 21:00:30 GMT", 30 * time.Second, true}, // RFC 850
		{"Sun Nov 29 21:01:00 2026", time.Minute, true},            // ANSI C
		{"Sun, 29 Nov 2026 20:00:00 GMT", 0, true},                 // in the past
		{"", 0, false},
		{"-5", 0, false},
		{"soon", 0, false},
		{"1.5", 0, false},
		{"99999999999", 24 * time.Hour, true},
	} {
		got, ok := retry.ParseRetryAfter(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %s, %v; want %s, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestClassify(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	refused := dialClosedPort(t)
	for _, c := range []struct {
		name  string
		ctx   context.Context
		err   error
		class retry.Class
		after time.Duration
	}{
		{"500", nil, &retry.StatusError{StatusCode: 500}, retry.ClassRetryable, 0},
		{"502", nil, &retry.StatusError{StatusCode: 502}, retry.ClassRetryable, 0},
		{"503", nil, &retry.StatusError{StatusCode: 503}, retry.ClassRetryable, 0},
		{"503 with Retry-After", nil, &retry.StatusError{StatusCode: 503, RetryAfter: 3 * time.Second}, retry.ClassThrottled, 3 * time.Second},
		{"504", nil, &retry.StatusError{StatusCode: 504}, retry.ClassRetryable, 0},
		{"501", nil, &retry.StatusError{StatusCode: 501}, retry.ClassPermanent, 0},
		{"429", nil, &retry.StatusError{StatusCode: 429, RetryAfter: 2 * time.Second}, retry.ClassThrottled, 2 * time.Second},
		{"400", nil, &retry.StatusError{StatusCode: 400}, retry.ClassPermanent, 0},
		{"401", nil, &retry.StatusError{StatusCode: 401}, retry.ClassPermanent, 0},
		{"402", nil, &retry.StatusError{StatusCode: 402}, retry.ClassPermanent, 0},
		{"404", nil, &retry.StatusError{StatusCode: 404}, retry.ClassPermanent, 0},
		{"409", nil, &retry.StatusError{StatusCode: 409}, retry.ClassPermanent, 0},
		{"422", nil, &retry.StatusError{StatusCode: 422}, retry.ClassPermanent, 0},
		{"wrapped 503", nil, fmt.Errorf("gateway: %w", &retry.StatusError{StatusCode: 503}), retry.ClassRetryable, 0},
		{"connection refused", nil, refused, retry.ClassRetryable, 0},
		{"ECONNREFUSED", nil, fmt.Errorf("x: %w", syscall.ECONNREFUSED), retry.ClassRetryable, 0},
		{"name not found", nil, &net.DNSError{Err: "no such host", Name: "api.example", IsNotFound: true}, retry.ClassRetryable, 0},
		{"name lookup timed out", nil, &net.DNSError{Err: "i/o timeout", Name: "api.example", IsTimeout: true}, retry.ClassRetryable, 0},
		{"dial timed out", nil, &net.OpError{Op: "dial", Err: timeoutErr{}}, retry.ClassRetryable, 0},
		{"connection reset", nil, &net.OpError{Op: "read", Err: syscall.ECONNRESET}, retry.ClassAmbiguous, 0},
		{"unexpected EOF", nil, io.ErrUnexpectedEOF, retry.ClassAmbiguous, 0},
		{"net timeout", nil, timeoutErr{}, retry.ClassAmbiguous, 0},
		{"attempt deadline", context.Background(), context.DeadlineExceeded, retry.ClassAmbiguous, 0},
		{"unknown", nil, errors.New("weird"), retry.ClassAmbiguous, 0},
		{"caller canceled", nil, context.Canceled, retry.ClassPermanent, 0},
		{"caller's ctx ended", canceled, &retry.StatusError{StatusCode: 503}, retry.ClassPermanent, 0},
		{"marked permanent 503", nil, failure.Permanent("", &retry.StatusError{StatusCode: 503}), retry.ClassPermanent, 0},
		{"marked poison", nil, failure.Poison(errors.New("bad body")), retry.ClassPermanent, 0},
		{"marked transient", nil, failure.Transient(errors.New("409 key in use")), retry.ClassRetryable, 0},
		{"marked retry-after", nil, failure.RetryAfter(errors.New("slow down"), time.Second), retry.ClassThrottled, time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			class, after := retry.Classify(c.ctx, c.err)
			if class != c.class || after != c.after {
				t.Errorf("Classify(%v) = %s, %s; want %s, %s", c.err, class, after, c.class, c.after)
			}
		})
	}
}

func dialClosedPort(t *testing.T) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		t.Skip("port reused between close and dial")
	}
	return err
}

// script returns an operation failing with errs in turn, then succeeding.
func script(errs ...error) (func(context.Context, int) error, *int) {
	calls := 0
	return func(context.Context, int) error {
		calls++
		if calls <= len(errs) {
			return errs[calls-1]
		}
		return nil
	}, &calls
}

func st(code int) error { return &retry.StatusError{StatusCode: code} }

func TestDoRetriesByClassAndIdempotency(t *testing.T) {
	reset := &net.OpError{Op: "read", Err: syscall.ECONNRESET}
	for _, c := range []struct {
		name      string
		errs      []error
		idem      retry.Idempotency
		wantCalls int
		wantErr   bool
		reason    retry.Reason
	}{
		{"success first", nil, retry.NotIdempotent, 1, false, ""},
		{"503 then ok", []error{st(503)}, retry.NotIdempotent, 2, false, ""},
		{"5xx until exhausted", []error{st(500), st(502), st(504), st(500)}, retry.Idempotent, 3, true, retry.ReasonExhausted},
		{"400 never retried", []error{st(400)}, retry.Idempotent, 1, true, retry.ReasonPermanent},
		{"402 never retried", []error{st(402)}, retry.Idempotent, 1, true, retry.ReasonPermanent},
		{"404 never retried", []error{st(404)}, retry.Idempotent, 1, true, retry.ReasonPermanent},
		{"429 retried", []error{st(429), st(429)}, retry.NotIdempotent, 3, false, ""},
		{"reset, not idempotent", []error{reset}, retry.NotIdempotent, 1, true, retry.ReasonNotIdempotent},
		{"reset, idempotent", []error{reset}, retry.Idempotent, 2, false, ""},
		{"timeout, not idempotent", []error{context.DeadlineExceeded}, retry.NotIdempotent, 1, true, retry.ReasonNotIdempotent},
		{"timeout, idempotent", []error{context.DeadlineExceeded, context.DeadlineExceeded}, retry.Idempotent, 3, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rnd, _ := seeded(t)
			clk := retry.NewVirtualClock(t0)
			r, err := retry.New(retry.Policy{}, retry.WithClock(clk), retry.WithRand(rnd))
			if err != nil {
				t.Fatal(err)
			}
			fn, calls := script(c.errs...)
			err = r.Do(context.Background(), c.idem, fn)
			if *calls != c.wantCalls {
				t.Errorf("calls = %d, want %d", *calls, c.wantCalls)
			}
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, want error %v", err, c.wantErr)
			}
			if err != nil {
				var g *retry.GiveUpError
				if !errors.As(err, &g) || g.Reason != c.reason || g.Attempts != c.wantCalls {
					t.Fatalf("err = %#v, want GiveUpError reason %s after %d", err, c.reason, c.wantCalls)
				}
				if !errors.Is(err, c.errs[c.wantCalls-1]) {
					t.Error("GiveUpError does not wrap the last failure")
				}
			}
			// One wait between consecutive attempts, none after the last.
			if got := len(clk.Sleeps()); got != c.wantCalls-1 {
				t.Errorf("sleeps = %d, want %d", got, c.wantCalls-1)
			}
		})
	}
}

func TestWaitsAreFullJitterUnderTheCapAtEveryAttempt(t *testing.T) {
	rnd, _ := seeded(t)
	p := retry.Policy{MaxAttempts: 10, Base: 100 * time.Millisecond, Cap: 800 * time.Millisecond}
	maxSeen := make([]time.Duration, p.MaxAttempts-1)
	minSeen := make([]time.Duration, p.MaxAttempts-1)
	for i := range minSeen {
		minSeen[i] = time.Hour
	}
	for range 300 {
		clk := retry.NewVirtualClock(t0)
		r, _ := retry.New(p, retry.WithClock(clk), retry.WithRand(rnd))
		_ = r.Do(context.Background(), retry.Idempotent, func(context.Context, int) error { return st(503) })
		sleeps := clk.Sleeps()
		if len(sleeps) != p.MaxAttempts-1 {
			t.Fatalf("%d sleeps, want %d", len(sleeps), p.MaxAttempts-1)
		}
		for i, d := range sleeps {
			if ceiling := min(p.Cap, p.Base<<i); d < 0 || d > ceiling {
				t.Fatalf("wait %d = %s, outside [0, %s]", i+1, d, ceiling)
			}
			maxSeen[i], minSeen[i] = max(maxSeen[i], d), min(minSeen[i], d)
		}
	}
	// Past the cap (waits 4..9) the waits still vary over [0, cap].
	for i := 3; i < len(maxSeen); i++ {
		if minSeen[i] > p.Cap/10 || maxSeen[i] < p.Cap*9/10 {
			t.Errorf("wait %d spans [%s, %s]: not full jitter", i+1, minSeen[i], maxSeen[i])
		}
	}
}

func TestRetryAfterIsHonouredWithJitterOnTop(t *testing.T) {
	rnd, _ := seeded(t)
	now := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	// A real HTTP answer's Retry-After (ParseRetryAfter): seconds and HTTP-date.
	for _, header := range []string{"2", now.Add(2 * time.Second).Format(http.TimeFormat)} {
		t.Run(header, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", header)
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"error":"slow down"}`)
			}))
			defer srv.Close()
			clk := retry.NewVirtualClock(now)
			p := retry.Policy{MaxAttempts: 2, ThrottleBase: 500 * time.Millisecond}
			r, _ := retry.New(p, retry.WithClock(clk), retry.WithRand(rnd))
			calls := 0
			err := r.Do(context.Background(), retry.NotIdempotent, func(ctx context.Context, _ int) error {
				calls++
				resp, err := http.Get(srv.URL)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				ra, _ := retry.ParseRetryAfter(resp.Header.Get("Retry-After"), clk.Now())
				body, _ := io.ReadAll(resp.Body)
				return &retry.StatusError{StatusCode: resp.StatusCode, RetryAfter: ra, Body: string(body)}
			})
			var se *retry.StatusError
			if !errors.As(err, &se) || se.StatusCode != 429 || !strings.Contains(se.Error(), "slow down") {
				t.Fatalf("err = %v", err)
			}
			sleeps := clk.Sleeps()
			if calls != 2 || len(sleeps) != 1 {
				t.Fatalf("calls %d sleeps %v", calls, sleeps)
			}
			if sleeps[0] < 2*time.Second || sleeps[0] > 2*time.Second+p.ThrottleBase {
				t.Errorf("waited %s, want Retry-After 2s plus up to %s of jitter", sleeps[0], p.ThrottleBase)
			}
		})
	}
	// Throttling without Retry-After waits on ThrottleBase, longer than Base.
	clk := retry.NewVirtualClock(now)
	r, _ := retry.New(retry.Policy{MaxAttempts: 2, Base: time.Millisecond, Cap: time.Millisecond, ThrottleBase: time.Second}, retry.WithClock(clk), retry.WithRand(rnd))
	_ = r.Do(context.Background(), retry.NotIdempotent, func(context.Context, int) error { return st(429) })
	if s := clk.Sleeps(); len(s) != 1 || s[0] > time.Second {
		t.Errorf("throttle wait %v, want one in [0, 1s]", s)
	}
	// A Retry-After beyond MaxRetryAfter stops at once.
	clk = retry.NewVirtualClock(now)
	r, _ = retry.New(retry.Policy{MaxRetryAfter: 5 * time.Second}, retry.WithClock(clk))
	err := r.Do(context.Background(), retry.Idempotent, func(context.Context, int) error {
		return &retry.StatusError{StatusCode: 429, RetryAfter: time.Minute}
	})
	var g *retry.GiveUpError
	if !errors.As(err, &g) || g.Reason != retry.ReasonRetryAfter || len(clk.Sleeps()) != 0 {
		t.Errorf("err %v sleeps %v, want an immediate give-up", err, clk.Sleeps())
	}
}

func TestNeverWaitsPastTheDeadline(t *testing.T) {
	// Virtual clock anchored on the wall clock, as Next compares it with
	// ctx's deadline.
	clk := retry.NewVirtualClock(time.Now())
	ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(time.Second))
	defer cancel()
	r, _ := retry.New(retry.Policy{MaxAttempts: 5}, retry.WithClock(clk))
	calls := 0
	err := r.Do(ctx, retry.Idempotent, func(context.Context, int) error {
		calls++
		return &retry.StatusError{StatusCode: 429, RetryAfter: 2 * time.Second}
	})
	var g *retry.GiveUpError
	if !errors.As(err, &g) || g.Reason != retry.ReasonDeadline || calls != 1 || len(clk.Sleeps()) != 0 {
		t.Fatalf("err %v calls %d sleeps %v; want an immediate give-up with reason deadline", err, calls, clk.Sleeps())
	}

	// Real clock: a cancelled wait returns at once with the last error.
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r, _ = retry.New(retry.Policy{MaxAttempts: 5, Base: 10 * time.Second, Cap: 10 * time.Second})
	start := time.Now()
	err = r.Do(ctx, retry.Idempotent, func(context.Context, int) error { return st(503) })
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("Do took %s with a 100 ms deadline", el)
	}
	var se *retry.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want the last failure", err)
	}
}

// spent is a Budget with no room.
type spent struct{ asked int }

func (s *spent) TryRetry(context.Context) bool { s.asked++; return false }

// TestBudgetStopsRetriesBeforeTheWait: a failure the policy would retry is
// not retried when the budget has no room, and the error says so.
func TestBudgetStopsRetriesBeforeTheWait(t *testing.T) {
	rnd, _ := seeded(t)
	clk := retry.NewVirtualClock(t0)
	b := &spent{}
	r, _ := retry.New(retry.Policy{MaxAttempts: 5}, retry.WithClock(clk), retry.WithRand(rnd), retry.WithBudget(b))
	calls := 0
	err := r.Do(context.Background(), retry.Idempotent, func(context.Context, int) error { calls++; return st(503) })
	if calls != 1 || b.asked != 1 || !errors.Is(err, retry.ErrBudgetExhausted) || len(clk.Sleeps()) != 0 {
		t.Errorf("calls %d, budget asked %d, err %v, sleeps %v: want one call, no wait, ErrBudgetExhausted", calls, b.asked, err, clk.Sleeps())
	}
}

func TestPolicyFromEnvAndValidation(t *testing.T) {
	env := lambdaenv.FromMap(map[string]string{"GATEWAY_MAX_ATTEMPTS": "4", "GATEWAY_BACKOFF_BASE": "200ms"})
	p := retry.PolicyFromEnv(env, "GATEWAY")
	if err := env.Err(); err != nil {
		t.Fatal(err)
	}
	r, err := retry.New(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Policy(); got.MaxAttempts != 4 || got.Base != 200*time.Millisecond || got.Cap != lambdaapi.DefaultBackoffCap {
		t.Errorf("policy %+v", got)
	}
	bad := lambdaenv.FromMap(map[string]string{"GATEWAY_MAX_ATTEMPTS": "40"})
	retry.PolicyFromEnv(bad, "GATEWAY")
	if err := bad.Err(); err == nil || !strings.Contains(err.Error(), "GATEWAY_MAX_ATTEMPTS") {
		t.Errorf("40 attempts accepted: %v", err)
	}
	for _, p := range []retry.Policy{{MaxAttempts: 11}, {MaxAttempts: -1}, {Base: time.Second, Cap: time.Millisecond}, {Base: -1}} {
		if _, err := retry.New(p); err == nil {
			t.Errorf("New(%+v) accepted", p)
		}
	}
}
