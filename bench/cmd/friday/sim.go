package main

import (
	"time"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// The Friday of docs/design.md#age-alarm, from Start: orders arrive for
// Rush at PerHour on average, each Every's share in its first Burst, and
// each order puts one message in every consumer queue; the run lasts
// Horizon, minute by minute.
const (
	Start, Rush, Horizon, Every, Burst = 16 * time.Hour, 4 * time.Hour, 8 * time.Hour, 15 * time.Minute, 5 * time.Minute
	// PerHour arrive; the design assumes DesignPerHour are processed.
	PerHour, DesignPerHour = 900.0, 600.0
)

// Run is one queue at one capacity.
type Run struct {
	Capacity      string
	PerHour, Peak float64
	// Per minute: the depth at its end, first receives, and those that
	// waited over SLO 2's M.
	Depth, received, late []float64
	// Since Start: PeakAt, Drained (-1: not by the horizon) and AgeAlarm
	// (-1: quiet); Oldest is the oldest message's greatest age.
	PeakAt, Drained, AgeAlarm, Oldest time.Duration
}

// Simulate plays the Friday against q at r's capacity, a fluid FIFO queue.
func Simulate(q Queue, r Run) Run {
	n := int(Horizon / time.Minute)
	r.Depth, r.received, r.late, r.Drained, r.AgeAlarm = make([]float64, n), make([]float64, n), make([]float64, n), 0, -1
	arrived := make([]float64, n) // cumulative
	wait := int(lambdaapi.SLOQueueWait / time.Minute)
	done, first, breaches, periodMax := 0.0, 0, 0, time.Duration(0)
	for m := range n {
		t := time.Duration(m) * time.Minute
		if m > 0 {
			arrived[m] = arrived[m-1]
		}
		if t < Rush && t%Every < Burst {
			arrived[m] += PerHour * Every.Hours() / Burst.Minutes()
		}
		before := done
		done = min(done+r.PerHour/60, arrived[m])
		r.received[m] = done - before
		if m >= wait {
			r.late[m] = max(0, min(done, arrived[m-wait])-before)
		}
		r.Depth[m] = arrived[m] - done
		if r.Depth[m] > r.Peak {
			r.Peak, r.PeakAt = r.Depth[m], t+time.Minute
		}
		for first <= m && arrived[first] <= done+1e-9 {
			first++
		}
		age := time.Duration(0)
		if r.Depth[m] > 1e-9 {
			age, r.Drained = time.Duration(m+1-first)*time.Minute, t+time.Minute
		}
		r.Oldest, periodMax = max(r.Oldest, age), max(periodMax, age)
		if (t+time.Minute)%q.Period == 0 { // the alarm's period ends: Maximum > Threshold
			if breaches++; periodMax <= q.Threshold {
				breaches = 0
			}
			if periodMax = 0; breaches >= q.Periods && r.AgeAlarm < 0 {
				r.AgeAlarm = t + time.Minute
			}
		}
	}
	if r.Depth[n-1] > 1e-9 {
		r.Drained = -1
	}
	return r
}

// SLO is when the first burn-rate alarm of SLO 2 fires over the runs of
// every queue at one capacity (its metrics sum every queue), -1 when none
// does; each alarm's period is aligned to the clock.
func SLO(runs []Run, burns []Burn) (time.Duration, Burn) {
	for m := range len(runs[0].late) {
		end := Start + time.Duration(m+1)*time.Minute
		for _, b := range burns {
			if end%b.Window != 0 {
				continue
			}
			late, total := 0.0, 0.0
			for k := max(0, m+1-int(b.Window/time.Minute)); k <= m; k++ {
				for _, r := range runs {
					late, total = late+r.late[k], total+r.received[k]
				}
			}
			if total > 0 && late/total/(1-lambdaapi.SLOObjective) > b.Rate {
				return end - Start, b
			}
		}
	}
	return -1, Burn{}
}
