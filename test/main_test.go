// Package test holds the app-level tests: snapshots of every stack of every
// environment, cdk-nag on the whole app, and assertions on what the stacks
// promise (names, encryption, alarms, bundled binaries).
package test

import (
	"os"
	"testing"

	"github.com/mercadofresco/integration/internal/cdktest"
)

// TestMain starts the CLI's synthesis (it runs beside the tests'), and
// removes both assemblies (temporary directories per run, so two runs at
// once never share one) when the tests end.
func TestMain(m *testing.M) {
	cli = startCLISynth()
	cdktest.Main(m, func() {
		if synthRes != nil {
			_ = os.RemoveAll(synthRes.outdir)
		}
		cli.remove()
	})
}
