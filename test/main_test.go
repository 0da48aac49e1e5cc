// Package test holds the app-level tests: snapshots of every stack of every
// environment, cdk-nag on the whole app, and assertions on what the stacks
// promise (names, encryption, alarms, bundled binaries).
package test

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/internal/cdktest"
)

// TestMain starts the CLI's synthesis (it runs beside the tests'), and
// removes both assemblies (temporary directories per run, so two runs at
// once never share one) when the tests end. It keeps what the package
// prints to stderr, where jsii copies its Node's console: once jsii has
// stopped (every line it printed is then copied), a warning there (a CDK
// deprecation, from any environment's synthesis) fails the run, since a
// clean synthesis prints none.
func TestMain(m *testing.M) {
	cli = startCLISynth()
	printed := teeStderr()
	cdktest.Main(m, func() {
		if synthRes != nil {
			_ = os.RemoveAll(synthRes.outdir)
		}
		cli.remove()
	}, func() {
		jsii.Close()
		var warnings []string
		for _, line := range strings.Split(printed(), "\n") {
			if strings.Contains(line, "[WARNING]") {
				warnings = append(warnings, line)
			}
		}
		if len(warnings) > 0 {
			fmt.Printf("FAIL: the synthesis printed %d warning(s) (see stderr above); a clean synthesis prints none:\n%s\n", len(warnings), strings.Join(warnings, "\n"))
			os.Exit(1)
		}
	})
}

// teeStderr copies what is written to os.Stderr from now on to the real
// stderr and keeps it; the function it returns stops and returns it.
// (jsii's goroutine reads os.Stderr for each line its Node prints;
// nothing is printed before the first synthesis.)
func teeStderr() func() string {
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	orig, kept, done := os.Stderr, new(strings.Builder), make(chan struct{})
	os.Stderr = w
	go func() {
		_, _ = io.Copy(io.MultiWriter(orig, kept), r)
		close(done)
	}()
	return func() string {
		os.Stderr = orig
		w.Close()
		<-done
		return kept.String()
	}
}
