package reachability_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/synthesized"
)

const snapshots = "../../test/testdata/snapshots"

// templates reads the committed templates of env as parsed JSON, so a case
// can break them.
func templates(t *testing.T, env string) map[string]map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(snapshots, "*-"+env+".template.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no committed templates of %s: %v", env, err)
	}
	out := map[string]map[string]any{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tpl map[string]any
		if err := json.Unmarshal(raw, &tpl); err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".template.json")] = tpl
	}
	return out
}

func load(t *testing.T, env string, tpls map[string]map[string]any) *synthesized.App {
	t.Helper()
	e, err := config.Lookup(env)
	if err != nil {
		t.Fatal(err)
	}
	app := synthesized.New(env, e.Account, e.Region)
	for name, tpl := range tpls {
		raw, _ := json.Marshal(tpl)
		if err := app.Add(name, raw); err != nil {
			t.Fatal(err)
		}
	}
	return app
}
