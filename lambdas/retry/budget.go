package retry

import (
	"cmp"
	"fmt"
	"sync"
	"time"
)

// Budget defaults.
const (
	DefaultBudgetRatio   = 0.10
	DefaultBudgetWindow  = 10 * time.Second
	DefaultBudgetBuckets = 10
	DefaultMinRetries    = 3
)

// BudgetConfig configures a Budget; the zero value gives the defaults.
type BudgetConfig struct {
	// Ratio is the largest share of calls in the window that may be retries
	// (default 0.10: "at most ~10 % of calls may be retries").
	Ratio float64
	// Window is the sliding window (default 10 s), kept as Buckets buckets
	// (default 10).
	Window  time.Duration
	Buckets int
	// MinRetries are allowed per window whatever the ratio (default 3), so a
	// process with little traffic can still retry a single blip. Set it
	// below 0 for none.
	MinRetries int
	// Clock defaults to SystemClock.
	Clock Clock
}

// Budget is a retry budget for one dependency, shared by every caller in the
// process. Safe for concurrent use.
type Budget struct {
	ratio      float64
	minRetries int
	bucket     time.Duration
	clock      Clock

	mu      sync.Mutex
	slots   []budgetSlot
	calls   int64 // cumulative, for State
	retries int64
	denied  int64
}

type budgetSlot struct {
	index          int64 // bucket number since the epoch
	calls, retries int64
}

// NewBudget returns a budget. It reports an invalid configuration (a ratio
// outside [0, 1], a window shorter than its bucket count in nanoseconds).
func NewBudget(cfg BudgetConfig) (*Budget, error) {
	cfg.Ratio = cmp.Or(cfg.Ratio, DefaultBudgetRatio)
	if cfg.Ratio < 0 || cfg.Ratio > 1 {
		return nil, fmt.Errorf("retry: BudgetConfig.Ratio %g not in (0, 1]", cfg.Ratio)
	}
	cfg.Window = cmp.Or(cfg.Window, DefaultBudgetWindow)
	cfg.Buckets = cmp.Or(cfg.Buckets, DefaultBudgetBuckets)
	if cfg.Window < 0 || cfg.Buckets < 0 || cfg.Window/time.Duration(cfg.Buckets) <= 0 {
		return nil, fmt.Errorf("retry: BudgetConfig window %s in %d buckets is invalid", cfg.Window, cfg.Buckets)
	}
	switch {
	case cfg.MinRetries == 0:
		cfg.MinRetries = DefaultMinRetries
	case cfg.MinRetries < 0:
		cfg.MinRetries = 0
	}
	cfg.Clock = cmp.Or(cfg.Clock, SystemClock)
	return &Budget{
		ratio: cfg.Ratio, minRetries: cfg.MinRetries, clock: cfg.Clock,
		bucket: cfg.Window / time.Duration(cfg.Buckets),
		slots:  make([]budgetSlot, cfg.Buckets),
	}, nil
}

// slot returns the current bucket, recycling an expired one.
func (b *Budget) slot(now time.Time) *budgetSlot {
	idx := now.UnixNano() / int64(b.bucket)
	s := &b.slots[int(uint64(idx)%uint64(len(b.slots)))]
	if s.index != idx {
		*s = budgetSlot{index: idx}
	}
	return s
}

// window sums the live buckets.
func (b *Budget) window(now time.Time) (calls, retries int64) {
	idx := now.UnixNano() / int64(b.bucket)
	for _, s := range b.slots {
		if s.index > idx-int64(len(b.slots)) && s.index <= idx {
			calls += s.calls
			retries += s.retries
		}
	}
	return calls, retries
}

// RecordCall counts a first attempt.
func (b *Budget) RecordCall() {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.slot(now).calls++
	b.calls++
}

// TryRetry reports whether one more retry fits in the budget and, if so,
// counts it (as a call and a retry). A refusal is counted as a denial.
func (b *Budget) TryRetry() bool {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	calls, retries := b.window(now)
	// Allowed while retries, including this one, stay within Ratio of all
	// calls including this one, or within the per-window floor.
	if retries >= int64(b.minRetries) && float64(retries+1) > b.ratio*float64(calls+1) {
		b.denied++
		return false
	}
	s := b.slot(now)
	s.calls++
	s.retries++
	b.calls++
	b.retries++
	return true
}

// BudgetState is a snapshot for metrics and logs.
type BudgetState struct {
	// WindowCalls and WindowRetries are the counts in the sliding window;
	// Ratio is WindowRetries/WindowCalls (0 with no calls).
	WindowCalls, WindowRetries int64
	Ratio                      float64
	// Calls, Retries and Denied are cumulative since the budget was made.
	Calls, Retries, Denied int64
}

// State returns the budget's current state.
func (b *Budget) State() BudgetState {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	calls, retries := b.window(now)
	st := BudgetState{WindowCalls: calls, WindowRetries: retries, Calls: b.calls, Retries: b.retries, Denied: b.denied}
	if calls > 0 {
		st.Ratio = float64(retries) / float64(calls)
	}
	return st
}
