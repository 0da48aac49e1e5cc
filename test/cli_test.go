package test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `cdk synth` through the CLI and cdk.json, as a user runs it, on a machine
// with no AWS credentials at all: the app must synthesise and never need a
// context lookup (which would require an account).
func TestCdkCliSynthesisesWithoutCredentials(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cdk := filepath.Join(root, "node_modules", ".bin", "cdk")
	if _, err := os.Stat(cdk); err != nil {
		t.Fatalf("the CDK CLI is not installed (run `make install`): %v", err)
	}
	out := t.TempDir()
	cmd := exec.Command(cdk, "synth", "-c", "env=dev", "--quiet", "--output", out, "--no-notices")
	cmd.Dir = root
	// No credentials from anywhere: no AWS_ variables, config and
	// credentials files that do not exist, no instance metadata. HOME stays,
	// so Go's build and module caches are the user's.
	none := filepath.Join(t.TempDir(), "none")
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
	combined, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cdk synth failed: %v\n%s", err, combined)
	}
	for _, banned := range []string{"end-of-life", "untested", "Node.js version"} {
		if strings.Contains(string(combined), banned) {
			t.Errorf("output carries a Node version banner (%q):\n%s", banned, combined)
		}
	}
	// The CLI's templates are the ones the snapshot and assertion tests
	// check: same app code, same cdk.json context.
	s := synthApp(t)
	for _, part := range []string{"Platform", "Data", "Messaging", "Outbox"} {
		name := "MercadoFresco-" + part + "-dev"
		raw, err := os.ReadFile(filepath.Join(out, name+".template.json"))
		if err != nil {
			t.Errorf("no template for %s: %v", part, err)
			continue
		}
		var cli map[string]any
		if err := json.Unmarshal(raw, &cli); err != nil {
			t.Fatal(err)
		}
		got, _ := normalise(cli)
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
