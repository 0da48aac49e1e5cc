package lambdaapi_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The CDK app imports this package: it must link nothing but the standard
// library (a Lambda dependency here would be linked into the synthesis).
func TestStandardLibraryOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != "github.com/mercadofresco/integration/lambdas/lambdaapi" {
			t.Errorf("lambdaapi links %s: only the standard library is allowed", dep)
		}
	}
}
