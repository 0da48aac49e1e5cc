package snapshot

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Load reads the templates of env ("<stack>-<env>.template.json") in dir,
// by stack name; it fails when there is none.
func Load(dir, env string) (map[string]map[string]any, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*-"+env+".template.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no template of environment %q in %s", env, dir)
	}
	out := map[string]map[string]any{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var tpl map[string]any
		if err := json.Unmarshal(raw, &tpl); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".template.json")] = tpl
	}
	return out, nil
}
