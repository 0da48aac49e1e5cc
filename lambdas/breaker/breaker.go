// Package breaker is a circuit breaker whose state is shared by every Lambda
// instance through Valkey/Redis (ElastiCache mercadofresco-catalogo), so that
// FailureThreshold (20) consecutive failures seen by any instances open it
// for all of them for OpenPeriod (30 s), with the CircuitoAbierto metric
// emitted once; calls then fail fast with an *OpenError (ErrOpen). After the
// open period exactly one caller across all instances gets the probe; its
// outcome closes or reopens the circuit. No lock is held during the call, and
// a call costs one round trip under steady traffic, which also counts it in
// the dependency's fleet-wide retry budget (AllowRetry: retries within 10 %
// of the calls over a sliding 10 s, or below 3). If the store cannot be
// reached the breaker fails open (the call runs, CircuitoErroresAlmacen).
//
// Not sony/gobreaker/v2: a lock held across the call, ~4 round trips, no
// context, fails closed (docs/breaker-benchmark.md, docs/design.md#breaker-shared).
package breaker

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/metrics"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// Defaults applied by New.
const (
	DefaultFailureThreshold   = 20
	DefaultOpenPeriod         = 30 * time.Second
	DefaultProbeLease         = 45 * time.Second
	DefaultMaxStaleness       = time.Second
	DefaultStoreTimeout       = 250 * time.Millisecond
	DefaultStoreRetryInterval = time.Second
	DefaultKeyPrefix          = lambdaapi.BreakerKeyPrefix
	// The retry budget (Params): retries at most RetryRatio of the calls
	// over RetryWindow, across every instance, or fewer than RetryFloor.
	RetryRatio  = 0.10
	RetryWindow = 10 * time.Second
	RetryFloor  = 3
)

// ErrOpen matches (errors.Is) the error of a call refused because the
// circuit is open or another caller holds the probe.
var ErrOpen = errors.New("breaker: circuit open")

// OpenError is returned by Allow and Do when the call was refused.
type OpenError struct {
	Dependency string
	State      State
	// RetryAfter is when a probe may next be tried, from the caller's clock
	// (0 when unknown, e.g. a probe is in flight).
	RetryAfter time.Duration
}

func (e *OpenError) Error() string {
	msg := fmt.Sprintf("breaker: circuit for %s is %s", e.Dependency, e.State)
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(", next probe in %s", e.RetryAfter.Round(time.Millisecond))
	}
	return msg
}

// Is makes errors.Is(err, ErrOpen) true.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// Config configures a Breaker. Name is required; every other zero value is
// the default.
type Config struct {
	// Name identifies the dependency ("pasarela"); it is part of the key and
	// the Dependencia metric dimension.
	Name string
	// KeyPrefix namespaces the keys (default "mf:breaker:"; tests use a
	// unique one). The key is lambdaapi.BreakerKey(KeyPrefix, Name):
	// KeyPrefix + "{" + Name + "}".
	KeyPrefix string
	// FailureThreshold consecutive failures open the circuit (default 20).
	FailureThreshold int
	// OpenPeriod is how long it stays open before a probe (default 30 s).
	// Must exceed MaxStaleness.
	OpenPeriod time.Duration
	// ProbeLease is how long a probe may run before another caller may
	// replace it (default 45 s): longer than the protected call's timeout.
	ProbeLease time.Duration
	// MaxStaleness bounds how old a cached state may be and still decide a
	// call without a round trip (default 1 s).
	MaxStaleness time.Duration
	// StoreTimeout bounds each store operation (default 250 ms).
	StoreTimeout time.Duration
	// StoreRetryInterval is how long the store is left alone after it
	// failed (default 1 s); the breaker behaves as closed meanwhile.
	StoreRetryInterval time.Duration
	// IsFailure says which outcomes of the protected call count as the
	// dependency failing. Default: every non-nil error except
	// context.Canceled. Callers pass one that ignores business answers (a
	// declined card is the gateway working).
	IsFailure func(error) bool
	// Now is the time source (default time.Now).
	Now func() time.Time
	// Metrics receives CircuitoAbierto, CircuitoCerrado and
	// CircuitoErroresAlmacen (default: discarded). Build it with
	// MetricsWriter so it carries the Dependencia dimension.
	Metrics metrics.Emitter
	// Logger defaults to JSON on stdout.
	Logger *slog.Logger
}

// Stats are an instance's counters since New.
type Stats struct {
	Allowed, Rejected, Probes int64
	// FailOpen counts calls allowed because the store was unreachable.
	FailOpen int64
	// StoreErrors counts failed store operations.
	StoreErrors int64
	// Opened counts transitions to open caused by this instance.
	Opened int64
}

// Breaker is one instance's handle on a shared circuit. Safe for concurrent
// use; create one per dependency per process.
type Breaker struct {
	cfg    Config
	store  Store
	key    string
	params Params
	log    *slog.Logger
	idBase string
	seq    atomic.Int64

	mu             sync.Mutex
	cache          Snapshot
	cachedAt       time.Time
	haveCache      bool
	storeDownUntil time.Time

	allowed, rejected, probes, failOpen, storeErrors, opened atomic.Int64
}

// New validates cfg and returns a breaker over store.
func New(store Store, cfg Config) (*Breaker, error) {
	if store == nil {
		return nil, errors.New("breaker: nil Store")
	}
	if cfg.Name == "" {
		return nil, errors.New("breaker: Config.Name is required")
	}
	cfg.KeyPrefix = cmp.Or(cfg.KeyPrefix, DefaultKeyPrefix)
	cfg.FailureThreshold = cmp.Or(cfg.FailureThreshold, DefaultFailureThreshold)
	cfg.OpenPeriod = cmp.Or(cfg.OpenPeriod, DefaultOpenPeriod)
	cfg.ProbeLease = cmp.Or(cfg.ProbeLease, DefaultProbeLease)
	cfg.MaxStaleness = cmp.Or(cfg.MaxStaleness, DefaultMaxStaleness)
	cfg.StoreTimeout = cmp.Or(cfg.StoreTimeout, DefaultStoreTimeout)
	cfg.StoreRetryInterval = cmp.Or(cfg.StoreRetryInterval, DefaultStoreRetryInterval)
	var problems []error
	if cfg.FailureThreshold < 1 {
		problems = append(problems, fmt.Errorf("FailureThreshold %d < 1", cfg.FailureThreshold))
	}
	for name, d := range map[string]time.Duration{"OpenPeriod": cfg.OpenPeriod, "ProbeLease": cfg.ProbeLease, "MaxStaleness": cfg.MaxStaleness, "StoreTimeout": cfg.StoreTimeout, "StoreRetryInterval": cfg.StoreRetryInterval} {
		if d < 0 {
			problems = append(problems, fmt.Errorf("%s %s is negative", name, d))
		}
	}
	if cfg.OpenPeriod <= cfg.MaxStaleness {
		problems = append(problems, fmt.Errorf("OpenPeriod %s must exceed MaxStaleness %s", cfg.OpenPeriod, cfg.MaxStaleness))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("breaker: invalid Config: %w", errors.Join(problems...))
	}
	if cfg.IsFailure == nil {
		cfg.IsFailure = func(err error) bool { return err != nil && !errors.Is(err, context.Canceled) }
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Metrics = cmp.Or(cfg.Metrics, metrics.Discard)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	var id [6]byte
	_, _ = rand.Read(id[:])
	return &Breaker{
		cfg: cfg, store: store,
		key: lambdaapi.BreakerKey(cfg.KeyPrefix, cfg.Name),
		params: Params{Threshold: cfg.FailureThreshold, OpenPeriod: cfg.OpenPeriod, ProbeLease: cfg.ProbeLease,
			RetryRatio: RetryRatio, RetryWindow: RetryWindow, RetryFloor: RetryFloor},
		log:    cfg.Logger.With(slog.String("breaker", cfg.Name)),
		idBase: hex.EncodeToString(id[:]),
	}, nil
}

// MetricsWriter returns the EMF writer for a breaker's metrics: namespace
// MercadoFresco/Tienda, dimensions Entorno=env and Dependencia=dependency.
func MetricsWriter(w io.Writer, env, dependency string) *metrics.Writer {
	return metrics.NewWriter(w, lambdaapi.Namespace, map[string]string{
		lambdaapi.DimensionEnvironment: env,
		lambdaapi.DimensionDependency:  dependency,
	})
}

// Stats returns the instance's counters.
func (b *Breaker) Stats() Stats {
	return Stats{
		Allowed: b.allowed.Load(), Rejected: b.rejected.Load(), Probes: b.probes.Load(),
		FailOpen: b.failOpen.Load(), StoreErrors: b.storeErrors.Load(), Opened: b.opened.Load(),
	}
}

type callMode int

const (
	modeNormal callMode = iota
	modeProbe
	modeFailOpen
)

// Call is a permission to call the dependency once; report its outcome with
// Done.
type Call struct {
	b     *Breaker
	mode  callMode
	token string
	// loaded: Allow read the state in this call, so a success that changes
	// nothing need not be recorded.
	loaded        bool
	failuresAtPre int
	done          atomic.Bool
}

// Probe reports whether this call is the half-open probe.
func (c *Call) Probe() bool { return c.mode == modeProbe }

// Allow decides whether a call may go to the dependency: a *Call, or an
// *OpenError when the circuit is open (or another caller holds the probe).
// When the store cannot be reached it allows the call (fail open).
func (b *Breaker) Allow(ctx context.Context) (*Call, error) { return b.allow(ctx, false) }

// AllowRetry is Allow for a retry of a failed call. It always asks the
// store, which admits and counts it atomically only within the retry
// budget; a retry that does not fit gets an error matching
// retry.ErrBudgetExhausted. The store unreachable, it allows (fail open).
func (b *Breaker) AllowRetry(ctx context.Context) (*Call, error) { return b.allow(ctx, true) }

// TryRetry reports whether the retry budget, as this instance last read
// it, has room for a retry (a retry.Budget: the Retrier asks before it
// waits; AllowRetry decides). Nothing read yet: true.
func (b *Breaker) TryRetry(context.Context) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.haveCache || b.params.retryFits(float64(b.cache.Calls), float64(b.cache.Retries))
}

func (b *Breaker) allow(ctx context.Context, retrying bool) (*Call, error) {
	now := b.cfg.Now()
	b.mu.Lock()
	snap, fresh := b.cache, b.haveCache && now.Sub(b.cachedAt) <= b.cfg.MaxStaleness
	storeDown := now.Before(b.storeDownUntil)
	b.mu.Unlock()

	if storeDown {
		return b.failOpenCall(), nil
	}
	if fresh {
		switch {
		case snap.State == Closed && !retrying:
			b.allowed.Add(1)
			return &Call{b: b, mode: modeNormal}, nil
		case snap.State == Open && now.Before(snap.OpenUntil),
			snap.State == HalfOpen && now.Before(snap.ProbeUntil):
			return nil, b.reject(snap, now)
		}
	}
	token := fmt.Sprintf("%s-%d", b.idBase, b.seq.Add(1))
	snap, err := b.withStore(ctx, func(ctx context.Context) (Snapshot, error) {
		return b.store.Acquire(ctx, b.key, token, retrying, now, b.params)
	})
	if err != nil {
		return b.failOpenCall(), nil
	}
	switch {
	case snap.Denied:
		b.rejected.Add(1)
		return nil, fmt.Errorf("breaker: %s: %w", b.cfg.Name, retry.ErrBudgetExhausted)
	case snap.Probe:
		b.probes.Add(1)
		b.allowed.Add(1)
		b.log.LogAttrs(ctx, slog.LevelInfo, "circuit half-open: this call is the probe")
		return &Call{b: b, mode: modeProbe, token: token}, nil
	case snap.State == Closed:
		b.allowed.Add(1)
		return &Call{b: b, mode: modeNormal, loaded: true, failuresAtPre: snap.Failures}, nil
	default:
		return nil, b.reject(snap, now)
	}
}

// failOpenCall allows a call the store cannot decide.
func (b *Breaker) failOpenCall() *Call {
	b.failOpen.Add(1)
	b.allowed.Add(1)
	return &Call{b: b, mode: modeFailOpen}
}

func (b *Breaker) reject(snap Snapshot, now time.Time) error {
	b.rejected.Add(1)
	e := &OpenError{Dependency: b.cfg.Name, State: snap.State}
	if snap.State == Open && snap.OpenUntil.After(now) {
		e.RetryAfter = snap.OpenUntil.Sub(now)
	}
	return e
}

// Done records the outcome of the call (err is what the dependency call
// returned). Calling it more than once does nothing.
func (c *Call) Done(ctx context.Context, err error) {
	if c == nil || !c.done.CompareAndSwap(false, true) {
		return
	}
	b := c.b
	now := b.cfg.Now()
	failed := b.cfg.IsFailure(err)
	switch c.mode {
	case modeFailOpen:
		return
	case modeProbe:
		o := Success
		switch {
		case failed:
			o = Failure
		case err != nil && !failed && ctx.Err() != nil:
			o = Abandoned
		}
		snap, serr := b.withStore(ctx, func(ctx context.Context) (Snapshot, error) {
			return b.store.Settle(ctx, b.key, c.token, o, now, b.params)
		})
		if serr == nil {
			b.transitions(ctx, snap, err)
		}
	default:
		if err != nil && !failed && errors.Is(err, context.Canceled) {
			return // the caller gave up: no verdict on the dependency
		}
		if c.loaded && !failed && c.failuresAtPre == 0 {
			return // nothing to reset, and the cache is fresh from Allow
		}
		snap, serr := b.withStore(ctx, func(ctx context.Context) (Snapshot, error) {
			return b.store.Record(ctx, b.key, failed, !c.loaded, now, b.params)
		})
		if serr == nil {
			b.transitions(ctx, snap, err)
		}
	}
}

// Do runs fn if the circuit allows it and records its outcome.
func (b *Breaker) Do(ctx context.Context, fn func(context.Context) error) error {
	c, err := b.Allow(ctx)
	if err != nil {
		return err
	}
	err = fn(ctx)
	c.Done(ctx, err)
	return err
}

// withStore runs one store operation with StoreTimeout, detached from ctx's
// cancellation (recording an outcome must not be lost because the caller's
// context ended), caches its answer, and turns a failure into fail-open.
func (b *Breaker) withStore(ctx context.Context, op func(context.Context) (Snapshot, error)) (Snapshot, error) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.StoreTimeout)
	defer cancel()
	snap, err := op(sctx)
	now := b.cfg.Now()
	if err != nil {
		b.storeErrors.Add(1)
		b.mu.Lock()
		b.storeDownUntil = now.Add(b.cfg.StoreRetryInterval)
		b.haveCache = false
		b.mu.Unlock()
		b.log.LogAttrs(ctx, slog.LevelWarn, "circuit store unreachable: failing open (calls go through) for a while",
			slog.Duration("retry_in", b.cfg.StoreRetryInterval), slog.String("error", err.Error()))
		b.emit(ctx, lambdaapi.MetricBreakerStoreErrors)
		return Snapshot{}, err
	}
	b.mu.Lock()
	b.cache, b.cachedAt, b.haveCache = snap, now, true
	b.cache.Probe, b.cache.Opened, b.cache.Closed, b.cache.Denied = false, false, false, false
	b.mu.Unlock()
	return snap, nil
}

func (b *Breaker) transitions(ctx context.Context, snap Snapshot, cause error) {
	if snap.Opened {
		b.opened.Add(1)
		attrs := []slog.Attr{
			slog.Int64("generation", snap.Generation),
			slog.Time("open_until", snap.OpenUntil),
			slog.Int("failures", snap.Failures),
		}
		if cause != nil {
			attrs = append(attrs, slog.String("last_error", cause.Error()))
		}
		b.log.LogAttrs(ctx, slog.LevelError, "circuit opened", attrs...)
		b.emit(ctx, lambdaapi.MetricBreakerOpened)
	}
	if snap.Closed {
		b.log.LogAttrs(ctx, slog.LevelInfo, "circuit closed: probe succeeded", slog.Int64("generation", snap.Generation))
		b.emit(ctx, lambdaapi.MetricBreakerClosed)
	}
}

func (b *Breaker) emit(ctx context.Context, name string) {
	if err := b.cfg.Metrics.Write(metrics.Metric{Name: name, Unit: metrics.UnitCount, Value: 1}); err != nil {
		b.log.LogAttrs(ctx, slog.LevelWarn, "cannot write metric", slog.String("metric", name), slog.String("error", err.Error()))
	}
}
