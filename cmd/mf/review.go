package main

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/mercadofresco/integration/cmd/mf/cost"
	"github.com/mercadofresco/integration/internal/snapshot"
	"github.com/mercadofresco/integration/synthesized"
)

// runReview shows what a change does to the infrastructure of one
// environment, as `cdk diff` does (IAM statements and security-group rules
// as tables), without AWS credentials: the committed snapshots in
// test/testdata/snapshots stand in for the deployed stacks. It synthesises
// the environment into a temporary directory with the CDK CLI (the Lambda
// binaries built), compares the normalised templates (internal/snapshot)
// with the snapshots, runs `cdk diff` for the stacks that differ, prints
// each changed state machine state by state, and ends with a summary: the
// changed resources (risky first), the guardrail figures the change moves,
// the monthly cost delta and the functions whose code changed
// (docs/design.md#review-tool). With -fail it exits 1 when anything differs
// (the CI gate).
func runReview(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("review", "[-e ENV] [-snapshots DIR] [-cdk CLI] [-fail]", stderr)
	env := fs.String("e", "dev", "environment to review (dev, staging, prod)")
	snapDir := fs.String("snapshots", filepath.Join("test", "testdata", "snapshots"), "directory of the committed snapshots")
	cdkBin := fs.String("cdk", "cdk", "CDK CLI to run")
	failOn := fs.Bool("fail", false, "exit 1 when any stack or function differs")
	if code, done := parse(fs, args); done {
		return code
	}
	differs, err := reviewEnv(stdout, stderr, *env, *snapDir, *cdkBin)
	switch {
	case err != nil:
		return fail(stderr, "review", err, 2)
	case *failOn && differs:
		return 1
	}
	return 0
}

// reviewEnv prints the review of env and reports whether anything differs.
func reviewEnv(stdout, stderr io.Writer, env, snapDir, cdkBin string) (differs bool, err error) {
	out, err := os.MkdirTemp("", "mf-review-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(out)
	// --no-validation: the review shows what differs; the CloudFormation
	// validator runs in `make synth` and `make test` (docs/design.md#review-tool).
	synth := exec.Command(cdkBin, "synth", "--quiet", "--no-validation", "-c", "env="+env, "-o", out)
	synth.Stdout, synth.Stderr = stderr, stderr
	if err := synth.Run(); err != nil {
		return false, fmt.Errorf("cdk synth -c env=%s: %w", env, err)
	}
	now, err := synthesized.LoadEnv(out, env)
	if err != nil {
		return false, fmt.Errorf("no stack of environment %q was synthesised: %w", env, err)
	}
	base, baseErr := synthesized.LoadEnv(snapDir, env)
	stacks, templates := now.StackNames(), map[string]map[string]any{}
	empty := filepath.Join(out, "empty.template.json.base")
	if err := os.WriteFile(empty, []byte("{}"), 0o644); err != nil {
		return false, err
	}
	// The templates as the snapshots hold them, what cdk diff compares
	// too: written over the synthesised ones.
	normalised := synthesized.New(env, now.Account, now.Region)
	for _, stack := range stacks {
		templates[stack] = now.Stacks[stack].Template
		norm, err := snapshot.Normalise(templates[stack])
		if err != nil {
			return false, err
		}
		if err := os.WriteFile(filepath.Join(out, stack+".template.json"), norm, 0o644); err != nil {
			return false, err
		}
		if err := normalised.Add(stack, norm); err != nil {
			return false, err
		}
	}
	changes := diffApps(base, normalised)
	changed := map[string]bool{}
	for _, c := range changes {
		changed[c.Stack] = true
	}
	differs = len(changes) > 0

	// cdk diff of the stacks that differ, one after the other; its
	// "Number of stacks with differences" lines are left out (the summary
	// at the end counts).
	var diffs []stackDiff
	for _, stack := range stacks {
		if !changed[stack] {
			continue
		}
		baseline := filepath.Join(snapDir, stack+".template.json")
		if stacksOf(base)[stack] == nil {
			fmt.Fprintf(stdout, "\n%s is a new stack (no committed snapshot): every resource is an addition.\n", stack)
			baseline = empty
		}
		diffs = append(diffs, stackDiff{stack: stack, base: baseline})
	}
	if err := runDiffs(stdout, cdkBin, out, diffs); err != nil {
		return false, err
	}
	writeStates(stdout, changes)

	bins, err := snapshot.Binaries(out, templates)
	if err != nil {
		return false, err
	}
	manifest, err := os.ReadFile(filepath.Join(snapDir, snapshot.ManifestFile))
	if err != nil {
		return false, fmt.Errorf("committed binaries manifest: %w", err)
	}
	code := codeChanges(manifest, bins)
	if len(code) > 0 {
		differs = true
	}
	if err := contractReview(stdout, now); err != nil {
		return false, err
	}
	writeSummary(stdout, env, changes, figures(changes, now), costDelta(base, baseErr, now), code)
	return differs, nil
}

// codeChanges compares the committed manifest with the binaries built now.
func codeChanges(committed []byte, now map[string]string) []string {
	before := map[string]string{}
	for _, line := range bytes.Split(committed, []byte("\n")) {
		sum, entry, ok := strings.Cut(string(line), "  ")
		if !ok || strings.HasPrefix(sum, "#") {
			continue
		}
		before[entry] = sum
	}
	var out []string
	for entry, sum := range now {
		switch old, ok := before[entry]; {
		case !ok:
			out = append(out, fmt.Sprintf("[+] %s (new function) %s", entry, sum[:12]))
		case old != sum:
			out = append(out, fmt.Sprintf("[~] %s code changed %s -> %s", entry, old[:12], sum[:12]))
		}
	}
	for entry := range before {
		if _, ok := now[entry]; !ok {
			out = append(out, fmt.Sprintf("[-] %s (function removed)", entry))
		}
	}
	slices.Sort(out)
	return out
}

// stackDiff is one `cdk diff` of a stack against its baseline template.
type stackDiff struct {
	stack, base string
}

// runDiffs runs the diffs side by side (as many at once as there are
// cores: each is a CLI start, mostly CPU) and writes their outputs to w
// whole and in the order given, so the report reads as if they ran one
// after the other.
func runDiffs(w io.Writer, cdkBin, app string, diffs []stackDiff) error {
	outs := make([][]byte, len(diffs))
	var g errgroup.Group
	g.SetLimit(max(2, runtime.NumCPU()))
	for i, d := range diffs {
		g.Go(func() (err error) {
			outs[i], err = cdkDiff(cdkBin, app, d.stack, d.base)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, out := range outs {
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	return nil
}

// cdkDiff runs cdk diff of one stack against base and returns its output
// without the "Number of stacks with differences" line.
func cdkDiff(cdkBin, app, stack, base string) ([]byte, error) {
	diff := exec.Command(cdkBin, "diff", "--app", app, "--exclusively", stack, "--template", base)
	var buf bytes.Buffer
	diff.Stdout, diff.Stderr = &buf, &buf
	if err := diff.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return nil, fmt.Errorf("cdk diff %s: %w", stack, err)
		}
	}
	var out bytes.Buffer
	for _, l := range bytes.SplitAfter(buf.Bytes(), []byte("\n")) {
		if bytes.Contains(l, []byte("Number of stacks with differences")) {
			continue
		}
		out.Write(l)
	}
	return out.Bytes(), nil
}

// costDelta is the summary's cost line: the monthly cost of the snapshots
// (before, or why they did not load) and of the synthesised templates (mf
// cost), or why it is missing.
func costDelta(before *synthesized.App, beforeErr error, now *synthesized.App) string {
	u, err := cost.DefaultUsage()
	var p *cost.Prices
	if err == nil {
		p, err = cost.DefaultPrices()
	}
	var d cost.Delta
	if err = cmp.Or(err, beforeErr); err == nil {
		d, err = cost.CompareTemplates(before, now, u, p)
	}
	if err != nil {
		return "monthly cost: not computed: " + err.Error()
	}
	return costLine(d)
}

// costLine is the monthly delta in one line.
func costLine(d cost.Delta) string {
	if len(d.Changes) == 0 {
		return fmt.Sprintf("monthly cost: unchanged, %.2f USD (mf cost)", d.After.Monthly())
	}
	return fmt.Sprintf("monthly cost: %.2f → %.2f USD (%+.2f: fixed %+.2f, per-order %+.2f; make cost ENV=%s for the lines)",
		d.Before.Monthly(), d.After.Monthly(), d.Monthly(), d.Fixed(), d.PerOrder(), d.After.Env)
}
