package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestDefencesCutTheRecoveryPeak is the assertion: with all four
// defences the peak of gateway calls per second during the recovery is at
// most a tenth of the naive one, and no order makes more than 15 gateway
// calls. Fixed seeds keep it deterministic; `go run ./cmd/retry-storm
// -sweep 60` prints the spread over more seeds (docs/retry-storm.md).
func TestDefencesCutTheRecoveryPeak(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		t.Logf("seed %d", seed)
		rs := RunAll(seed)
		naive, jitter, def := rs[0], rs[1], rs[2]
		t.Logf("%v\n%v\n%v", naive, jitter, def)
		if naive.PeakRecovery == 0 || def.PeakRecovery*10 > naive.PeakRecovery {
			t.Errorf("seed %d: recovery peak %d/s with the defences vs %d/s naive: more than 1/10", seed, def.PeakRecovery, naive.PeakRecovery)
		}
		if def.WorstPerOrder > 15 || def.StructuralAttempt > 15 {
			t.Errorf("seed %d: an order made %d gateway calls (layers allow %d), want at most 15", seed, def.WorstPerOrder, def.StructuralAttempt)
		}
		if naive.WorstPerOrder <= 15 {
			t.Errorf("seed %d: naive worst %d calls per order: the scenario does not exercise the layers", seed, naive.WorstPerOrder)
		}
		if def.BreakerOpenings == 0 || def.BudgetDenials == 0 {
			t.Errorf("seed %d: breaker openings %d, budget denials %d: the real defences did not act", seed, def.BreakerOpenings, def.BudgetDenials)
		}
		if def.Charged+def.DeadLettered != Storm.Orders || naive.Charged+naive.DeadLettered != Storm.Orders {
			t.Errorf("seed %d: orders unaccounted for", seed)
		}
	}
}

func TestSameSeedSameRun(t *testing.T) {
	a, b := Run(Storm, AllFour, 42), Run(Storm, AllFour, 42)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different runs:\n%+v\n%+v", a, b)
	}
}

func TestTableAndChart(t *testing.T) {
	rs := RunAll(7)
	var buf bytes.Buffer
	PrintTable(&buf, Storm, rs)
	for _, want := range []string{"naive", "jitter only", "all four defences", "peak calls/s during recovery"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
	path := filepath.Join(t.TempDir(), "chart.svg")
	if err := Chart(path, Storm, rs, 7); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Fatalf("chart: %v", err)
	}
}

// deployedBars are the bars the as-deployed run must hold: a recovery peak
// at most a tenth of the naive one, at most 15 gateway calls per order (by
// the layers and as played), and every order charged within the simulated
// window, customers' retries after a fast failure included (a peak of 0
// alone is what a setup that never calls the gateway shows).
func deployedBars(naive, got Result) []string {
	var bad []string
	if got.PeakRecovery*10 > naive.PeakRecovery {
		bad = append(bad, fmt.Sprintf("recovery peak %d/s vs %d/s naive: more than 1/10", got.PeakRecovery, naive.PeakRecovery))
	}
	if got.WorstPerOrder > 15 || got.StructuralAttempt > 15 {
		bad = append(bad, fmt.Sprintf("an order made %d gateway calls (layers allow %d), want at most 15", got.WorstPerOrder, got.StructuralAttempt))
	}
	if got.Charged != Storm.Orders || got.Drain >= Storm.Horizon {
		bad = append(bad, fmt.Sprintf("%d of %d orders charged within %s (drained in %s)", got.Charged, Storm.Orders, Storm.Horizon, got.Drain))
	}
	return bad
}

// The "as deployed" strategy reads its numbers from the committed prod
// template, and the bars hold on it (docs/retry-storm.md: 450 of 450
// charged, 430 of them after their customer paid again).
func TestAsDeployedHoldsTheBars(t *testing.T) {
	dep, err := ReadDeployed(filepath.Join("..", "..", "..", "test", "testdata", "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read from %s: %+v", DeployedTemplate, dep)
	if dep.MaxAttempts <= 0 || dep.ClientAttempts <= 0 || dep.IntervalSeconds <= 0 || dep.Reserved+dep.StarterConcurrency <= 0 {
		t.Fatalf("numbers not read from the template: %+v", dep)
	}
	st := dep.Strategy()
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		naive, got := Run(Storm, Naive, seed), Run(Storm, st, seed)
		t.Logf("seed %d: %v", seed, got)
		for _, b := range deployedBars(naive, got) {
			t.Errorf("seed %d: as deployed, %s", seed, b)
		}
		if got.Charged+got.DeadLettered != Storm.Orders {
			t.Errorf("seed %d: orders unaccounted for", seed)
		}
	}
	// A setup that never calls the gateway (no function to run the charge)
	// has no recovery peak either, and fails the bars.
	never := st
	never.Pollers, never.MaxPollers = 0, 0
	got := Run(Storm, never, 1)
	if bad := deployedBars(Run(Storm, Naive, 1), got); got.Calls != 0 || got.PeakRecovery != 0 || len(bad) == 0 {
		t.Errorf("a setup with %d gateway calls passes the as-deployed bars: %v", got.Calls, bad)
	}
}

// A template without the charge path is an error, not a silent default.
func TestReadDeployedRefusesAnotherTemplate(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, DeployedTemplate), []byte(`{"Resources":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDeployed(dir); err == nil {
		t.Fatal("ReadDeployed accepted a template without mf-cobro")
	}
}
