package breaker

import (
	"context"
	"sync"
	"time"
)

// State is a circuit's state.
type State int

// Circuit states.
const (
	Closed State = iota
	Open
	HalfOpen
)

func (s State) String() string {
	switch s {
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	default:
		return "closed"
	}
}

// Snapshot is the shared state of one circuit as a store operation left it,
// plus what that operation did for its caller.
type Snapshot struct {
	State State
	// Failures is the count of consecutive failures recorded while closed.
	Failures int
	// OpenUntil ends the open period (Open).
	OpenUntil time.Time
	// ProbeUntil ends the lease of the probe in flight (HalfOpen).
	ProbeUntil time.Time
	// Generation counts the transitions to open so far.
	Generation int64
	// Calls and Retries are the dependency's calls and retries over the
	// last RetryWindow, across every instance (the retry budget).
	Calls, Retries int64

	// Denied is true when Acquire refused a retry: the budget is spent.
	Denied bool

	// Probe is true when Acquire granted the caller the single probe.
	Probe bool
	// Opened is true when the caller's Record or Settle moved the circuit to
	// open; Closed when its Settle closed it.
	Opened, Closed bool
}

// Params are the circuit's thresholds and the retry budget, sent with
// every store operation so the store keeps no configuration.
type Params struct {
	Threshold  int
	OpenPeriod time.Duration
	ProbeLease time.Duration
	// A retry fits while the retries, this one included, stay within
	// RetryRatio of the calls, this one included, over the sliding
	// RetryWindow (the previous window's counts weighted by its overlap),
	// or while fewer than RetryFloor were made.
	RetryRatio  float64
	RetryWindow time.Duration
	RetryFloor  int
}

func (p Params) retryFits(calls, retries float64) bool {
	return retries < float64(p.RetryFloor) || retries+1 <= p.RetryRatio*(calls+1)
}

// Outcome is the result of a probe.
type Outcome int

// Probe outcomes.
const (
	// Success closes the circuit.
	Success Outcome = iota
	// Failure reopens it for another open period.
	Failure
	// Abandoned releases the probe's lease without a verdict (the caller's
	// context ended), so the next caller probes.
	Abandoned
)

// Store keeps the shared state of circuits. Each method is one atomic
// operation (one round trip for a remote store). Implementations: RedisStore
// (Valkey/Redis, shared by every Lambda instance) and MemoryStore (one
// process: tests and the retry-storm simulation).
type Store interface {
	// Acquire returns the state of key. When the circuit is open past
	// OpenUntil, or half-open with an expired probe lease, it grants the
	// caller the probe: the state becomes HalfOpen with token as the probe
	// and now+ProbeLease as its lease, and Snapshot.Probe is true. A call
	// it allows (closed, or the probe) is counted; a retry of a closed
	// circuit only if it fits the budget (else Snapshot.Denied).
	Acquire(ctx context.Context, key, token string, retry bool, now time.Time, p Params) (Snapshot, error)
	// Record counts the outcome of a call made while the caller believed the
	// circuit closed (and the call itself when count is true). A failure that reaches Threshold consecutive failures
	// opens the circuit until now+OpenPeriod (Snapshot.Opened); a success
	// resets the count. Outcomes arriving while the circuit is not closed
	// are ignored.
	Record(ctx context.Context, key string, failed, count bool, now time.Time, p Params) (Snapshot, error)
	// Settle ends the probe identified by token. A token that is no longer
	// the probe (its lease expired and another caller took over) changes
	// nothing.
	Settle(ctx context.Context, key, token string, o Outcome, now time.Time, p Params) (Snapshot, error)
}

// MemoryStore is a Store in process memory, with the same semantics as
// RedisStore. Safe for concurrent use.
type MemoryStore struct {
	mu       sync.Mutex
	circuits map[string]*memCircuit
}

type memCircuit struct {
	snap  Snapshot
	token string
	// The budget's window number, its calls and retries, the previous one's.
	w, cc, cr, pc, pr int64
}

// budget rolls the budget's window to now, counts a call (count) or a
// retry that fits (retry) and sets the snapshot's figures, as the Redis
// scripts do.
func (c *memCircuit) budget(now time.Time, p Params, count, retry bool) {
	t, win := now.UnixMilli(), p.RetryWindow.Milliseconds()
	if w := t / win; w > c.w {
		c.pc, c.pr = 0, 0
		if w == c.w+1 {
			c.pc, c.pr = c.cc, c.cr
		}
		c.w, c.cc, c.cr = w, 0, 0
	}
	rest := 1 - float64(t%win)/float64(win)
	calls, retries := float64(c.cc)+float64(c.pc)*rest, float64(c.cr)+float64(c.pr)*rest
	c.snap.Denied = retry && !p.retryFits(calls, retries)
	if retry && !c.snap.Denied {
		c.cr++
		retries++
	}
	if count && !c.snap.Denied {
		c.cc++
		calls++
	}
	c.snap.Calls, c.snap.Retries = int64(calls), int64(retries)
}

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore { return &MemoryStore{circuits: map[string]*memCircuit{}} }

func (m *MemoryStore) get(key string) *memCircuit {
	c, ok := m.circuits[key]
	if !ok {
		c = &memCircuit{}
		m.circuits[key] = c
	}
	return c
}

// Acquire implements Store.
func (m *MemoryStore) Acquire(_ context.Context, key, token string, retry bool, now time.Time, p Params) (Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.get(key)
	s := c.snap
	probe := (s.State == Open && !now.Before(s.OpenUntil)) || (s.State == HalfOpen && !now.Before(s.ProbeUntil))
	if probe {
		c.snap.State, c.snap.ProbeUntil, c.token = HalfOpen, now.Add(p.ProbeLease), token
	}
	allowed := c.snap.State == Closed || probe
	c.budget(now, p, allowed, allowed && retry && !probe)
	s = c.snap
	s.Probe = probe
	c.snap.Denied = false
	return s, nil
}

// Record implements Store.
func (m *MemoryStore) Record(_ context.Context, key string, failed, count bool, now time.Time, p Params) (Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.get(key)
	c.budget(now, p, count, false)
	opened := false
	if c.snap.State == Closed {
		switch {
		case !failed:
			c.snap.Failures = 0
		default:
			c.snap.Failures++
			if c.snap.Failures >= p.Threshold {
				c.snap.State, c.snap.OpenUntil = Open, now.Add(p.OpenPeriod)
				c.snap.Generation++
				opened = true
			}
		}
	}
	s := c.snap
	s.Opened = opened
	return s, nil
}

// Settle implements Store.
func (m *MemoryStore) Settle(_ context.Context, key, token string, o Outcome, now time.Time, p Params) (Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.get(key)
	c.budget(now, p, false, false)
	if c.snap.State != HalfOpen || c.token != token {
		return c.snap, nil
	}
	var opened, closed bool
	switch o {
	case Success:
		c.snap = Snapshot{Generation: c.snap.Generation, OpenUntil: c.snap.OpenUntil, Calls: c.snap.Calls, Retries: c.snap.Retries}
		closed = true
	case Failure:
		c.snap.State, c.snap.OpenUntil, c.snap.ProbeUntil = Open, now.Add(p.OpenPeriod), time.Time{}
		c.snap.Generation++
		opened = true
	default:
		c.snap.ProbeUntil = now
	}
	c.token = ""
	s := c.snap
	s.Opened, s.Closed = opened, closed
	return s, nil
}
