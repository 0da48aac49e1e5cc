package cost

import (
	"fmt"
	"github.com/mercadofresco/integration/synthesized"
	"math"
)

// Change is one line whose monthly cost differs between two estimates.
type Change struct {
	Service, Item string
	Before, After Line // the zero Line where the line is new or gone
}

// Monthly is the change's monthly delta.
func (c Change) Monthly() float64 { return c.After.Monthly() - c.Before.Monthly() }

// Delta is what a change of templates does to the monthly cost.
type Delta struct {
	Before, After *Estimate
	Changes       []Change
}

// Monthly is the delta of the whole monthly cost, and of its fixed and
// order-driven parts.
func (d Delta) Monthly() float64  { return d.After.Monthly() - d.Before.Monthly() }
func (d Delta) Fixed() float64    { return d.After.Fixed() - d.Before.Fixed() }
func (d Delta) PerOrder() float64 { return d.After.PerOrder() - d.Before.PerOrder() }

// Compare lists the lines whose cost differs (by more than a hundredth of a
// cent) between before and after, in after's order, then the removed ones.
func Compare(before, after *Estimate) Delta {
	d := Delta{Before: before, After: after}
	old := map[string]Line{}
	for _, l := range before.Lines {
		old[l.key()] = l
	}
	seen := map[string]bool{}
	for _, l := range after.Lines {
		seen[l.key()] = true
		b, had := old[l.key()]
		if had && math.Abs(l.Monthly()-b.Monthly()) < 1e-4 {
			continue
		}
		d.Changes = append(d.Changes, Change{Service: l.Service, Item: l.Item, Before: b, After: l})
	}
	for _, l := range before.Lines {
		if !seen[l.key()] && math.Abs(l.Monthly()) >= 1e-4 {
			d.Changes = append(d.Changes, Change{Service: l.Service, Item: l.Item, Before: l})
		}
	}
	return d
}

// CompareTemplates estimates both sets of templates with the same usage
// and prices and compares them: the monthly delta of a change, for a
// review (`make review` can call it with the snapshots as before).
func CompareTemplates(before, after *synthesized.App, u *Usage, p *Prices) (Delta, error) {
	b, err := Compute(before, u, p)
	if err != nil {
		return Delta{}, fmt.Errorf("before: %w", err)
	}
	a, err := Compute(after, u, p)
	if err != nil {
		return Delta{}, fmt.Errorf("after: %w", err)
	}
	return Compare(b, a), nil
}
