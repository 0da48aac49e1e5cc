// Command mf-review shows what a change does to the infrastructure of one
// environment, the way `cdk diff` shows it (IAM statements and security-group
// rules as tables), without AWS credentials: the committed snapshots in
// test/testdata/snapshots stand in for the deployed stacks.
//
//	go run ./cmd/mf-review -e prod        (or: make review ENV=prod)
//
// It synthesises the environment into a temporary directory, normalises the
// templates as the snapshot tests do (asset hashes labelled by function
// entry, internal/snapshot), runs `cdk diff --app <dir> --exclusively <stack>
// --template <snapshot>` for every stack, and then lists the functions whose
// code changed (the binaries manifest, which cdk diff cannot see once hashes
// are masked). With -fail it exits 1 when anything differs (CI gate).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mercadofresco/integration/internal/snapshot"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mf-review:", err)
		os.Exit(2)
	}
}

func run() error {
	env := flag.String("e", "dev", "environment to review (dev, staging, prod)")
	snapDir := flag.String("snapshots", filepath.Join("test", "testdata", "snapshots"), "directory of the committed snapshots")
	cdkBin := flag.String("cdk", "cdk", "CDK CLI to run")
	fail := flag.Bool("fail", false, "exit 1 when any stack or function differs")
	flag.Parse()

	out, err := os.MkdirTemp("", "mf-review-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)
	synth := exec.Command(*cdkBin, "synth", "--quiet", "-c", "env="+*env, "-o", out)
	synth.Stdout, synth.Stderr = os.Stderr, os.Stderr
	if err := synth.Run(); err != nil {
		return fmt.Errorf("cdk synth -c env=%s: %w", *env, err)
	}
	files, err := filepath.Glob(filepath.Join(out, "*-"+*env+".template.json"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no stack of environment %q was synthesised", *env)
	}
	slices.Sort(files)
	templates := map[string]map[string]any{}
	differs := false
	empty := filepath.Join(out, "empty.template.json.base")
	if err := os.WriteFile(empty, []byte("{}"), 0o644); err != nil {
		return err
	}
	for _, f := range files {
		stack := strings.TrimSuffix(filepath.Base(f), ".template.json")
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var tpl map[string]any
		if err := json.Unmarshal(raw, &tpl); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		templates[stack] = tpl
		norm, err := snapshot.Normalise(tpl)
		if err != nil {
			return err
		}
		if err := os.WriteFile(f, norm, 0o644); err != nil {
			return err
		}
		base := filepath.Join(*snapDir, stack+".template.json")
		if _, err := os.Stat(base); errors.Is(err, os.ErrNotExist) {
			fmt.Printf("\n%s is a new stack (no committed snapshot): every resource is an addition.\n", stack)
			base = empty
		}
		args := []string{"diff", "--app", out, "--exclusively", stack, "--template", base}
		if *fail {
			args = append(args, "--fail")
		}
		diff := exec.Command(*cdkBin, args...)
		diff.Stdout, diff.Stderr = os.Stdout, os.Stdout
		if err := diff.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				return fmt.Errorf("cdk diff %s: %w", stack, err)
			}
			differs = true
		}
	}

	bins, err := snapshot.Binaries(out, templates)
	if err != nil {
		return err
	}
	committed, err := os.ReadFile(filepath.Join(*snapDir, snapshot.ManifestFile))
	if err != nil {
		return fmt.Errorf("committed binaries manifest: %w", err)
	}
	changed := codeChanges(committed, bins)
	fmt.Println("\nFunction code (" + snapshot.ManifestFile + "):")
	if len(changed) == 0 {
		fmt.Println("  no function's binary changed")
	}
	for _, c := range changed {
		fmt.Println("  " + c)
		differs = true
	}
	if err := contractReview(os.Stdout, out, templates); err != nil {
		return err
	}
	if *fail && differs {
		os.Exit(1)
	}
	return nil
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
