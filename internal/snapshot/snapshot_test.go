package snapshot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/synthesized"
)

const (
	hashA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hashB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	hashC = "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

func template() map[string]any {
	fn := func(entry, hash string) map[string]any {
		return map[string]any{
			"Type":       "AWS::Lambda::Function",
			"Properties": map[string]any{"Code": map[string]any{"S3Key": hash + ".zip"}},
			"Metadata":   map[string]any{synthesized.MetadataEntry: entry, "aws:asset:path": "asset." + hash},
		}
	}
	return map[string]any{"Resources": map[string]any{
		"Preparar": fn("lambdas/preparar-pedido", hashA),
		"Cobro":    fn("lambdas/cobro", hashB),
		"Helper": map[string]any{"Type": "AWS::Lambda::Function",
			"Properties": map[string]any{"Code": map[string]any{"S3Key": hashC + ".zip"}}},
	}}
}

func TestNormaliseLabelsEachFunctionsAsset(t *testing.T) {
	raw, err := Normalise(template())
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	for _, want := range []string{`"<asset:lambdas/preparar-pedido>.zip"`, `"asset.<asset:lambdas/cobro>"`, `"<asset-hash>.zip"`} {
		if !strings.Contains(s, want) {
			t.Errorf("normalised template lacks %s:\n%s", want, s)
		}
	}
	if strings.Contains(s, hashA) || strings.Contains(s, hashC) {
		t.Error("a hash survived")
	}
}

func TestBinariesAndManifest(t *testing.T) {
	dir := t.TempDir()
	for h, content := range map[string]string{hashA: "preparar v1", hashB: "cobro v1"} {
		if err := os.MkdirAll(filepath.Join(dir, "asset."+h), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "asset."+h, "bootstrap"), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bins, err := Binaries(dir, map[string]map[string]any{"S-dev": template(), "S-prod": template()})
	if err != nil {
		t.Fatal(err)
	}
	m := string(Manifest(bins))
	lines := strings.Split(strings.TrimSpace(m), "\n")
	if len(lines) != 4 || !strings.HasSuffix(lines[2], "  lambdas/cobro") || !strings.HasSuffix(lines[3], "  lambdas/preparar-pedido") {
		t.Fatalf("manifest:\n%s", m)
	}
	// The same entry with two different binaries is an error.
	other := template()
	other["Resources"].(map[string]any)["Cobro"].(map[string]any)["Metadata"].(map[string]any)[synthesized.MetadataEntry] = "lambdas/preparar-pedido"
	if _, err := Binaries(dir, map[string]map[string]any{"S": other}); err == nil {
		t.Fatal("two binaries for one entry were accepted")
	}
}
