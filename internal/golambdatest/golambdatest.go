// Package golambdatest gives construct tests a Lambda builder that cleans
// up after itself (a test package of its own: internal/cdktest is imported
// by packages that constructs/golambda imports).
package golambdatest

import (
	"testing"

	"github.com/mercadofresco/integration/constructs/golambda/gobuild"
)

// Builder returns a builder for the module at moduleRoot ("" for the
// project's own) whose build directories are removed when t ends.
func Builder(t testing.TB, moduleRoot string) *gobuild.Builder {
	b := &gobuild.Builder{ModuleRoot: moduleRoot}
	t.Cleanup(func() { _ = b.Close() })
	return b
}
