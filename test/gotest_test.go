package test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGotestRunsKeepsAndFails runs scripts/gotest.sh (make test's lanes)
// over a module of its own: two packages whose binaries share a name, one
// without tests. It passes both, in their own directories; a second run
// links nothing again (go test -x prints no linker command); a failing
// test makes it print the test's output and the package's FAIL line and
// exit 1.
func TestGotestRunsKeepsAndFails(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs("../scripts/gotest.sh")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/fx\n\ngo 1.22\n",
		// Each test reads a file of its own directory: it runs there.
		"a/x/x_test.go": "package x\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestHere(t *testing.T) {\n\tif _, err := os.Stat(\"here-a\"); err != nil {\n\t\tt.Fatal(err)\n\t}\n}\n",
		"a/x/here-a":    "",
		"b/x/x_test.go": "package x\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestHere(t *testing.T) {\n\tif _, err := os.Stat(\"here-b\"); err != nil {\n\t\tt.Fatal(err)\n\t}\n\tif os.Getenv(\"FX_FAIL\") != \"\" {\n\t\tt.Fatal(\"failing as asked\")\n\t}\n}\n",
		"b/x/here-b":    "",
		"c/c.go":        "package c\n",
	}
	for name, body := range files {
		p := filepath.Join(mod, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bins := t.TempDir()
	run := func(fail bool) (string, error) {
		// -x: go prints the commands it runs, the linker's among them.
		cmd := exec.Command("bash", script, "fx", "-x", "--", "./...", "--", "-test.timeout=2m")
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "TESTBIN_DIR="+bins, "GOWORK=off", "GOFLAGS=")
		if fail {
			cmd.Env = append(cmd.Env, "FX_FAIL=1")
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	const link = "/link -o "
	out, err := run(false)
	if err != nil || !strings.Contains(out, "ok  \texample.com/fx/a/x\t") || !strings.Contains(out, "ok  \texample.com/fx/b/x\t") || !strings.Contains(out, link) {
		t.Fatalf("passing run: %v (want both packages ok, linked)\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(bins, "fx", "1", "x.test")); err != nil {
		t.Fatalf("the second x.test is not in a bucket of its own: %v\n%s", err, out)
	}
	if out, err = run(false); err != nil || strings.Contains(out, link) {
		t.Fatalf("second run: %v (want nothing linked again)\n%s", err, out)
	}

	out, err = run(true)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("failing run: %v, want exit 1\n%s", err, out)
	}
	for _, want := range []string{"failing as asked", "FAIL\texample.com/fx/b/x\t", "ok  \texample.com/fx/a/x\t", "FAIL (lane fx)"} {
		if !strings.Contains(out, want) {
			t.Errorf("failing run's output lacks %q:\n%s", want, out)
		}
	}
}
