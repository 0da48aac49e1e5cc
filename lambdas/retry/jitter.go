package retry

import (
	"cmp"
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Rand is the random source of the waits: *math/rand/v2.Rand satisfies it.
// Int64N returns a value in [0, n) and is never called with n <= 0.
type Rand interface {
	Int64N(n int64) int64
}

// globalRand uses math/rand/v2's top-level functions (safe for concurrent use).
type globalRand struct{}

func (globalRand) Int64N(n int64) int64 { return rand.Int64N(n) }

// lockedRand serialises a Rand that is not safe for concurrent use (a seeded
// *rand.Rand) so one Retrier can be shared by goroutines.
type lockedRand struct {
	mu sync.Mutex
	r  Rand
}

func (l *lockedRand) Int64N(n int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Int64N(n)
}

// NewSeeded returns a deterministic random source for FullJitter and
// WithRand (tests and simulations print the seed).
func NewSeeded(seed uint64) Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// FullJitter returns a wait drawn uniformly from [0, min(cap, base·2^n)]
// (Brooker's "full jitter"; n = 0 for the first retry). It never returns a
// fixed maximum: past the cap the draw is uniform over [0, cap]. A nil rnd
// uses math/rand/v2's global source. Non-positive base or cap give 0.
func FullJitter(base, cap time.Duration, n int, rnd Rand) time.Duration {
	if base <= 0 || cap <= 0 {
		return 0
	}
	n = max(n, 0)
	ceiling := cap
	if n < 62 {
		if d := base << uint(n); d > 0 && d>>uint(n) == base && d < cap {
			ceiling = d
		}
	}
	if rnd == nil {
		rnd = globalRand{}
	}
	return time.Duration(rnd.Int64N(int64(ceiling) + 1))
}

// HalfJitter returns a delay drawn uniformly from [d/2, d]: the queue
// layer's wait (a message that failed or was deferred comes back within
// its delay, not all at once with the others). A nil rnd uses math/rand/v2's
// global source; d <= 0 gives 0.
func HalfJitter(d time.Duration, rnd Rand) time.Duration {
	if d <= 0 {
		return 0
	}
	return d - time.Duration(cmp.Or[Rand](rnd, globalRand{}).Int64N(int64(d/2)+1))
}

// Clock is the time source of a Retrier. The real one is
// [SystemClock]; simulations supply a virtual one.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx ends, whichever comes first, and returns
	// ctx.Err() in the second case.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the wall clock.
var SystemClock Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// VirtualClock is a Clock whose time moves only when told to (Advance) or
// when someone sleeps on it: Sleep advances the clock by d at once and
// records d. It lets tests and simulations run retry loops in no real time.
// Safe for concurrent use (concurrent sleepers each advance it).
type VirtualClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

// NewVirtualClock returns a clock stopped at start.
func NewVirtualClock(start time.Time) *VirtualClock { return &VirtualClock{now: start} }

// Now implements Clock.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *VirtualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t (simulations drive it from their event queue).
func (c *VirtualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Sleep implements Clock: it returns ctx.Err() if ctx has ended, otherwise
// advances the clock by d.
func (c *VirtualClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(max(d, 0))
	return nil
}

// Sleeps returns the durations slept so far.
func (c *VirtualClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}
