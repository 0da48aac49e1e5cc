// Package models checks the Promela models of this folder with Spin: each
// model's properties hold (TestModels) and each mutant, the model with one
// safeguard removed, yields a counterexample with a trail (TestMutants).
// `make test` runs the reduced bounds in a lane of its own; `make verify`
// (-models.full) runs the full bounds and prints what each run explored.
// Spin and gcc must be installed (`make install` installs Spin): a missing
// one fails the tests, it never skips them. Verifiers are compiled once per
// model, defines and flags into ../.cache/spin. README.md: what each model
// mirrors and assumes.
package models

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var full = flag.Bool("models.full", false, "run every model at its full bounds (make verify) instead of the reduced ones (make test)")

// A run is one pan search of one model.
type run struct {
	model   string   // file in this folder
	name    string   // what it checks, for the report
	defines []string // -D flags for spin and gcc
	pan     []string // pan's flags: -a, -f, -N claim
}

// fullRuns and reducedRuns: the same properties at two sizes (the models'
// headers explain each bound; a bound no define sets takes its default).
var fullRuns = []run{
	{"idempotency.pml", "at most once, stored result, orphan_claimable", []string{"-DNW=3", "-DDEADLINE=2"}, []string{"-a"}},
	{"outbox.pml", "one lease per publish, all_published", []string{"-DNROWS=3", "-DNPUB=2", "-DBATCH=2", "-DFAILS=1", "-DCRASHES=1"}, []string{"-a", "-f"}},
	{"outbox.pml", "one lease per publish, all_published", []string{"-DNROWS=2", "-DNPUB=3", "-DBATCH=2", "-DFAILS=1", "-DCRASHES=1"}, []string{"-a", "-f"}},
	{"breaker.pml", "one probe, fails_open", []string{"-DNI=2", "-DDOWNS=1"}, []string{"-a", "-f", "-N", "fails_open"}},
	{"breaker.pml", "one probe, stale_cache", []string{"-DNI=2", "-DDOWNS=1"}, []string{"-a", "-f", "-N", "stale_cache"}},
	{"stock.pml", "totals = ledger", []string{"-DFULL=1", "-DROUNDS=3", "-DLATE=1", "-DCOLLAPSE"}, nil},
}

var reducedRuns = []run{
	{"idempotency.pml", "at most once, stored result, orphan_claimable", []string{"-DNW=2"}, []string{"-a"}},
	{"outbox.pml", "one lease per publish, all_published", []string{"-DNROWS=2"}, []string{"-a", "-f"}},
	{"breaker.pml", "one probe, fails_open", []string{"-DNI=1"}, []string{"-a", "-f", "-N", "fails_open"}},
	{"breaker.pml", "one probe, stale_cache", []string{"-DDOWNS=0"}, []string{"-a", "-f", "-N", "stale_cache"}},
	{"stock.pml", "totals = ledger", []string{"-DFULL=0"}, nil},
}

// mutants: each must yield a counterexample (reduced bounds suffice).
var mutants = []struct {
	run
	want string // what spin's replay of the trail reports
}{
	{run{"idempotency.pml", "owner fence removed", []string{"-DNW=2", "-DMUTANT=1"}, []string{"-a"}}, "assertion violated"},
	{run{"idempotency.pml", "expired-lock clause removed from the claim", []string{"-DNW=2", "-DMUTANT=2"}, []string{"-a"}}, "START OF CYCLE"},
	{run{"outbox.pml", "lease check removed from the claim", []string{"-DNROWS=2", "-DMUTANT=1"}, []string{"-a", "-f"}}, "assertion violated"},
	{run{"outbox.pml", "claim-token fence removed from markFailed", []string{"-DNROWS=2", "-DMUTANT=2"}, []string{"-a", "-f"}}, "assertion violated"},
	{run{"breaker.pml", "probe-lease check removed from acquire", []string{"-DDOWNS=0", "-DMUTANT=1"}, []string{"-a", "-f", "-N", "stale_cache"}}, "assertion violated"},
	{run{"stock.pml", "version check removed from begin", []string{"-DFULL=0", "-DMUTANT=1"}, nil}, "assertion violated"},
}

func TestModels(t *testing.T) {
	runs := reducedRuns
	if *full {
		runs = fullRuns
	}
	var mu sync.Mutex
	var report []string
	t.Cleanup(func() {
		if *full {
			fmt.Println("| model | checks | defines | states stored | transitions | depth | time |")
			fmt.Println("|---|---|---|---:|---:|---:|---:|")
			for _, l := range report {
				fmt.Println(l)
			}
		}
	})
	for _, r := range runs {
		t.Run(r.model+"/"+strings.Join(r.defines, " "), func(t *testing.T) {
			if !*full { // the full searches take the memory one at a time
				t.Parallel()
			}
			res := search(t, r)
			if res.errors != 0 {
				t.Fatalf("%s: %d errors, pan says:\n%s\nreplay:\n%s", r.model, res.errors, res.out, replay(t, r, res.dir))
			}
			if !strings.Contains(res.out, "Full statespace search") {
				t.Fatalf("%s: not a full search:\n%s", r.model, res.out)
			}
			line := fmt.Sprintf("| %s | %s | %s | %d | %d | %d | %.1f s |", r.model, r.name, strings.Join(r.defines, " "), res.states, res.transitions, res.depth, res.seconds)
			if !*full {
				t.Log(line)
			}
			mu.Lock()
			report = append(report, line)
			mu.Unlock()
		})
	}
}

func TestMutants(t *testing.T) {
	for _, m := range mutants {
		t.Run(m.model+"/"+m.name, func(t *testing.T) {
			t.Parallel()
			res := search(t, m.run)
			if res.errors == 0 {
				t.Fatalf("%s with %v: no counterexample, the model cannot tell the safeguard is gone:\n%s", m.model, m.defines, res.out)
			}
			trail := filepath.Join(res.dir, m.model+".trail")
			if _, err := os.Stat(trail); err != nil {
				t.Fatalf("%s: pan found %d errors but wrote no trail: %v", m.model, res.errors, err)
			}
			if got := replay(t, m.run, res.dir); !strings.Contains(got, m.want) {
				t.Fatalf("%s: the trail's replay does not show %q:\n%s", m.model, m.want, got)
			}
		})
	}
}

type result struct {
	dir, out              string
	errors, states, depth int
	transitions           int
	seconds               float64
}

var (
	reErrors  = regexp.MustCompile(`depth reached (\d+), errors: (\d+)`)
	reStates  = regexp.MustCompile(`(\d+(?:\.\d+e\+\d+)?) states, stored`)
	reTrans   = regexp.MustCompile(`(\d+(?:\.\d+e\+\d+)?) transitions`)
	reElapsed = regexp.MustCompile(`elapsed time ([\d.e+-]+) seconds`)
)

// search compiles (or takes from the cache) the verifier of r and runs it
// in a fresh directory holding a copy of the model.
func search(t *testing.T, r run) result {
	t.Helper()
	src, err := os.ReadFile(r.model)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, r.model), src, 0o644); err != nil {
		t.Fatal(err)
	}
	pan := verifier(t, r, src)
	args := append([]string{"-m200000"}, r.pan...)
	if *full {
		args = append(args, "-w26")
	}
	cmd := exec.Command(pan, args...)
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	res := result{dir: dir, out: string(out)}
	m := reErrors.FindStringSubmatch(res.out)
	if m == nil {
		t.Fatalf("%s: pan %v did not finish (%v):\n%s", r.model, args, err, out)
	}
	res.depth, _ = strconv.Atoi(m[1])
	res.errors, _ = strconv.Atoi(m[2])
	res.states = number(reStates.FindStringSubmatch(res.out))
	res.transitions = number(reTrans.FindStringSubmatch(res.out))
	res.seconds = time.Since(start).Seconds()
	if e := reElapsed.FindStringSubmatch(res.out); e != nil {
		res.seconds, _ = strconv.ParseFloat(e[1], 64)
	}
	if strings.Contains(res.out, "error: max search depth too small") {
		t.Fatalf("%s: the search was cut by the depth limit:\n%s", r.model, out)
	}
	return res
}

func number(m []string) int {
	if m == nil {
		return -1
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	return int(f)
}

// verifier returns the path of pan for r: spin -a and gcc, once per model
// text, defines, flags and tool versions, kept in ../.cache/spin.
func verifier(t *testing.T, r run, src []byte) string {
	t.Helper()
	spin := tool(t, "spin", "Spin (the Debian package spin; `make install` installs it)")
	gcc := tool(t, "gcc", "gcc (compiles Spin's verifier)")
	cflags := []string{"-w", "-O2", "-DNFAIR=4"}
	if !*full {
		cflags[1] = "-O1"
	}
	cflags = append(cflags, r.defines...)
	version, _ := exec.Command(spin, "-V").CombinedOutput()
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%q\x00%q\x00%s\x00", src, r.defines, cflags, version)
	key := hex.EncodeToString(h.Sum(nil))[:24]
	cache, err := filepath.Abs(filepath.Join("..", ".cache", "spin", key))
	if err != nil {
		t.Fatal(err)
	}
	pan := filepath.Join(cache, "pan")
	if _, err := os.Stat(pan); err == nil {
		return pan
	}
	build := t.TempDir()
	if err := os.WriteFile(filepath.Join(build, r.model), src, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{
		append(append([]string{spin}, r.defines...), "-a", r.model),
		append(append([]string{gcc}, cflags...), "-o", "pan", "pan.c"),
	} {
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Dir = build
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	// Rename into place: a parallel run building the same key wins or loses
	// whole.
	tmp := pan + ".tmp" + strconv.Itoa(os.Getpid())
	data, err := os.ReadFile(filepath.Join(build, "pan"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmp, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, pan); err != nil {
		t.Fatal(err)
	}
	return pan
}

// replay prints the trail in dir with spin -t (the counterexample's steps
// and the violated property).
func replay(t *testing.T, r run, dir string) string {
	t.Helper()
	spin := tool(t, "spin", "Spin")
	cmd := exec.Command(spin, append(append(append([]string{}, r.defines...), "-t"), r.model)...)
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput()
	if len(out) > 20000 {
		out = append(out[:10000:10000], append([]byte("\n...\n"), bytes.TrimSpace(out[len(out)-10000:])...)...)
	}
	return string(out)
}

func tool(t *testing.T, name, what string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: %v. Run `make install` (it runs apt-get install -y spin when spin is missing) or install it by hand; the models are not checked without it", what, err)
	}
	return p
}
