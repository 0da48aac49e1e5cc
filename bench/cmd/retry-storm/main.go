// Command retry-storm plays a retry storm on a virtual clock and compares
// three ways of retrying, naive (SDK 5 attempts x 4 receives x 4 workflow
// attempts, no jitter, pollers scaling 20 -> 60), jitter only, and all four
// defences (jitter, a concurrency ceiling, the retry budget and the shared
// circuit breaker: the real lambdas/retry and lambdas/breaker), with the
// numbers "as deployed" read from the synthesized prod templates. It prints
// a table and writes the chart of gateway calls per second.
//
//	go run ./cmd/retry-storm -seed 1 -chart ../docs/retry-storm.svg   (in bench/)
//	go run ./cmd/retry-storm -templates ../test/testdata/snapshots   (the default)
//
// The scenario, the numbers read from the templates and the reading of the
// results: docs/retry-storm.md.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"
)

func main() {
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "random seed (printed; the same seed gives the same run)")
	chart := flag.String("chart", "", "write the chart here (.svg or .png); empty: no chart")
	sweep := flag.Int("sweep", 0, "also run the defended strategy with seeds 1..N and print the spread of the recovery-peak ratio")
	templates := flag.String("templates", "../test/testdata/snapshots", "directory of the synthesized prod templates the \"as deployed\" strategy reads (a cloud assembly or the snapshots)")
	flag.Parse()
	fmt.Printf("retry-storm: seed %d\n", *seed)
	results := RunAll(*seed)
	dep, err := ReadDeployed(*templates)
	if err != nil {
		fmt.Fprintln(os.Stderr, "retry-storm: as deployed:", err)
		os.Exit(1)
	}
	fmt.Printf("as deployed, from %s: Cobrar Retry MaxAttempts %d, IntervalSeconds %g, MaxDelaySeconds %g, jitter %v; GATEWAY_MAX_ATTEMPTS %d; mf-cobro reserved concurrency %d, starter MaximumConcurrency %d; breaker %d failures, open %s\n",
		filepath.Join(*templates, DeployedTemplate), dep.MaxAttempts, dep.IntervalSeconds, dep.MaxDelay, dep.Jitter, dep.ClientAttempts, dep.Reserved, dep.StarterConcurrency, dep.Threshold, dep.OpenPeriod)
	noQueueJitter := dep.Strategy()
	noQueueJitter.Name, noQueueJitter.QueueJitter = "as deployed, without queue jitter", false
	results = append(results, Run(Storm, dep.Strategy(), *seed), Run(Storm, noQueueJitter, *seed))
	PrintTable(os.Stdout, Storm, results)
	if *chart != "" {
		if err := Chart(*chart, Storm, results, *seed); err != nil {
			fmt.Fprintln(os.Stderr, "retry-storm:", err)
			os.Exit(1)
		}
		fmt.Println("chart:", *chart)
	}
	if *sweep > 0 {
		Sweep(os.Stdout, *sweep)
	}
}

// Sweep prints, over seeds 1..n, the spread of the defended/naive ratio of
// the recovery peaks and the worst calls per order with all four defences.
func Sweep(w io.Writer, n int) {
	var ratios []float64
	worst, minCharged := 0, Storm.Orders
	for seed := uint64(1); seed <= uint64(n); seed++ {
		naive, def := Run(Storm, Naive, seed), Run(Storm, AllFour, seed)
		ratios = append(ratios, float64(def.PeakRecovery)/float64(naive.PeakRecovery))
		worst, minCharged = max(worst, def.WorstPerOrder), min(minCharged, def.Charged)
	}
	slices.Sort(ratios)
	fmt.Fprintf(w, "\nsweep over seeds 1..%d, all four defences: recovery peak / naive min %.3f, median %.3f, max %.3f; worst calls per order %d; fewest orders charged %d of %d\n",
		n, ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1], worst, minCharged, Storm.Orders)
}

// RunAll runs every strategy on the Storm scenario with one seed.
func RunAll(seed uint64) []Result {
	var out []Result
	for _, st := range []Strategy{Naive, JitterOnly, AllFour} {
		out = append(out, Run(Storm, st, seed))
	}
	return out
}

// PrintTable writes the comparison as a Markdown table.
func PrintTable(w io.Writer, sc Scenario, rs []Result) {
	fmt.Fprintf(w, "\nscenario: %d orders arriving %s-%s; gateway %s -> %s at %s, down %s-%s, capacity %d calls in flight (from %d after the outage, back to %d over %s)\n\n",
		sc.Orders, sc.ArrivalStart, sc.ArrivalEnd, sc.Healthy, sc.Degraded, sc.DegradeAt, sc.OutageAt, sc.RecoverAt,
		sc.Capacity, sc.RecoveryFloor, sc.Capacity, sc.RampFor)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| strategy\t peak calls/s during recovery\t peak calls/s\t gateway calls\t calls per order: mean\t worst\t worst case by layers\t charged\t customer retries\t orders dead-lettered\t messages to DLQ\t time to drain\t breaker openings\t budget denials\t")
	fmt.Fprintln(tw, "|---\t---\t---\t---\t---\t---\t---\t---\t---\t---\t---\t---\t---\t---\t")
	for _, r := range rs {
		drain := r.Drain.Round(time.Second).String()
		if r.Drain >= sc.Horizon {
			drain = "> " + sc.Horizon.String()
		}
		fmt.Fprintf(tw, "| %s\t %d\t %d\t %d\t %.1f\t %d\t %d\t %d\t %d\t %d\t %d\t %s\t %d\t %d\t\n",
			r.Strategy.Name, r.PeakRecovery, r.Peak, r.Calls, r.MeanPerOrder, r.WorstPerOrder, r.StructuralAttempt,
			r.Charged, r.CustomerRetries, r.DeadLettered, r.MessagesDLQ, drain, r.BreakerOpenings, r.BudgetDenials)
	}
	tw.Flush()
	if len(rs) >= 3 && rs[0].PeakRecovery > 0 {
		fmt.Fprintln(w)
		for _, r := range rs[2:] {
			fmt.Fprintf(w, "%s / naive, peak during recovery: %.3f\n", r.Strategy.Name, float64(r.PeakRecovery)/float64(rs[0].PeakRecovery))
		}
	}
}
