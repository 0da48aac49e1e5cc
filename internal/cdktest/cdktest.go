// Package cdktest holds what every CDK test package of the project needs:
// the project's pinned Node first on PATH for the tools tests start (the CDK
// CLI, dynalite), a check that jsii itself runs on it, and jsii.Close once at
// the end.
package cdktest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/aws/jsii-runtime-go"
)

// Main runs the package's tests, then closes the jsii kernel. Use it as
// `func TestMain(m *testing.M) { cdktest.Main(m) }`.
//
// jsii starts its `node` while the test binary initialises its packages,
// before TestMain runs, so PATH must already name the pinned Node 22 when
// `go test` starts: `make test` does that. Run directly with another Node
// first on PATH, Main says so on stderr (the tests still run).
func Main(m *testing.M) {
	if bin, ok := nodeBin(); ok {
		if found, err := exec.LookPath("node"); err == nil && filepath.Dir(found) != bin {
			fmt.Fprintf(os.Stderr, "cdktest: jsii runs on %s, not the project's pinned Node in %s; run tests with `make test` or PATH=%s:$PATH\n", found, bin, bin)
		}
		os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

// nodeBin finds node_modules/.bin in the nearest directory above the working
// directory that has one.
func nodeBin() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		bin := filepath.Join(dir, "node_modules", ".bin")
		if _, err := os.Stat(filepath.Join(bin, "node")); err == nil {
			return bin, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
