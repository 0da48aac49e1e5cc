// Command friday plays the design's Friday against every consumer queue of
// the prod templates at three capacities and prints each queue's depth,
// peak, drain time and alarms (docs/design.md#friday):
//
//	go run ./cmd/friday -chart ../docs/friday.svg   (in bench/)
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

func main() {
	templates := flag.String("templates", "../test/testdata/snapshots", "directory of the synthesized prod templates (a cloud assembly or the snapshots)")
	chart := flag.String("chart", "", "write the chart here (.svg or .png); empty: no chart")
	flag.Parse()
	qs, burns, err := Read(*templates)
	if err == nil {
		runs := Play(qs)
		Print(os.Stdout, qs, burns, runs)
		if *chart != "" {
			err = Chart(*chart, qs, runs)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "friday:", err)
		os.Exit(1)
	}
}

// Play is every queue's runs, runs[capacity][queue], at the three
// capacities: as deployed, the design's and half of as deployed.
func Play(qs []Queue) [][]Run {
	out := make([][]Run, 3)
	for _, q := range qs {
		for c, r := range []Run{{Capacity: "as deployed", PerHour: q.PerHour}, {Capacity: "design 600/h", PerHour: DesignPerHour}, {Capacity: "half deployed", PerHour: q.PerHour / 2}} {
			out[c] = append(out[c], Simulate(q, r))
		}
	}
	return out
}

func clock(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%02d:%02d", int((Start + d).Hours()), int((Start+d).Minutes())%60)
}

// Print writes the runs as tables, one per queue, then SLO 2's verdicts.
func Print(w io.Writer, qs []Queue, burns []Burn, runs [][]Run) {
	fmt.Fprintf(w, "Friday: %.0f orders/h for %s from %s, each %s's in its first %s; one message per order in every queue\n", PerHour, Rush, clock(0), Every, Burst)
	for i, q := range qs {
		fmt.Fprintf(w, "\n%s (%s): age alarm above %s\n", q.Name, q.How, q.Threshold)
		fmt.Fprintf(w, "  %-14s %9s %7s %6s %8s %8s %9s  depth every 30 min\n", "capacity", "per hour", "peak", "at", "drained", "oldest", "age alarm")
		for c := range runs {
			r, alarm := runs[c][i], "quiet"
			if r.AgeAlarm >= 0 {
				alarm = clock(r.AgeAlarm)
			}
			fmt.Fprintf(w, "  %-14s %9.0f %7.0f %6s %8s %8s %9s ", r.Capacity, r.PerHour, r.Peak, clock(r.PeakAt), clock(r.Drained), r.Oldest, alarm)
			for m := 29; m < len(r.Depth); m += 30 {
				fmt.Fprintf(w, " %.0f", r.Depth[m])
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w)
	for _, rs := range runs {
		at, b := SLO(rs, burns)
		verdict := "quiet"
		if at >= 0 {
			verdict = fmt.Sprintf("fires at %s (burn rate above %g over %s)", clock(at), b.Rate, b.Window)
		}
		fmt.Fprintf(w, "SLO 2 at %s: %s\n", rs[0].Capacity, verdict)
	}
}

// Chart draws the depth of the queue with the least capacity as deployed
// at the three capacities, with the design's figures (about 1,200 queued
// at 20:00, empty by 22:00) as points.
func Chart(path string, qs []Queue, runs [][]Run) error {
	slowest := 0
	for i, q := range qs {
		if q.PerHour < qs[slowest].PerHour {
			slowest = i
		}
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Friday: depth of %s", qs[slowest].Name)
	p.X.Label.Text, p.Y.Label.Text = "hours since 16:00", "messages queued"
	p.Legend.Top = true
	var lines []any
	for _, rs := range runs {
		pts := make(plotter.XYs, len(rs[slowest].Depth))
		for m, d := range rs[slowest].Depth {
			pts[m] = plotter.XY{X: float64(m+1) / 60, Y: d}
		}
		lines = append(lines, fmt.Sprintf("%s (%.0f/h)", rs[slowest].Capacity, rs[slowest].PerHour), pts)
	}
	err := plotutil.AddLines(p, lines...)
	if err == nil {
		err = plotutil.AddScatters(p, "design: ~1,200 at 20:00, empty by 22:00", plotter.XYs{{X: 4, Y: 1200}, {X: 6, Y: 0}})
	}
	if err != nil {
		return err
	}
	return p.Save(8*vg.Inch, 4*vg.Inch, path)
}
