package breaker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/internal/testseed"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/metrics"
	"github.com/mercadofresco/integration/lambdas/retry"
	"github.com/redis/go-redis/v9"
)

var t0 = time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)

var errDown = errors.New("gateway: 503")

// recorder is a metrics.Emitter that keeps what was written.
type recorder struct {
	mu    sync.Mutex
	names []string
}

func (r *recorder) Write(ms ...metrics.Metric) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range ms {
		r.names = append(r.names, m.Name)
	}
	return nil
}

func (r *recorder) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, x := range r.names {
		if x == name {
			n++
		}
	}
	return n
}

// counter is a go-redis hook counting round trips (a command or a pipeline).
type counter struct{ n atomic.Int64 }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

type env struct {
	srv    *localaws.Redis
	rdb    *redis.Client
	rt     *counter
	prefix string
	clk    *retry.VirtualClock
	met    *recorder
	logs   *bytes.Buffer
	logMu  sync.Mutex
}

func (e *env) Write(p []byte) (int, error) {
	e.logMu.Lock()
	defer e.logMu.Unlock()
	return e.logs.Write(p)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := localaws.StartRedis(t)
	e := &env{srv: srv, rdb: srv.Client(t), rt: &counter{}, prefix: localaws.RedisKeyPrefix(t),
		clk: retry.NewVirtualClock(t0), met: &recorder{}, logs: &bytes.Buffer{}}
	e.rdb.AddHook(e.rt)
	return e
}

func (e *env) breaker(t *testing.T, mod func(*breaker.Config)) *breaker.Breaker {
	t.Helper()
	// A long store timeout: on a loaded machine a slow Redis answer must not
	// make the breaker fail open, which these tests would read as a second
	// probe or a circuit that never opens.
	cfg := breaker.Config{
		Name: "pasarela", KeyPrefix: e.prefix, Now: e.clk.Now, Metrics: e.met,
		Logger: slog.New(slog.NewJSONHandler(e, nil)), StoreTimeout: 10 * time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	b, err := breaker.New(breaker.NewRedisStore(e.rdb), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func fail(context.Context) error { return errDown }
func ok(context.Context) error   { return nil }

// TestOpensAfterFailuresCountedAcrossTwoInstances: two breakers (two Lambda
// instances) alternate failures; the 20th opens the circuit for both, the
// metric is emitted once, and neither calls the dependency while open.
func TestOpensAfterFailuresCountedAcrossTwoInstances(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a, b := e.breaker(t, nil), e.breaker(t, nil)
	calls := 0
	failing := func(context.Context) error { calls++; return errDown }
	for i := range breaker.DefaultFailureThreshold {
		inst := a
		if i%2 == 1 {
			inst = b
		}
		if err := inst.Do(ctx, failing); !errors.Is(err, errDown) {
			t.Fatalf("failure %d: err = %v, want the dependency's error (circuit still closed)", i+1, err)
		}
	}
	if got := e.met.count(lambdaapi.MetricBreakerOpened); got != 1 {
		t.Fatalf("%s emitted %d times, want 1", lambdaapi.MetricBreakerOpened, got)
	}
	if sa, sb := a.Stats().Opened, b.Stats().Opened; sa+sb != 1 || sb != 1 {
		t.Fatalf("opened by a=%d b=%d, want b (the 20th failure)", sa, sb)
	}
	// a's cached state (from its 19th failure) is still "closed" and
	// fresh: bounded staleness lets it make one call, whose record tells it
	// the circuit is open.
	calls = 0
	if err := a.Do(ctx, failing); !errors.Is(err, errDown) {
		t.Fatalf("a within staleness: %v", err)
	}
	for _, inst := range []*breaker.Breaker{a, b, a, b} {
		err := inst.Do(ctx, failing)
		var oe *breaker.OpenError
		if !errors.Is(err, breaker.ErrOpen) || !errors.As(err, &oe) || oe.RetryAfter <= 0 {
			t.Fatalf("while open: err = %v, want *OpenError with RetryAfter", err)
		}
	}
	e.clk.Advance(2 * breaker.DefaultMaxStaleness) // caches stale: one read each, still open
	for _, inst := range []*breaker.Breaker{a, b} {
		if err := inst.Do(ctx, failing); !errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("stale cache while open: %v", err)
		}
	}
	if calls != 1 {
		t.Fatalf("dependency called %d times after opening, want 1 (a's stale-closed call)", calls)
	}
	if got := e.met.count(lambdaapi.MetricBreakerOpened); got != 1 {
		t.Fatalf("the leaked call re-emitted the metric: %d", got)
	}
	// A successful call before the threshold resets the count.
	e2 := newEnv(t)
	c := e2.breaker(t, func(c *breaker.Config) { c.FailureThreshold = 3 })
	for _, fn := range []func(context.Context) error{fail, fail, ok, fail, fail} {
		_ = c.Do(ctx, fn)
	}
	if err := c.Do(ctx, ok); err != nil {
		t.Fatalf("2 failures, a success, 2 failures opened a threshold-3 circuit: %v", err)
	}
}

// TestHalfOpenAdmitsExactlyOneProbe: 32 concurrent callers, each its own
// instance (no shared local cache), reach the half-open circuit at once:
// exactly one is granted the probe, the others fail fast while the probe's
// call is still running (no lock held during the call).
func TestHalfOpenAdmitsExactlyOneProbe(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	opener := e.breaker(t, func(c *breaker.Config) { c.FailureThreshold = 1 })
	_ = opener.Do(ctx, fail)
	e.clk.Advance(breaker.DefaultOpenPeriod + time.Millisecond)

	const callers = 32
	insts := make([]*breaker.Breaker, callers)
	for i := range insts {
		insts[i] = e.breaker(t, func(c *breaker.Config) { c.FailureThreshold = 1 })
	}
	release := make(chan struct{})
	probeRunning := make(chan struct{})
	var probes, rejected atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, inst := range insts {
		wg.Go(func() {
			<-start
			err := inst.Do(ctx, func(ctx context.Context) error {
				probes.Add(1)
				close(probeRunning)
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			if errors.Is(err, breaker.ErrOpen) {
				rejected.Add(1)
			}
		})
	}
	close(start)
	select {
	case <-probeRunning:
	case <-ctx.Done():
		t.Fatal("no probe started")
	}
	// The 31 others must finish while the probe is still in flight.
	deadline := time.After(10 * time.Second)
	for rejected.Load() < callers-1 {
		select {
		case <-deadline:
			t.Fatalf("only %d of %d callers failed fast while the probe ran: something waits on the probe", rejected.Load(), callers-1)
		case <-time.After(time.Millisecond):
		}
	}
	close(release)
	wg.Wait()
	if probes.Load() != 1 || rejected.Load() != callers-1 {
		t.Fatalf("probes %d rejected %d, want 1 and %d", probes.Load(), rejected.Load(), callers-1)
	}
	if got := e.met.count(lambdaapi.MetricBreakerClosed); got != 1 {
		t.Errorf("%s emitted %d times", lambdaapi.MetricBreakerClosed, got)
	}
	// Closed again: a stale instance reads closed and calls.
	e.clk.Advance(2 * breaker.DefaultMaxStaleness)
	if err := insts[5].Do(ctx, ok); err != nil {
		t.Fatalf("after a successful probe: %v", err)
	}
}

// TestSharedInstanceUnderConcurrency: one instance shared by 32 goroutines
// also admits one probe.
func TestSharedInstanceUnderConcurrency(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	b := e.breaker(t, func(c *breaker.Config) { c.FailureThreshold = 5 })
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() { _ = b.Do(ctx, fail) })
	}
	wg.Wait()
	if e.met.count(lambdaapi.MetricBreakerOpened) != 1 {
		t.Fatalf("opened %d times", e.met.count(lambdaapi.MetricBreakerOpened))
	}
	e.clk.Advance(breaker.DefaultOpenPeriod)
	var probes atomic.Int64
	for range 32 {
		wg.Go(func() {
			_ = b.Do(ctx, func(context.Context) error { probes.Add(1); return errDown })
		})
	}
	wg.Wait()
	if probes.Load() != 1 {
		t.Fatalf("%d probes", probes.Load())
	}
	// The failed probe reopened the circuit: a second transition to open.
	if got := e.met.count(lambdaapi.MetricBreakerOpened); got != 2 {
		t.Fatalf("%s = %d after a failed probe, want 2", lambdaapi.MetricBreakerOpened, got)
	}
	if err := b.Do(ctx, ok); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("after the failed probe: %v", err)
	}
}

// TestDeadProbeIsReplacedAfterItsLease: a prober that never reports (its
// Lambda timed out) holds the probe only for ProbeLease.
func TestDeadProbeIsReplacedAfterItsLease(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	b := e.breaker(t, func(c *breaker.Config) { c.FailureThreshold = 1 })
	_ = b.Do(ctx, fail)
	e.clk.Advance(breaker.DefaultOpenPeriod)
	dead := e.breaker(t, nil)
	call, err := dead.Allow(ctx)
	if err != nil || !call.Probe() {
		t.Fatalf("first caller after the open period: %v, probe=%v", err, call != nil && call.Probe())
	}
	other := e.breaker(t, nil)
	if _, err := other.Allow(ctx); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("second caller during the probe: %v", err)
	}
	e.clk.Advance(breaker.DefaultProbeLease)
	c2, err := other.Allow(ctx)
	if err != nil || !c2.Probe() {
		t.Fatalf("after the lease: %v", err)
	}
	// The late report of the dead prober changes nothing.
	call.Done(ctx, errDown)
	if got := e.met.count(lambdaapi.MetricBreakerOpened); got != 1 {
		t.Fatalf("a superseded probe's failure reopened the circuit")
	}
	c2.Done(ctx, nil)
	e.clk.Advance(2 * breaker.DefaultMaxStaleness)
	if err := dead.Do(ctx, ok); err != nil {
		t.Fatalf("closed by the second probe: %v", err)
	}
}

// TestRoundTripsPerCall counts Redis round trips with a go-redis hook.
func TestRoundTripsPerCall(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	b := e.breaker(t, nil)
	// Load the scripts (EVALSHA falls back to EVAL once per server).
	warm := e.breaker(t, func(c *breaker.Config) { c.Name = "warm-up"; c.FailureThreshold = 1 })
	_ = warm.Do(ctx, fail)
	e.clk.Advance(breaker.DefaultOpenPeriod)
	_ = warm.Do(ctx, ok)

	measure := func(name string, n int, fn func(i int) error) float64 {
		e.rt.n.Store(0)
		for i := range n {
			_ = b.Do(ctx, func(context.Context) error { return fn(i) })
			e.clk.Advance(10 * time.Millisecond) // steady traffic: 100 calls/s
		}
		per := float64(e.rt.n.Load()) / float64(n)
		t.Logf("%-40s %d calls, %.2f round trips per call", name, n, per)
		return per
	}
	if per := measure("closed, all succeed", 200, func(int) error { return nil }); per > 1 {
		t.Errorf("%.2f round trips per successful call", per)
	}
	if per := measure("closed, 1 in 10 fails", 200, func(i int) error {
		if i%10 == 0 {
			return errDown
		}
		return nil
	}); per > 1 {
		t.Errorf("%.2f round trips per call with failures", per)
	}
	// Idle sandbox: a success after more than MaxStaleness reads the state
	// (one round trip) and needs no record.
	e.clk.Advance(5 * time.Second)
	e.rt.n.Store(0)
	_ = b.Do(ctx, ok)
	if n := e.rt.n.Load(); n != 1 {
		t.Errorf("successful call after an idle period: %d round trips, want 1", n)
	}
	// While open: no round trip until the cache is stale.
	for range 20 {
		_ = b.Do(ctx, fail)
	}
	e.rt.n.Store(0)
	for range 100 {
		if err := b.Do(ctx, ok); !errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("open circuit allowed a call: %v", err)
		}
	}
	if n := e.rt.n.Load(); n != 0 {
		t.Errorf("%d round trips for 100 rejected calls with a fresh cache", n)
	}
}

// TestFailsOpenWhenRedisStops: Redis dies mid-test; calls keep reaching the
// dependency, the failure is logged and counted; after a restart the
// breaker uses the store again.
func TestFailsOpenWhenRedisStops(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	b := e.breaker(t, func(c *breaker.Config) { c.FailureThreshold = 3 })
	for range 2 {
		_ = b.Do(ctx, fail)
	}
	e.srv.Stop()
	calls := 0
	start := time.Now()
	for i := range 50 {
		err := b.Do(ctx, func(context.Context) error { calls++; return errDown })
		if !errors.Is(err, errDown) {
			t.Fatalf("call %d with Redis down: %v, want the dependency's answer (fail open)", i, err)
		}
		e.clk.Advance(100 * time.Millisecond)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("50 calls with Redis down took %s", el)
	}
	st := b.Stats()
	if calls != 50 || st.FailOpen == 0 || st.StoreErrors == 0 {
		t.Fatalf("calls %d stats %+v", calls, st)
	}
	// One store attempt per StoreRetryInterval, not one per call.
	if st.StoreErrors > 6 {
		t.Errorf("%d store errors in 5 s of virtual time: the dead store is retried on every call", st.StoreErrors)
	}
	if e.met.count(lambdaapi.MetricBreakerStoreErrors) == 0 || !strings.Contains(e.logs.String(), "failing open") {
		t.Errorf("store errors not reported: metrics %v logs %q", e.met.names, e.logs.String())
	}
	e.srv.Start()
	e.clk.Advance(breaker.DefaultStoreRetryInterval)
	for range 3 {
		_ = b.Do(ctx, fail)
	}
	if err := b.Do(ctx, ok); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("after Redis came back, 3 failures did not open a threshold-3 circuit: %v", err)
	}
}

// TestStoresAgree runs one scenario through MemoryStore and RedisStore.
func TestStoresAgree(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	p := breaker.Params{Threshold: 2, OpenPeriod: 30 * time.Second, ProbeLease: 45 * time.Second,
		RetryRatio: 0.25, RetryWindow: 10 * time.Second, RetryFloor: 1}
	type step struct {
		op      string // acquire, retry, fail, succeed, call (a success not yet counted), settle-s, settle-f, settle-a
		token   string
		advance time.Duration
	}
	steps := []step{
		// The retry budget: a floor of 1, then a quarter of the calls,
		// the previous window weighted by its overlap.
		{op: "call"}, {op: "call"}, {op: "retry"}, {op: "retry"}, {op: "call"}, {op: "call"}, {op: "call"}, {op: "retry"},
		{op: "retry", advance: 2500 * time.Millisecond}, {op: "call", advance: 5 * time.Second}, {op: "retry", advance: 5 * time.Second},
		{op: "retry"}, {op: "succeed", advance: 25 * time.Second},
		{op: "acquire", token: "x"}, {op: "fail"}, {op: "succeed"}, {op: "fail"}, {op: "fail"},
		{op: "acquire", token: "early"}, {op: "fail"},
		{op: "acquire", token: "p1", advance: 30 * time.Second}, {op: "acquire", token: "p2"},
		{op: "settle-f", token: "p2"}, {op: "settle-f", token: "p1"},
		{op: "acquire", token: "p3", advance: 30 * time.Second}, {op: "settle-a", token: "p3"},
		{op: "acquire", token: "p4"}, {op: "acquire", token: "p5", advance: 45 * time.Second},
		{op: "settle-s", token: "p4"}, {op: "settle-s", token: "p5"}, {op: "fail"}, {op: "acquire", token: "y"},
	}
	stores := map[string]breaker.Store{"memory": breaker.NewMemoryStore(), "redis": breaker.NewRedisStore(e.rdb)}
	got := map[string][]string{}
	for name, s := range stores {
		now := t0
		for _, st := range steps {
			now = now.Add(st.advance)
			var snap breaker.Snapshot
			var err error
			switch st.op {
			case "acquire", "retry":
				snap, err = s.Acquire(ctx, e.prefix+"agree", st.token, st.op == "retry", now, p)
			case "fail", "succeed", "call":
				snap, err = s.Record(ctx, e.prefix+"agree", st.op == "fail", st.op == "call", now, p)
			default:
				o := map[string]breaker.Outcome{"settle-s": breaker.Success, "settle-f": breaker.Failure, "settle-a": breaker.Abandoned}[st.op]
				snap, err = s.Settle(ctx, e.prefix+"agree", st.token, o, now, p)
			}
			if err != nil {
				t.Fatalf("%s %s: %v", name, st.op, err)
			}
			line, _ := json.Marshal(snap)
			got[name] = append(got[name], st.op+" "+string(line))
		}
	}
	for i := range steps {
		if got["memory"][i] != got["redis"][i] {
			t.Errorf("step %d:\n memory %s\n redis  %s", i, got["memory"][i], got["redis"][i])
		}
	}
	// The scenario exercised every transition.
	all := strings.Join(got["redis"], "\n")
	for _, want := range []string{`"Probe":true`, `"Opened":true`, `"Closed":true`, `"Denied":true`,
		`"Calls":6,"Retries":1,"Denied":false`} { // 12.5 s: 1 + 7 × 0.75 calls, a retry within the floor
		if !strings.Contains(all, want) {
			t.Errorf("scenario never produced %s", want)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	s := breaker.NewMemoryStore()
	for _, c := range []breaker.Config{
		{},
		{Name: "x", FailureThreshold: -1},
		{Name: "x", OpenPeriod: time.Second, MaxStaleness: 2 * time.Second},
		{Name: "x", StoreTimeout: -time.Second},
	} {
		if _, err := breaker.New(s, c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
	if _, err := breaker.New(nil, breaker.Config{Name: "x"}); err == nil {
		t.Error("nil store accepted")
	}
}

func TestMetricsWriterCarriesTheDependency(t *testing.T) {
	var buf bytes.Buffer
	w := breaker.MetricsWriter(&buf, "prod", "pasarela")
	b, _ := breaker.New(breaker.NewMemoryStore(), breaker.Config{Name: "pasarela", FailureThreshold: 1, Metrics: w})
	_ = b.Do(context.Background(), fail)
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("EMF line %q: %v", buf.String(), err)
	}
	if doc[lambdaapi.MetricBreakerOpened] != 1.0 || doc[lambdaapi.DimensionDependency] != "pasarela" || doc[lambdaapi.DimensionEnvironment] != "prod" {
		t.Errorf("EMF record %s", buf.String())
	}
	if !strings.Contains(buf.String(), lambdaapi.Namespace) {
		t.Errorf("namespace missing: %s", buf.String())
	}
}

// TestRetryBudgetIsSharedByTheFleet: 50 instances (each its own breaker and
// Retrier, one operation every 2 s each) call a dependency that fails half
// of the time, never enough in a row to open the circuit. Every failure
// wants a retry (3 attempts); the fleet-wide budget keeps the retries
// within 10 % of the fleet's calls plus RetryFloor per window. A budget
// per instance would let each instance retry its floor: ~60 %.
func TestRetryBudgetIsSharedByTheFleet(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	rnd := testseed.New(t)
	const instances, run, every = 50, 60 * time.Second, 2 * time.Second
	type inst struct {
		b *breaker.Breaker
		r *retry.Retrier
	}
	fleet := make([]inst, instances)
	for i := range fleet {
		b := e.breaker(t, func(c *breaker.Config) { c.FailureThreshold = 1000 })
		r, err := retry.New(retry.Policy{MaxAttempts: 3}, retry.WithClock(e.clk), retry.WithBudget(b))
		if err != nil {
			t.Fatal(err)
		}
		fleet[i] = inst{b, r}
	}
	var calls, retries, denied int
	for at := time.Duration(0); at < run; at += every / instances {
		e.clk.Set(t0.Add(at))
		in := fleet[int(at/(every/instances))%instances]
		for attempt := 1; ; attempt++ {
			allow := in.b.Allow
			if attempt > 1 {
				allow = in.b.AllowRetry
			}
			c, err := allow(ctx)
			if errors.Is(err, retry.ErrBudgetExhausted) {
				denied++
				break
			} else if err != nil {
				t.Fatal(err)
			}
			calls++
			if attempt > 1 {
				retries++
			}
			err = nil
			if rnd.IntN(2) == 0 {
				err = errDown
			}
			c.Done(ctx, err)
			if err == nil || !in.r.Next(ctx, attempt, err, retry.Idempotent).Retry {
				break
			}
		}
	}
	limit := breaker.RetryRatio*float64(calls) + float64(breaker.RetryFloor*int(run/breaker.RetryWindow+1))
	t.Logf("%d calls, %d retries (%.1f %%), %d refused at the store; limit %.0f", calls, retries, 100*float64(retries)/float64(calls), denied, limit)
	if float64(retries) > limit {
		t.Errorf("%d retries for %d calls: more than 10 %% plus the floor (%.0f)", retries, calls, limit)
	}
	if retries < calls/20 {
		t.Errorf("%d retries for %d calls: the budget let almost none through", retries, calls)
	}
}
