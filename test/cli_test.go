package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cliRun is one `cdk synth -c env=dev` through the CLI, started by
// TestMain before the tests so that it runs while the in-process synthesis
// does (the two are the package's longest steps).
type cliRun struct {
	out      string // the CLI's output directory
	combined []byte // its stdout and stderr
	err      error
	done     chan struct{}
}

var cli *cliRun

// startCLISynth starts `cdk synth` through the CLI and cdk.json, as a user
// runs it, on a machine with no AWS credentials at all. Its result is read
// with wait.
func startCLISynth() *cliRun {
	r := &cliRun{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		root, err := filepath.Abs("..")
		if err != nil {
			r.err = err
			return
		}
		cdk := filepath.Join(root, "node_modules", ".bin", "cdk")
		if _, err := os.Stat(cdk); err != nil {
			r.err = fmt.Errorf("the CDK CLI is not installed (run `make install`): %w", err)
			return
		}
		tmp, err := os.MkdirTemp("", "mf-cli-synth-")
		if err != nil {
			r.err = err
			return
		}
		r.out = filepath.Join(tmp, "cdk.out")
		// --no-validation: the CloudFormation validator checks the same
		// templates in the tests' own synthesis (every environment,
		// TestCloudFormationValidationIsClean); here it would cost about
		// 6 s of CPU to check dev a second time (docs/design.md#performance).
		cmd := exec.Command(cdk, "synth", "-c", "env=dev", "--quiet", "--output", r.out, "--no-notices", "--no-validation")
		cmd.Dir = root
		// No credentials from anywhere: no AWS_ variables, config and
		// credentials files that do not exist, no instance metadata. HOME
		// stays, so Go's build and module caches are the user's.
		none := filepath.Join(tmp, "none")
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "CDK_") {
				env = append(env, kv)
			}
		}
		cmd.Env = append(env,
			"AWS_CONFIG_FILE="+none,
			"AWS_SHARED_CREDENTIALS_FILE="+none,
			"AWS_EC2_METADATA_DISABLED=true",
		)
		r.combined, r.err = cmd.CombinedOutput()
	}()
	return r
}

// wait returns when the CLI has finished.
func (r *cliRun) wait() { <-r.done }

// remove deletes the CLI's output.
func (r *cliRun) remove() {
	if r == nil {
		return
	}
	r.wait()
	if r.out != "" {
		_ = os.RemoveAll(filepath.Dir(r.out))
	}
}

// `cdk synth` through the CLI and cdk.json, as a user runs it, on a machine
// with no AWS credentials at all: the app must synthesise and never need a
// context lookup (which would require an account).
func TestCdkCliSynthesisesWithoutCredentials(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	s := synthApp(t)
	cli.wait()
	out, combined := cli.out, cli.combined
	if cli.err != nil {
		t.Fatalf("cdk synth failed: %v\n%s", cli.err, combined)
	}
	for _, banned := range []string{"end-of-life", "untested", "Node.js version", "[WARNING]"} {
		if strings.Contains(string(combined), banned) {
			t.Errorf("output carries a Node version banner or a warning (%q):\n%s", banned, combined)
		}
	}
	// The CLI's templates are the ones the snapshot and assertion tests
	// check: same app code, same cdk.json context.
	// Every stack of dev, by the tests' synthesis.
	var names []string
	for name := range s.templates {
		if strings.HasSuffix(name, "dev") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) < 6 {
		t.Fatalf("the tests' synthesis has %d dev stacks (%v), want the six", len(names), names)
	}
	for _, name := range names {
		raw, err := os.ReadFile(filepath.Join(out, name+".template.json"))
		if err != nil {
			t.Errorf("no template for %s from `cdk synth`: %v", name, err)
			continue
		}
		var fromCLI map[string]any
		if err := json.Unmarshal(raw, &fromCLI); err != nil {
			t.Fatal(err)
		}
		got, _ := normalise(fromCLI)
		want, _ := normalise(s.templates[name])
		if !bytes.Equal(got, want) {
			t.Errorf("%s from `cdk synth` differs from the tests' synthesis:\n%s", name, lineDiff(string(want), string(got)))
		}
	}
	if _, err := os.Stat(filepath.Join(out, "MercadoFresco-Platform-prod.template.json")); err == nil {
		t.Error("-c env=dev also synthesised prod")
	}
	if _, err := os.Stat(filepath.Join(root, "cdk.context.json")); err == nil {
		t.Log("note: cdk.context.json exists; the app should need no lookups")
	}
}
