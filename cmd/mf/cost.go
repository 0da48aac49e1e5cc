package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/mercadofresco/integration/cmd/mf/cost"
)

// runCost prints the monthly cost of one environment from its synthesized
// templates, the usage model and the dated price table (package cost);
// with -before, the monthly delta from the templates in that directory
// (the committed snapshots, say) to those of -dir.
func runCost(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("cost", "[-e ENV] [-dir DIR] [-before DIR] [-usage FILE] [-prices FILE]", stderr)
	env := fs.String("e", "prod", "environment (dev, staging, prod)")
	dir := fs.String("dir", "cdk.out", `directory of the synthesized templates (a cloud assembly or the snapshots); "": synthesize now`)
	before := fs.String("before", "", "directory of the templates to compare with: prints the monthly delta")
	usagePath := fs.String("usage", "", "usage model (default: the committed cmd/mf/cost/usage.json)")
	pricesPath := fs.String("prices", "", "price table (default: the committed cmd/mf/cost/prices-eu-west-1.json)")
	if code, done := parse(fs, args); done {
		return code
	}
	if err := costReport(stdout, *env, *dir, *before, *usagePath, *pricesPath); err != nil {
		return fail(stderr, "cost", err, 2)
	}
	return 0
}

func costReport(stdout io.Writer, env, dir, before, usagePath, pricesPath string) error {
	usage, err := cost.DefaultUsage()
	if usagePath != "" {
		usage, err = cost.LoadUsage(usagePath)
	}
	if err != nil {
		return err
	}
	prices, err := cost.DefaultPrices()
	if pricesPath != "" {
		prices, err = cost.LoadPrices(pricesPath)
	}
	if err != nil {
		return err
	}
	if env == "" {
		return fmt.Errorf("-e names no environment")
	}
	after, err := load(env, dir)
	if err != nil {
		return fmt.Errorf("%w (run `make synth` or `cdk synth -c env=%s` first)", err, env)
	}
	if before != "" {
		old, err := load(env, before)
		if err != nil {
			return err
		}
		d, err := cost.CompareTemplates(old[0], after[0], usage, prices)
		if err != nil {
			return err
		}
		return writeDelta(stdout, d)
	}
	e, err := cost.Compute(after[0], usage, prices)
	if err != nil {
		return err
	}
	return writeEstimate(stdout, e)
}

// Write prints the estimate as a table: every line with its quantity, its
// fixed and order-driven cost, the totals, the cost per order, and the
// messaging layer against the design's figure.
func writeEstimate(w io.Writer, e *cost.Estimate) error {
	u := e.Usage
	fmt.Fprintf(w, "MercadoFresco %s: monthly cost in %s, %s list prices of %s, %s orders a month (%s executions in flight at peak)\n\n",
		e.Env, e.Prices.Region, e.Prices.Currency, e.Prices.Recorded, group(e.Orders), group(u.ExecutionsInFlightPeak))
	t := &Table{Right: []bool{false, false, true, false, true, true, true}}
	t.Row("service", "item", "quantity a month", "", "fixed", "per-order", "monthly")
	service := ""
	for _, l := range e.Lines {
		s := l.Service
		if s == service {
			s = ""
		}
		service = l.Service
		item := l.Item
		if l.Detail != "" {
			item += " (" + l.Detail + ")"
		}
		t.Row(s, item, qty(l.Quantity), l.Unit, usd(l.Fixed), usd(l.PerOrder), usd(l.Monthly()))
	}
	t.Row("", "total", "", "", usd(e.Fixed()), usd(e.PerOrder()), usd(e.Monthly()))
	if err := t.Write(w); err != nil {
		return err
	}
	v, total := e.CostPerOrder()
	fmt.Fprintf(w, "\nper order: %.5f USD order-driven; %.5f USD with the fixed %.2f USD shared by %s orders\n", v, total, e.Fixed(), group(e.Orders))
	fmt.Fprintf(w, "workflow: %.2f state transitions per execution\n", e.TransitionsPerExecution)

	fmt.Fprintf(w, "\nmessaging layer against the figure the design started from, for 240,000 orders a month (SPEC; docs/cost.md):\n")
	t = &Table{Right: []bool{false, true, true, true}}
	t.Row("", "design", "estimate", "difference")
	design, now := 0.0, 0.0
	for _, l := range cost.Layers {
		d := u.DesignMessagingUSD[l]
		design += d
		now += e.Layer(l)
		t.Row(l, fmt.Sprintf("%.2f", d), fmt.Sprintf("%.2f", e.Layer(l)), fmt.Sprintf("%+.2f", e.Layer(l)-d))
	}
	// The design's parts add up to 58.45 USD; SPEC rounds the layer to ~62.
	t.Row("total of the parts (SPEC: ~62)", fmt.Sprintf("%.2f", design), fmt.Sprintf("%.2f", now), fmt.Sprintf("%+.2f", now-design))
	if err := t.Write(w); err != nil {
		return err
	}
	if len(e.Unpriced) > 0 {
		var s []string
		for _, k := range slices.Sorted(maps.Keys(e.Unpriced)) {
			s = append(s, fmt.Sprintf("%s (%d)", k, e.Unpriced[k]))
		}
		fmt.Fprintf(w, "\nnot priced (types the model does not know): %s\n", strings.Join(s, ", "))
	}
	if len(e.Notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range e.Notes {
			fmt.Fprintln(w, "  - "+n)
		}
	}
	fmt.Fprintln(w, "\nWithout free tier or taxes. Each price's source and basis: cmd/mf/cost/prices-eu-west-1.json;")
	_, err := fmt.Fprintln(w, "volumes and per-invocation work: cmd/mf/cost/usage.json.")
	return err
}

func usd(v float64) string {
	if v == 0 {
		return "-"
	}
	if v < 0.005 && v > -0.005 {
		return "<0.01"
	}
	return fmt.Sprintf("%.2f", v)
}

func qty(v float64) string {
	switch {
	case v >= 1000:
		return group(v)
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	case v >= 0.01:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// group formats v rounded, with thousands separators.
func group(v float64) string { return english.Sprintf("%.0f", v) }

var english = message.NewPrinter(language.English)

// writeDelta prints the changed lines and the monthly delta (the line mf
// review's summary has too).
func writeDelta(w io.Writer, d cost.Delta) error {
	t := &Table{Right: []bool{false, false, true, true, true}}
	t.Row("service", "item", "before", "after", "delta")
	for _, c := range d.Changes {
		t.Row(c.Service, c.Item, fmt.Sprintf("%.2f", c.Before.Monthly()), fmt.Sprintf("%.2f", c.After.Monthly()), fmt.Sprintf("%+.2f", c.Monthly()))
	}
	if len(d.Changes) > 0 {
		if err := t.Write(w); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, costLine(d))
	return err
}
