package main

import (
	"io"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/internal/cdktest"
)

// TestMain closes the jsii kernel at the end: the CDK packages this command
// imports start it when the binary starts.
func TestMain(m *testing.M) { cdktest.Main(m) }

// Every subcommand answers -h and --help with its usage and flags (exit
// 0), a bad flag with exit 2; mf alone lists the subcommands.
func TestHelp(t *testing.T) {
	for _, c := range commands {
		for _, h := range []string{"-h", "--help"} {
			var out, errs strings.Builder
			args := []string{c.name, h}
			if c.name == "schemas" {
				args = []string{c.name, "check", h}
			}
			if code := run(args, &out, &errs); code != 0 || !strings.Contains(errs.String(), "usage: mf "+c.name) || !strings.Contains(errs.String(), "  -") {
				t.Errorf("mf %s = %d, want 0 and its usage and flags:\n%s", strings.Join(args[1:], " "), code, errs.String())
			}
		}
		if code := run([]string{c.name, "-no-such-flag"}, io.Discard, io.Discard); code != 2 {
			t.Errorf("mf %s -no-such-flag = %d, want 2", c.name, code)
		}
	}
	var out strings.Builder
	if code := run([]string{"help"}, &out, io.Discard); code != 0 || !strings.Contains(out.String(), "attempts") || !strings.Contains(out.String(), "migrate") {
		t.Errorf("mf help = %d:\n%s", code, out.String())
	}
	if code := run(nil, io.Discard, io.Discard); code != 2 {
		t.Errorf("mf = %d, want 2", code)
	}
}
