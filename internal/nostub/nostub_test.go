package nostub_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mercadofresco/integration/internal/nostub"
)

// root is the module root (this package is internal/nostub).
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The scanner finds what it is for: a stub type behind an interface, and a
// test double linked by import; and nothing in a clean main.
func TestScanFindsStandIns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const base = "internal/nostub/testdata/"
	got, err := nostub.Scan(ctx, root(t), []string{base + "conmaqueta/cmd", base + "confalso/cmd", base + "limpio/cmd"})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range got {
		lines = append(lines, f.String())
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{
		base + "conmaqueta/cmd reaches " + base + "conmaqueta/almacen/almacen.go:9: type stubPreparer is named as a test double",
		base + "conmaqueta/cmd reaches " + base + "conmaqueta/almacen/almacen.go:17: function Reservar is documented as a stub",
		base + "confalso/cmd reaches github.com/mercadofresco/integration/" + base + `confalso/fakealmacen: package path element "fakealmacen" names a test double`,
		base + "confalso/cmd reaches github.com/mercadofresco/integration/" + base + `confalso/localaws: package path element "localaws" names a test double`,
		// A stand-in need not say "stub": one that only logs, one that
		// does nothing, one left for later.
		base + "conmaqueta/cmd reaches " + base + "conmaqueta/almacen/simulado.go:6: type preparadorSimulado is named as a test double",
		base + "conmaqueta/cmd reaches " + base + "conmaqueta/almacen/simulado.go:11: type noopSender is named as a test double",
		base + "conmaqueta/cmd reaches " + base + "conmaqueta/almacen/simulado.go:16: function Enviar is documented as a stub",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("missing finding %q in:\n%s", want, all)
		}
	}
	for _, f := range got {
		if strings.HasPrefix(f.Main, base+"limpio") {
			t.Errorf("false positive in the clean main: %s", f)
		}
	}
}
