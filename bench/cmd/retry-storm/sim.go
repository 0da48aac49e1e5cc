package main

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// Scenario is a retry storm against the payment gateway, on a virtual clock.
type Scenario struct {
	Orders        int           // executions in flight (450)
	ArrivalStart  time.Duration // orders arrive uniformly in [ArrivalStart, ArrivalEnd)
	ArrivalEnd    time.Duration
	DegradeAt     time.Duration // latency goes from Healthy to Degraded
	OutageAt      time.Duration // every call fails
	RecoverAt     time.Duration // the gateway answers again, its capacity ramping up
	RampFor       time.Duration // how long the capacity takes to come back
	Healthy       time.Duration // 240 ms
	Degraded      time.Duration // 4 s
	Capacity      int           // calls in flight the gateway serves; beyond it, 503 at once
	RecoveryFloor int           // capacity right after the outage
	RejectAfter   time.Duration // how fast an overloaded or down gateway answers 503
	Horizon       time.Duration // stop the run here
	// CustomerWait: an order whose workflow failed is paid again by its
	// customer ("retry in minutes", the shop's payment retry) after half to
	// all of it, while the order's calls stay below the strategy's CallBudget.
	CustomerWait time.Duration
}

// Storm is the storm of docs/retry-storm.md: 450 orders, the gateway slow,
// then down for 30 s, then back with its capacity ramping up.
var Storm = Scenario{
	Orders: 450, ArrivalStart: 0, ArrivalEnd: 10 * time.Second,
	DegradeAt: 0, OutageAt: 45 * time.Second, RecoverAt: 75 * time.Second, RampFor: 60 * time.Second,
	Healthy: 240 * time.Millisecond, Degraded: 4 * time.Second,
	Capacity: 20, RecoveryFloor: 2, RejectAfter: 10 * time.Millisecond,
	Horizon: 30 * time.Minute, CustomerWait: 10 * time.Minute,
}

// Strategy is one way of retrying.
type Strategy struct {
	Name string
	// Layers: attempts per invocation (SDK or retry library), receives per
	// message (maxReceiveCount; 1 means a failed invocation goes straight
	// back to the workflow), workflow attempts (Step Functions Retry).
	Attempts, Receives, WorkflowAttempts int
	// AttemptBase and AttemptCap shape the waits between attempts.
	AttemptBase, AttemptCap time.Duration
	// Visibility is the queue's visibility timeout (a failed receive comes
	// back after it).
	Visibility time.Duration
	// WorkflowInterval, WorkflowMaxDelay: Step Functions IntervalSeconds
	// (BackoffRate 2) and MaxDelaySeconds.
	WorkflowInterval, WorkflowMaxDelay time.Duration
	// Jitter: full jitter on every wait (retry.FullJitter, JitterStrategy FULL).
	// QueueJitter: a failed message returns after retry.HalfJitter of the
	// visibility timeout (lambdas/sqsbatch) instead of exactly it.
	Jitter, QueueJitter bool
	// Pollers: starting concurrency and its ceiling (MaximumConcurrency);
	// without a ceiling Lambda scales by ScaleStep every ScaleEvery while
	// messages wait.
	Pollers, MaxPollers, ScaleStep int
	ScaleEvery                     time.Duration
	// Budget and Breaker turn on the project's retry budget and circuit
	// breaker, both shared by the instances through one store
	// (lambdas/breaker; the budget needs the breaker).
	Budget, Breaker bool
	// Threshold and OpenPeriod of the breaker.
	Threshold  int
	OpenPeriod time.Duration
	// CallBudget caps an order's gateway calls over all its executions
	// (payment.CallBudget; 0: none, and no customer retries).
	CallBudget int
}

// Strategies compared by the command.
var (
	Naive = Strategy{
		Name: "naive (SDK 5 x receives 4 x workflow 4)", Attempts: 5, Receives: 4, WorkflowAttempts: 4,
		AttemptBase: 25 * time.Millisecond, AttemptCap: 2 * time.Second, Visibility: 30 * time.Second,
		WorkflowInterval: time.Second, WorkflowMaxDelay: 60 * time.Second,
		Pollers: 20, MaxPollers: 60, ScaleStep: 10, ScaleEvery: 10 * time.Second,
	}
	JitterOnly = func() Strategy {
		s := Naive
		s.Name, s.Jitter = "jitter only", true
		return s
	}()
	AllFour = Strategy{
		Name: "all four defences", Attempts: 3, Receives: 1, WorkflowAttempts: 5,
		AttemptBase: lambdaapi.DefaultBackoffBase, AttemptCap: lambdaapi.DefaultBackoffCap, Visibility: 400 * time.Second,
		WorkflowInterval: 10 * time.Second, WorkflowMaxDelay: 120 * time.Second, Jitter: true,
		Pollers: 20, MaxPollers: 20, Budget: true, Breaker: true,
		Threshold: breaker.DefaultFailureThreshold, OpenPeriod: breaker.DefaultOpenPeriod,
		CallBudget: lambdaapi.MaxGatewayCallsPerOperation,
	}
)

// Result is what one run measured.
type Result struct {
	Strategy          Strategy
	CallsPerSecond    []int // gateway calls in each second of the run
	PeakRecovery      int   // max calls in one second while the gateway's capacity ramps back
	Peak              int
	Calls             int
	WorstPerOrder     int
	MeanPerOrder      float64
	Charged           int
	DeadLettered      int // orders never charged (every workflow attempt and customer retry failed)
	CustomerRetries   int // payments the customers tried again after a failed workflow
	MessagesDLQ       int // messages moved to the DLQ by maxReceiveCount
	Drain             time.Duration
	BreakerOpenings   int
	BudgetDenials     int64
	StructuralAttempt int // Attempts x Receives x WorkflowAttempts
}

type order struct {
	id         int
	calls      int
	wfAttempt  int
	done       bool
	finishedAt time.Duration
}

type message struct {
	o         *order
	receives  int
	visibleAt time.Duration
}

type event struct {
	at  time.Duration
	seq int
	fn  func()
}

// instance is one Lambda sandbox: its own breaker handle (the breaker's
// state and retry budget are shared through one store, as Valkey shares
// them).
type instance struct {
	retrier *retry.Retrier
	breaker *breaker.Breaker
	busy    bool
}

type sim struct {
	sc    Scenario
	st    Strategy
	rnd   *rand.Rand
	t0    time.Time
	clk   *retry.VirtualClock
	now   time.Duration
	seq   int
	ev    []*event // by time, then by scheduling order
	store *breaker.MemoryStore

	queue    []*message // waiting messages (visible or not)
	pool     []*instance
	inFlight int
	calls    []int
	res      Result
	orders   []*order
}

func (s *sim) at(d time.Duration, fn func()) {
	s.seq++
	e := &event{at: d, seq: s.seq, fn: fn}
	i, _ := slices.BinarySearchFunc(s.ev, e, func(a, b *event) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.seq, b.seq)) })
	s.ev = slices.Insert(s.ev, i, e)
}

// Run plays the scenario with one strategy.
func Run(sc Scenario, st Strategy, seed uint64) Result {
	s := &sim{sc: sc, st: st, rnd: rand.New(rand.NewPCG(seed, seed^0x5bd1e995)),
		t0: time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC), store: breaker.NewMemoryStore()}
	s.clk = retry.NewVirtualClock(s.t0)
	s.res.Strategy = st
	s.res.StructuralAttempt = st.Attempts * st.Receives * st.WorkflowAttempts
	s.calls = make([]int, int(sc.Horizon/time.Second)+1)
	for range st.Pollers {
		s.addInstance()
	}
	for i := range sc.Orders {
		o := &order{id: i}
		s.orders = append(s.orders, o)
		arrive := sc.ArrivalStart + time.Duration(float64(sc.ArrivalEnd-sc.ArrivalStart)*float64(i)/float64(sc.Orders))
		s.at(arrive, func() { s.startWorkflowAttempt(o) })
	}
	if st.MaxPollers > st.Pollers {
		s.at(st.ScaleEvery, s.scale)
	}
	for len(s.ev) > 0 {
		e := s.ev[0]
		s.ev = s.ev[1:]
		if e.at > sc.Horizon {
			break
		}
		s.now = e.at
		s.clk.Set(s.t0.Add(e.at))
		e.fn()
	}
	s.finish()
	return s.res
}

func (s *sim) addInstance() {
	in := &instance{}
	if s.st.Breaker {
		in.breaker, _ = breaker.New(s.store, breaker.Config{Name: "pasarela", Now: s.clk.Now,
			FailureThreshold: s.st.Threshold, OpenPeriod: s.st.OpenPeriod})
	}
	if s.st.Budget && in.breaker != nil {
		in.retrier, _ = retry.New(retry.Policy{MaxAttempts: s.st.Attempts, Base: s.st.AttemptBase, Cap: s.st.AttemptCap},
			retry.WithClock(s.clk), retry.WithRand(retry.NewSeeded(s.rnd.Uint64())), retry.WithBudget(in.breaker))
	}
	s.pool = append(s.pool, in)
	s.at(s.now, func() { s.dispatch(in) })
}

// scale adds pollers while messages wait (no concurrency ceiling).
func (s *sim) scale() {
	if len(s.pool) < s.st.MaxPollers && s.visible() > 0 {
		for range min(s.st.ScaleStep, s.st.MaxPollers-len(s.pool)) {
			s.addInstance()
		}
	}
	if len(s.pool) < s.st.MaxPollers {
		s.at(s.now+s.st.ScaleEvery, s.scale)
	}
}

func (s *sim) visible() int {
	n := 0
	for _, m := range s.queue {
		if m.visibleAt <= s.now {
			n++
		}
	}
	return n
}

func (s *sim) wait(base, cap time.Duration, n int) time.Duration {
	if s.st.Jitter {
		return retry.FullJitter(base, cap, n, s.rnd)
	}
	d := base << min(n, 30)
	if d <= 0 || d > cap {
		d = cap
	}
	return d
}

func (s *sim) startWorkflowAttempt(o *order) {
	o.wfAttempt++
	s.enqueue(&message{o: o, visibleAt: s.now})
}

func (s *sim) enqueue(m *message) {
	s.queue = append(s.queue, m)
	s.at(m.visibleAt, s.wakeIdle)
}

func (s *sim) wakeIdle() {
	for _, in := range s.pool {
		if !in.busy {
			s.dispatch(in)
		}
	}
}

// dispatch gives an idle instance the oldest visible message.
func (s *sim) dispatch(in *instance) {
	if in.busy {
		return
	}
	best := -1
	for i, m := range s.queue {
		if m.visibleAt <= s.now && (best < 0 || m.visibleAt < s.queue[best].visibleAt) {
			best = i
		}
	}
	if best < 0 {
		return
	}
	m := s.queue[best]
	s.queue = append(s.queue[:best], s.queue[best+1:]...)
	m.receives++
	in.busy = true
	s.attempt(in, m, 1)
}

// attempt makes attempt n of an invocation.
func (s *sim) attempt(in *instance, m *message, n int) {
	if s.st.CallBudget > 0 && m.o.calls >= s.st.CallBudget {
		s.invocationDone(in, m, false) // IntentosAgotados: no call
		return
	}
	var call *breaker.Call
	if in.breaker != nil {
		allow := in.breaker.Allow
		if n > 1 && in.retrier != nil {
			allow = in.breaker.AllowRetry
		}
		c, err := allow(context.Background())
		if errors.Is(err, retry.ErrBudgetExhausted) {
			s.res.BudgetDenials++
		}
		if err != nil {
			s.invocationDone(in, m, false) // CircuitoAbierto: fail fast, nothing sent
			return
		}
		call = c
	}
	s.callGateway(m.o, func(ok bool) {
		if call != nil {
			var err error
			if !ok {
				err = errUnavailable
			}
			call.Done(context.Background(), err)
		}
		if ok {
			s.invocationDone(in, m, true)
			return
		}
		if n >= s.st.Attempts {
			s.invocationDone(in, m, false)
			return
		}
		var wait time.Duration
		if in.retrier != nil {
			d := in.retrier.Next(context.Background(), n, errUnavailable, retry.Idempotent)
			if !d.Retry {
				if d.Reason == retry.ReasonBudget {
					s.res.BudgetDenials++
				}
				s.invocationDone(in, m, false)
				return
			}
			wait = d.Wait
		} else {
			wait = s.wait(s.st.AttemptBase, s.st.AttemptCap, n-1)
		}
		s.at(s.now+wait, func() { s.attempt(in, m, n+1) })
	})
}

var errUnavailable = &retry.StatusError{StatusCode: 503}

// callGateway models the gateway: down during the outage, 503 beyond its
// capacity, otherwise it answers after the phase's latency.
func (s *sim) callGateway(o *order, done func(ok bool)) {
	o.calls++
	s.res.Calls++
	if sec := int(s.now / time.Second); sec < len(s.calls) {
		s.calls[sec]++
	}
	sc := s.sc
	if s.now >= sc.OutageAt && s.now < sc.RecoverAt {
		s.at(s.now+sc.RejectAfter, func() { done(false) })
		return
	}
	if s.inFlight >= s.capacity() {
		s.at(s.now+sc.RejectAfter, func() { done(false) })
		return
	}
	latency := sc.Healthy
	if s.now >= sc.DegradeAt && s.now < sc.OutageAt {
		latency = sc.Degraded
	}
	s.inFlight++
	s.at(s.now+latency, func() {
		s.inFlight--
		done(true)
	})
}

func (s *sim) capacity() int {
	sc := s.sc
	if s.now < sc.RecoverAt || s.now >= sc.RecoverAt+sc.RampFor {
		return sc.Capacity
	}
	f := float64(s.now-sc.RecoverAt) / float64(sc.RampFor)
	return sc.RecoveryFloor + int(f*float64(sc.Capacity-sc.RecoveryFloor))
}

func (s *sim) invocationDone(in *instance, m *message, ok bool) {
	in.busy = false
	o := m.o
	switch {
	case ok:
		o.done, o.finishedAt = true, s.now
		s.res.Charged++
	case m.receives < s.st.Receives:
		m.visibleAt = s.now + s.st.Visibility
		if s.st.QueueJitter {
			m.visibleAt = s.now + retry.HalfJitter(s.st.Visibility, s.rnd)
		}
		s.enqueue(m)
	default:
		if s.st.Receives > 1 {
			s.res.MessagesDLQ++
		}
		if o.wfAttempt < s.st.WorkflowAttempts {
			w := s.wait(s.st.WorkflowInterval, s.st.WorkflowMaxDelay, o.wfAttempt-1)
			s.at(s.now+w, func() { s.startWorkflowAttempt(o) })
		} else if o.calls < s.st.CallBudget {
			o.wfAttempt = 0
			s.res.CustomerRetries++
			s.at(s.now+retry.HalfJitter(s.sc.CustomerWait, s.rnd), func() { s.startWorkflowAttempt(o) })
		} else {
			o.done, o.finishedAt = true, s.now
			s.res.DeadLettered++
		}
	}
	s.at(s.now, func() { s.dispatch(in) })
}

func (s *sim) finish() {
	r := &s.res
	last := 0
	for i, c := range s.calls {
		if c > 0 {
			last = i
		}
	}
	r.CallsPerSecond = s.calls[:last+1]
	from, to := int(s.sc.RecoverAt/time.Second), int((s.sc.RecoverAt+s.sc.RampFor)/time.Second)
	for i, c := range r.CallsPerSecond {
		r.Peak = max(r.Peak, c)
		if i >= from && i < to {
			r.PeakRecovery = max(r.PeakRecovery, c)
		}
	}
	total := 0
	for _, o := range s.orders {
		r.WorstPerOrder = max(r.WorstPerOrder, o.calls)
		total += o.calls
		if o.done {
			r.Drain = max(r.Drain, o.finishedAt)
		} else {
			r.Drain = s.sc.Horizon // not drained within the horizon
		}
	}
	r.MeanPerOrder = float64(total) / float64(len(s.orders))
	for _, in := range s.pool {
		if in.breaker != nil {
			r.BreakerOpenings += int(in.breaker.Stats().Opened)
		}
	}
}
