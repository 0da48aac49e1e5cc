package retry

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// Policy is the retry policy of one kind of call. The zero value gives the
// defaults.
type Policy struct {
	// MaxAttempts counts every attempt, the first included (default 3,
	// at most lambdaapi.MaxAttemptsLimit). 1 disables retries.
	MaxAttempts int
	// Base and Cap shape the full-jitter waits: uniform(0, min(Cap,
	// Base·2^n)) before retry n+1 (defaults 100 ms and 5 s).
	Base, Cap time.Duration
	// ThrottleBase replaces Base for throttling answers (default 1 s), on top
	// of the server's Retry-After.
	ThrottleBase time.Duration
	// MaxRetryAfter is the longest Retry-After honoured (default 20 s); a
	// longer one stops the retries at once.
	MaxRetryAfter time.Duration
}

func (p Policy) withDefaults() (Policy, error) {
	p.MaxAttempts = cmp.Or(p.MaxAttempts, lambdaapi.DefaultMaxAttempts)
	p.Base = cmp.Or(p.Base, lambdaapi.DefaultBackoffBase)
	p.Cap = cmp.Or(p.Cap, lambdaapi.DefaultBackoffCap)
	p.ThrottleBase = cmp.Or(p.ThrottleBase, lambdaapi.DefaultThrottleBase)
	p.MaxRetryAfter = cmp.Or(p.MaxRetryAfter, lambdaapi.DefaultMaxRetryAfter)
	var problems []string
	if p.MaxAttempts < 1 || p.MaxAttempts > lambdaapi.MaxAttemptsLimit {
		problems = append(problems, fmt.Sprintf("MaxAttempts %d not in 1..%d", p.MaxAttempts, lambdaapi.MaxAttemptsLimit))
	}
	if p.Base < 0 || p.Cap < 0 || p.ThrottleBase < 0 || p.MaxRetryAfter < 0 {
		problems = append(problems, "negative duration")
	}
	if p.Cap < p.Base {
		problems = append(problems, fmt.Sprintf("Cap %s below Base %s", p.Cap, p.Base))
	}
	if len(problems) > 0 {
		return p, fmt.Errorf("retry: invalid Policy: %v", problems)
	}
	return p, nil
}

// Env is what PolicyFromEnv reads; *lambdaenv.Env implements it.
type Env interface {
	Int(key string, def, min, max int) int
	Duration(key string, def, min, max time.Duration) time.Duration
}

// PolicyFromEnv reads a Policy from the Lambda's environment (the
// lambdaapi.EnvSuffix* variables of prefix), so that the
// attempts a function runs with are the number its template shows (the
// CDK sets <prefix>_MAX_ATTEMPTS and the synth-time attempts guardrail reads
// it). Unset variables keep the defaults; bad values are reported by env.
func PolicyFromEnv(env Env, prefix string) Policy {
	return Policy{
		MaxAttempts: env.Int(prefix+lambdaapi.EnvSuffixMaxAttempts, lambdaapi.DefaultMaxAttempts, 1, lambdaapi.MaxAttemptsLimit),
		Base:        env.Duration(prefix+lambdaapi.EnvSuffixBackoffBase, lambdaapi.DefaultBackoffBase, time.Millisecond, time.Minute),
		Cap:         env.Duration(prefix+lambdaapi.EnvSuffixBackoffCap, lambdaapi.DefaultBackoffCap, time.Millisecond, 5*time.Minute),
	}
}

// Idempotency is the caller's statement about the operation: whether
// repeating it after an unknown outcome (a timeout) is safe.
type Idempotency bool

// Idempotency values.
const (
	NotIdempotent Idempotency = false
	Idempotent    Idempotency = true
)

// Budget is a dependency's retry budget: breaker.Breaker, which keeps it
// in Valkey for the whole fleet (lambdas/httpdep wires it).
type Budget interface {
	// TryRetry reports whether a retry may be made now.
	TryRetry(ctx context.Context) bool
}

// Retrier runs operations under a Policy. Safe for concurrent use; create
// one per dependency and kind of call, sharing the dependency's Budget.
type Retrier struct {
	p        Policy
	budget   Budget
	clock    Clock
	rnd      Rand
	observer func(RetryEvent)
}

// RetryEvent describes a retry about to wait (for logs and metrics).
type RetryEvent struct {
	Attempt int // the attempt that failed
	Wait    time.Duration
	Class   Class
	Err     error
}

// Option configures a Retrier.
type Option func(*Retrier)

// WithBudget makes retries draw on b (nil: no budget).
func WithBudget(b Budget) Option { return func(r *Retrier) { r.budget = b } }

// WithClock sets the clock (default SystemClock).
func WithClock(c Clock) Option { return func(r *Retrier) { r.clock = c } }

// WithRand sets the random source of the waits (default: math/rand/v2's
// global source). It is used under a lock, so a seeded *rand.Rand is fine.
func WithRand(rnd Rand) Option { return func(r *Retrier) { r.rnd = &lockedRand{r: rnd} } }

// WithObserver calls f before every retry's wait.
func WithObserver(f func(RetryEvent)) Option { return func(r *Retrier) { r.observer = f } }

// New returns a Retrier for p (zero fields take the defaults).
func New(p Policy, opts ...Option) (*Retrier, error) {
	p, err := p.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &Retrier{p: p, clock: SystemClock, rnd: globalRand{}}
	for _, o := range opts {
		o(r)
	}
	return r, nil
}

// Policy returns the effective policy (defaults applied).
func (r *Retrier) Policy() Policy { return r.p }

// Decision is what Next decided after a failed attempt.
type Decision struct {
	Retry  bool
	Wait   time.Duration // before the next attempt, when Retry
	Reason Reason        // why not, when !Retry
	Class  Class
}

// Next decides, after attempt number attempt (1-based) failed with err,
// whether to retry and how long to wait first. ctx's deadline is compared
// with the Retrier's clock.
func (r *Retrier) Next(ctx context.Context, attempt int, err error, idem Idempotency) Decision {
	class, after := Classify(ctx, err)
	d := Decision{Class: class}
	switch {
	case ctx.Err() != nil:
		d.Reason = ReasonCanceled
		return d
	case class == ClassPermanent:
		d.Reason = ReasonPermanent
		return d
	case class == ClassAmbiguous && idem != Idempotent:
		d.Reason = ReasonNotIdempotent
		return d
	case attempt >= r.p.MaxAttempts:
		d.Reason = ReasonExhausted
		return d
	}
	n := attempt - 1
	if class == ClassThrottled {
		if after > r.p.MaxRetryAfter {
			d.Reason = ReasonRetryAfter
			return d
		}
		d.Wait = after + FullJitter(r.p.ThrottleBase, max(r.p.Cap, r.p.ThrottleBase), n, r.rnd)
	} else {
		d.Wait = FullJitter(r.p.Base, r.p.Cap, n, r.rnd)
	}
	if dl, ok := ctx.Deadline(); ok && !r.clock.Now().Add(d.Wait).Before(dl) {
		d.Reason = ReasonDeadline
		return d
	}
	if r.budget != nil && !r.budget.TryRetry(ctx) {
		d.Reason = ReasonBudget
		return d
	}
	d.Retry = true
	return d
}

// Do calls fn until it succeeds or the policy says stop, and returns nil
// or a *GiveUpError wrapping fn's last error. fn receives ctx and the
// attempt number (1-based); it should bound each attempt itself (the
// payment client gives each attempt its read timeout).
func (r *Retrier) Do(ctx context.Context, idem Idempotency, fn func(ctx context.Context, attempt int) error) error {
	for attempt := 1; ; attempt++ {
		err := fn(ctx, attempt)
		if err == nil {
			return nil
		}
		d := r.Next(ctx, attempt, err, idem)
		if !d.Retry {
			return &GiveUpError{Attempts: attempt, Reason: d.Reason, Class: d.Class, Err: err}
		}
		if r.observer != nil {
			r.observer(RetryEvent{Attempt: attempt, Wait: d.Wait, Class: d.Class, Err: err})
		}
		if serr := r.clock.Sleep(ctx, d.Wait); serr != nil {
			return &GiveUpError{Attempts: attempt, Reason: ReasonCanceled, Class: d.Class, Err: err}
		}
	}
}
