// Package depcheck lets a test assert that a package depends on the
// standard library only, for the small "api" packages (metric names, error
// names, event shapes) that the CDK app imports without linking any Lambda
// dependency.
package depcheck

import (
	"go/build"
	"strings"
	"testing"
)

// StdlibOnly fails t if the package at importPath imports, directly, any
// package outside the standard library (direct is enough: a standard
// library package never imports a non-standard one). Test files are not
// considered.
func StdlibOnly(t testing.TB, importPath string) {
	t.Helper()
	pkg, err := build.Default.Import(importPath, ".", 0)
	if err != nil {
		t.Fatalf("depcheck: %s: %v", importPath, err)
	}
	for _, imp := range pkg.Imports {
		first, _, _ := strings.Cut(imp, "/")
		if strings.Contains(first, ".") {
			t.Errorf("%s imports %s: it must depend on the standard library only", importPath, imp)
		}
	}
}
