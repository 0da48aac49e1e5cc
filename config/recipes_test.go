package config

import (
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/config/catalog"
)

// TestRecipeEnvironment: an environment is in catalog.Environments, in
// environments, in consumers, and has a snapshot of every stack; a step of
// docs/CONVENTIONS.md#recipe-add-an-environment left out fails here.
func TestRecipeEnvironment(t *testing.T) {
	const recipe = "docs/CONVENTIONS.md#recipe-add-an-environment"
	names := func(m map[string]bool) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	all := map[string]bool{}
	for _, e := range catalog.Environments {
		all[e] = true
	}
	for e := range environments {
		all[e] = true
	}
	for e := range consumers {
		all[e] = true
	}
	stacksOf := func(env string) []string {
		files, _ := filepath.Glob(filepath.Join("..", "test", "testdata", "snapshots", "*-"+env+".template.json"))
		var out []string
		for _, f := range files {
			out = append(out, strings.TrimSuffix(strings.TrimSuffix(filepath.Base(f), ".template.json"), "-"+env))
		}
		return out
	}
	want := stacksOf(catalog.Production)
	if len(want) == 0 {
		t.Fatalf("no snapshot of %s", catalog.Production)
	}
	for _, env := range names(all) {
		if !slices.Contains(catalog.Environments, env) {
			t.Errorf("environment %q is not in config/catalog's Environments (step 1 of %s)", env, recipe)
		}
		if _, ok := environments[env]; !ok {
			t.Errorf("environment %q has no Environment in config/config.go (step 2 of %s)", env, recipe)
		}
		if _, ok := consumers[env]; !ok {
			t.Errorf("environment %q has no consumers' dependencies in config/consumers.go (step 3 of %s)", env, recipe)
		}
		if got := stacksOf(env); !slices.Equal(got, want) {
			t.Errorf("environment %q has snapshots of %v, want %v: run make snapshots (step 4 of %s)", env, got, want, recipe)
		}
	}
}
