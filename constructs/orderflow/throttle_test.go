package orderflow_test

import (
	"container/heap"
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/mercadofresco/integration/constructs/orderflow"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/internal/testseed"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// The design's peak against a degraded gateway, on a simulated clock: 450
// executions reach Cobrar at once, cobro has 50 reserved slots
// (localaws.Reserved, as the e2e run's Lambda enforces them) and the
// gateway takes 4 s a call. Cobrar's retriers are the synthesized
// definition's, applied as Step Functions applies them (the first retrier
// whose ErrorEquals names the error, its own attempt count, the wait
// min(Interval × BackoffRate^n, MaxDelay) with FULL jitter, seeded). Every
// order is charged once, none fails for a throttle, none makes more than
// 15 gateway calls (docs/design.md#payment-throttle).
func TestThrottledChargesWaitTheirTurn(t *testing.T) {
	const orders, slots, gateway = 450, 50, 4 * time.Second
	var asl struct {
		States map[string]struct{ Retry []retrier }
	}
	raw, _ := json.Marshal(newFixture(t, orderflow.WorkflowProps{}).definition(t))
	mustJSON(t, raw, &asl)
	retriers := asl.States[orderflow.StateCobrar].Retry
	rng := testseed.New(t)

	cobro := &localaws.Reserved{Limit: slots}
	type execution struct {
		attempts                  []int // per retrier
		throttled, calls, charged int
		failed                    string
	}
	execs := make([]execution, orders)
	for i := range execs {
		execs[i].attempts = make([]int, len(retriers))
	}
	var q events
	for i := range orders {
		heap.Push(&q, event{at: 0, exec: i})
	}
	var last time.Duration
	for q.Len() > 0 {
		ev := heap.Pop(&q).(event)
		x := &execs[ev.exec]
		if ev.release != nil { // the gateway answered: charged
			ev.release()
			x.calls++
			x.charged++
			last = ev.at
			continue
		}
		release, ok := cobro.Enter()
		if ok {
			heap.Push(&q, event{at: ev.at + gateway, exec: ev.exec, release: release})
			continue
		}
		x.throttled++
		r := slices.IndexFunc(retriers, func(r retrier) bool {
			return slices.Contains(r.ErrorEquals, lambdaapi.ErrLambdaThrottled) || slices.Contains(r.ErrorEquals, "States.ALL")
		})
		if r < 0 || x.attempts[r] >= retriers[r].MaxAttempts {
			x.failed = lambdaapi.ErrLambdaThrottled
			continue
		}
		wait := retriers[r].wait(x.attempts[r], rng.Float64())
		x.attempts[r]++
		heap.Push(&q, event{at: ev.at + wait, exec: ev.exec})
	}
	most := 0
	for i, x := range execs {
		if x.failed != "" || x.charged != 1 || x.calls > lambdaapi.MaxGatewayCallsPerOperation {
			t.Errorf("order %d: failed %q, charged %d times, %d gateway calls, throttled %d times", i, x.failed, x.charged, x.calls, x.throttled)
		}
		most = max(most, x.throttled)
	}
	if cobro.Peak() != slots || cobro.Throttled() == 0 {
		t.Fatalf("peak %d of %d slots, %d throttled: the slots were not saturated", cobro.Peak(), slots, cobro.Throttled())
	}
	t.Logf("%d orders charged by %s (simulated); %d invocations throttled, at most %d for one order", orders, last, cobro.Throttled(), most)
}

// retrier is one Retry of a state as synthesized.
type retrier struct {
	ErrorEquals                                   []string
	IntervalSeconds, BackoffRate, MaxDelaySeconds float64
	MaxAttempts                                   int
	JitterStrategy                                string
}

// wait is the pause before retry n (from 0), FULL jitter drawing u in [0, 1).
func (r retrier) wait(n int, u float64) time.Duration {
	d := r.IntervalSeconds * math.Pow(r.BackoffRate, float64(n))
	if r.MaxDelaySeconds > 0 {
		d = min(d, r.MaxDelaySeconds)
	}
	if r.JitterStrategy == "FULL" {
		d *= u
	}
	return time.Duration(d * float64(time.Second))
}

// event is an execution's next call of Cobrar, or, with release, the end
// of a charge that holds a slot.
type event struct {
	at      time.Duration
	exec    int
	release func()
}

type events []event

func (e events) Len() int           { return len(e) }
func (e events) Less(i, j int) bool { return e[i].at < e[j].at }
func (e events) Swap(i, j int)      { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)        { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}
