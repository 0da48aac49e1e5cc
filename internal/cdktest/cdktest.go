// Package cdktest holds what every CDK test package of the project needs:
// Node 22 from the project's node_modules on PATH before jsii starts, and
// jsii.Close once at the end.
package cdktest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/jsii-runtime-go"
)

// Main runs the package's tests with the project's pinned Node first on
// PATH (jsii starts `node` from PATH on first use), then closes the jsii
// kernel. Use it as `func TestMain(m *testing.M) { cdktest.Main(m) }`.
func Main(m *testing.M) {
	if bin, ok := nodeBin(); ok {
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
