package gobuild_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/constructs/golambda/gobuild"
)

// goWrapper writes a go command that logs its arguments to the returned log
// file and runs the real go, or refuses `go build` when refuseBuild is set.
func goWrapper(t *testing.T, refuseBuild bool) (bin, log string) {
	t.Helper()
	real, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH (the build cache test wraps it): %v", err)
	}
	dir := t.TempDir()
	bin, log = filepath.Join(dir, "go"), filepath.Join(dir, "log")
	refuse := ""
	if refuseBuild {
		refuse = `if [ "$1" = build ]; then echo "build refused by the test" >&2; exit 1; fi` + "\n"
	}
	script := fmt.Sprintf("#!/bin/sh\necho \"$@\" >> %q\n%sexec %q \"$@\"\n", log, refuse, real)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, log
}

// fixture copies testdata/fixture (a module with two tiny functions) into a
// temporary directory the test may edit.
func fixture(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS("testdata/fixture")); err != nil {
		t.Fatal(err)
	}
	return dst
}

func buildLines(t *testing.T, log string) []string {
	t.Helper()
	raw, _ := os.ReadFile(log)
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "build ") {
			out = append(out, l)
		}
	}
	return out
}

// A second Builder (another process) takes the binary from the cache without
// compiling, and a code change misses the cache.
func TestCacheServesAnotherBuilderUntilTheSourceChanges(t *testing.T) {
	ctx := context.Background()
	root, cache := fixture(t), t.TempDir()
	first := &gobuild.Builder{ModuleRoot: root, CacheDir: cache}
	defer first.Close()
	dir, err := first.Build(ctx, "fn/alpha")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(dir, "bootstrap"))

	refusing, log := goWrapper(t, true)
	second := &gobuild.Builder{ModuleRoot: root, CacheDir: cache, GoBinary: refusing}
	defer second.Close()
	dir, err = second.Build(ctx, "fn/alpha")
	if err != nil {
		t.Fatalf("the cached binary was not used: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "bootstrap")); !bytes.Equal(got, want) || len(want) == 0 {
		t.Errorf("the cached bootstrap differs from the built one (%d vs %d bytes)", len(got), len(want))
	}
	if b := buildLines(t, log); len(b) != 0 {
		t.Errorf("a cache hit ran go build: %q", b)
	}

	main := filepath.Join(root, "fn/alpha/main.go")
	src, _ := os.ReadFile(main)
	os.WriteFile(main, []byte(strings.Replace(string(src), "alpha v1", "alpha v2", 1)), 0o644)
	third := &gobuild.Builder{ModuleRoot: root, CacheDir: cache, GoBinary: refusing}
	defer third.Close()
	if _, err := third.Build(ctx, "fn/alpha"); err == nil || !strings.Contains(err.Error(), "build refused by the test") {
		t.Errorf("a changed source was answered from the cache: %v", err)
	}
}

// StartAll compiles every main package under a directory in one go build,
// and Build then waits for it instead of compiling again.
func TestStartAllBuildsEveryMainInOneGoBuild(t *testing.T) {
	root := fixture(t)
	bin, log := goWrapper(t, false)
	b := &gobuild.Builder{ModuleRoot: root, CacheDir: "off", GoBinary: bin}
	defer b.Close()
	b.StartAll("fn")
	for _, e := range []string{"fn/alpha", "fn/beta", "fn/alpha"} {
		dir, err := b.Build(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "bootstrap")); err != nil {
			t.Fatal(err)
		}
	}
	lines := buildLines(t, log)
	if len(lines) != 1 || !strings.Contains(lines[0], "./fn/alpha") || !strings.Contains(lines[0], "./fn/beta") {
		t.Errorf("want one go build of both functions, got %q", lines)
	}
}

// A failing batch is retried entry by entry, so each error names its own
// function and the others still build.
func TestFailedBatchNamesTheBrokenEntry(t *testing.T) {
	root := fixture(t)
	os.WriteFile(filepath.Join(root, "fn/alpha/main.go"), []byte("package main\n\nfunc main() { undefinedThing() }\n"), 0o644)
	b := &gobuild.Builder{ModuleRoot: root, CacheDir: t.TempDir()}
	defer b.Close()
	b.Start("fn/alpha", "fn/beta")
	if _, err := b.Build(context.Background(), "fn/alpha"); err == nil || !strings.Contains(err.Error(), "go build failed for fn/alpha") || !strings.Contains(err.Error(), "undefinedThing") {
		t.Errorf("want alpha's compiler error, got %v", err)
	}
	if _, err := b.Build(context.Background(), "fn/beta"); err != nil {
		t.Errorf("beta should build: %v", err)
	}
}

// Asset answers the binary's SHA-256, computed once and kept beside the
// cached binary: a second Builder reads the sum instead of the binary.
func TestAssetSumIsKeptBesideTheCachedBinary(t *testing.T) {
	ctx := context.Background()
	root, cache := fixture(t), t.TempDir()
	first := &gobuild.Builder{ModuleRoot: root, CacheDir: cache}
	defer first.Close()
	dir, sum, err := first.Asset(ctx, "fn/alpha")
	if err != nil {
		t.Fatal(err)
	}
	bin, _ := os.ReadFile(filepath.Join(dir, "bootstrap"))
	if want := fmt.Sprintf("%x", sha256.Sum256(bin)); sum != want || len(bin) == 0 {
		t.Fatalf("Asset sum %s, want the binary's SHA-256 %s", sum, want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 || entries[0].Name() != "bootstrap" {
		t.Fatalf("the asset directory must hold bootstrap only, holds %v", entries)
	}
	kept, err := os.ReadFile(dir + ".sha256")
	if err != nil || string(kept) != sum {
		t.Fatalf("the sum is not kept beside the binary: %q, %v", kept, err)
	}

	// The second Builder answers what the sum file says: it did not read the binary.
	stand := strings.Repeat("a", 64)
	if err := os.WriteFile(dir+".sha256", []byte(stand), 0o644); err != nil {
		t.Fatal(err)
	}
	second := &gobuild.Builder{ModuleRoot: root, CacheDir: cache}
	defer second.Close()
	if _, got, err := second.Asset(ctx, "fn/alpha"); err != nil || got != stand {
		t.Errorf("second Asset = %q, %v; want the kept sum", got, err)
	}
}
