// Package gobuild compiles the app's Go Lambda main packages into
// `bootstrap` binaries for provided.al2023 on arm64 (CGO_ENABLED=0,
// BuildFlags), for constructs/golambda: reproducibly, so a function's asset
// hash moves only when its machine code does; several functions in one
// `go build` in the background (Start, StartAll); and kept across processes
// in a cache keyed by everything the build reads (docs/design.md#performance).
package gobuild

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// DefaultBuildTimeout bounds the one batched go build of every function
// when Builder.Timeout is zero: 15 minutes, because a cold build of the ten
// functions (empty Go and binary caches) on a 2-core machine that also
// runs the race-detector lane took more than 5 (docs/design.md#performance).
const DefaultBuildTimeout = 15 * time.Minute

// ErrBuild is wrapped by every failure to compile a function.
var ErrBuild = errors.New("gobuild: go build failed")

// BuildFlags returns the flags every function binary is built with. They make
// the binary reproducible (no paths, no VCS stamp, no symbol tables) and drop
// the legacy RPC mode that provided.al2023 does not use. The empty -buildid
// matters: Go's build id hashes the source files, comments included, so
// without it a comment-only edit would change the binary and make `cdk diff`
// report a function whose machine code did not change.
func BuildFlags() []string {
	return []string{"-trimpath", "-buildvcs=false", "-tags", "lambda.norpc", "-ldflags", "-s -w -buildid="}
}

// buildEnv is the environment of every go command the builder runs.
var buildEnv = []string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0", "GOFLAGS="}

// Builder compiles Lambda main packages into `bootstrap` binaries for
// provided.al2023 on arm64.
//
// A Builder remembers what it built, so an app that synthesises the same
// function for several environments compiles it once; Start compiles a set
// of functions in one `go build` in the background while the constructs are
// made. Binaries are also kept across processes in CacheDir, keyed by a hash
// of everything the build reads (docs/design.md#performance). Use one
// Builder per synthesis run (it hashes the sources when it first builds an
// entry); the zero value is ready to use.
type Builder struct {
	// ModuleRoot is the directory holding go.mod. Empty means: found by
	// walking up from the working directory.
	ModuleRoot string
	// GoBinary is the go command. Empty means "go" from PATH.
	GoBinary string
	// Timeout bounds one build. Zero means DefaultBuildTimeout.
	Timeout time.Duration
	// CacheDir holds built binaries across processes. Empty means
	// $MF_GOLAMBDA_CACHE, else mercadofresco-golambda in the user's cache
	// directory; "off" builds every binary afresh.
	CacheDir string

	mu    sync.Mutex
	built map[string]*build // entry -> its (possibly running) build
	dirs  []string          // temporary directories to remove on Close
}

// build is one entry's build; done is closed when dir or err is set.
type build struct {
	done chan struct{}
	dir  string
	err  error
}

// Build compiles entry (a directory of a main package relative to the module
// root, e.g. "lambdas/preparar-pedido") and returns the directory that holds
// the resulting `bootstrap`. A compilation error is returned wrapping
// ErrBuild with the compiler's output.
func (b *Builder) Build(ctx context.Context, entry string) (string, error) {
	root, clean, err := b.entry(entry)
	if err != nil {
		return "", err
	}
	bd, started := b.claim([]string{clean})
	if len(started) == 1 {
		b.run(ctx, root, started, bd)
	}
	r := bd[clean]
	select {
	case <-r.done:
		return r.dir, r.err
	case <-ctx.Done():
		return "", fmt.Errorf("%w for %s: %v", ErrBuild, clean, ctx.Err())
	}
}

// Asset builds entry (see Build) and returns the directory holding its
// bootstrap and nothing else, with the SHA-256 of that binary: the hash is
// computed once per built binary and kept beside it (<dir>.sha256), so a
// cached binary is not read again on every synthesis. A failed build
// returns its error with a directory (removed by Close) holding
// BUILD-FAILED and the error, and the sum "BUILD-FAILED", so a failed
// build's asset is never mistaken for a binary; dir is "" when even that
// cannot be written.
func (b *Builder) Asset(ctx context.Context, entry string) (dir, sum string, err error) {
	if dir, err = b.Build(ctx, entry); err == nil {
		if sum, err = binarySum(dir); err == nil {
			return dir, sum, nil
		}
		err = fmt.Errorf("%w for %s: %v", ErrBuild, entry, err)
	}
	dir, mkErr := os.MkdirTemp("", "mf-golambda-failed-")
	if mkErr != nil {
		return "", "BUILD-FAILED", err
	}
	b.mu.Lock()
	b.dirs = append(b.dirs, dir)
	b.mu.Unlock()
	if os.WriteFile(filepath.Join(dir, "BUILD-FAILED"), []byte(err.Error()), 0o644) != nil {
		return "", "BUILD-FAILED", err
	}
	return dir, "BUILD-FAILED", err
}

// binarySum is the hex SHA-256 of dir/bootstrap, read from dir.sha256 when
// an earlier call wrote it there.
func binarySum(dir string) (string, error) {
	side := dir + ".sha256"
	if b, err := os.ReadFile(side); err == nil && len(b) == 64 {
		return string(b), nil
	}
	bin, err := os.ReadFile(filepath.Join(dir, "bootstrap"))
	if err != nil {
		return "", err
	}
	sum := fmt.Sprintf("%x", sha256.Sum256(bin))
	// Written to a temporary name and renamed, so a reader never sees half a
	// sum; a failure only means computing it again next time.
	if tmp, err := os.CreateTemp(filepath.Dir(dir), ".tmp-sum-"); err == nil {
		_, werr := tmp.WriteString(sum)
		if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), side) != nil {
			os.Remove(tmp.Name())
		}
	}
	return sum, nil
}

// Start compiles entries in the background, in one `go build`, so that a
// later Build of any of them only waits for it. Entries that are invalid or
// already built are left to Build, which reports their problems.
func (b *Builder) Start(entries ...string) {
	var valid []string
	var root string
	for _, e := range entries {
		r, clean, err := b.entry(e)
		if err == nil {
			root, valid = r, append(valid, clean)
		}
	}
	bd, started := b.claim(valid)
	if len(started) > 0 {
		go b.run(context.Background(), root, started, bd)
	}
}

// entry checks entry and returns the module root and the cleaned entry.
func (b *Builder) entry(entry string) (root, clean string, err error) {
	root, err = b.Root()
	if err != nil {
		return "", "", err
	}
	clean = filepath.ToSlash(filepath.Clean(entry))
	if entry == "" || filepath.IsAbs(entry) || strings.HasPrefix(clean, "../") || clean == ".." {
		return "", "", fmt.Errorf("%w: entry %q must be a directory relative to the module root %s", ErrBuild, entry, root)
	}
	if st, err := os.Stat(filepath.Join(root, clean)); err != nil || !st.IsDir() {
		return "", "", fmt.Errorf("%w: entry %q: no such directory under %s", ErrBuild, entry, root)
	}
	return root, clean, nil
}

// claim returns the builds of entries, and the entries whose build the
// caller must now run (those nobody had started).
func (b *Builder) claim(entries []string) (map[string]*build, []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.built == nil {
		b.built = map[string]*build{}
	}
	out := map[string]*build{}
	var started []string
	for _, e := range entries {
		r, ok := b.built[e]
		if !ok {
			r = &build{done: make(chan struct{})}
			b.built[e] = r
			started = append(started, e)
		}
		out[e] = r
	}
	return out, started
}

// run builds entries (all claimed by the caller) and completes their builds:
// binaries found in the cache are used as they are, the others are compiled
// in one go build and then stored in the cache.
func (b *Builder) run(ctx context.Context, root string, entries []string, bd map[string]*build) {
	timeout := cmp.Or(b.Timeout, DefaultBuildTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	finish := func(e, dir string, err error) {
		bd[e].dir, bd[e].err = dir, err
		close(bd[e].done)
	}

	cache := b.cacheDir()
	var keys map[string]string
	if cache != "" {
		keys, _ = sourceKeys(ctx, b.goBin(), root, entries) // no keys: build without the cache
	}
	var missing []string
	for _, e := range entries {
		if k := keys[e]; k != "" {
			dir := filepath.Join(cache, k)
			if _, err := os.Stat(filepath.Join(dir, "bootstrap")); err == nil {
				now := time.Now()
				_ = os.Chtimes(dir, now, now) // recently used: not pruned
				finish(e, dir, nil)
				continue
			}
		}
		missing = append(missing, e)
	}
	if len(missing) == 0 {
		return
	}
	tmp, err := os.MkdirTemp("", "mf-golambda-")
	if err != nil {
		for _, e := range missing {
			finish(e, "", fmt.Errorf("%w: %v", ErrBuild, err))
		}
		return
	}
	b.mu.Lock()
	b.dirs = append(b.dirs, tmp)
	b.mu.Unlock()

	out := b.compile(ctx, root, tmp, missing)
	for _, e := range missing {
		dir, err := out[e].dir, out[e].err
		if err == nil && keys[e] != "" {
			dir = Store(cache, keys[e], dir)
		}
		finish(e, dir, err)
	}
	if cache != "" {
		prune(cache, 14*24*time.Hour)
	}
}

// compile builds entries under tmp, each into a directory of its own holding
// bootstrap. Entries whose binaries would share a name in one `go build -o
// dir/` invocation, and every entry of a failed batch (so that each error
// names its own entry), are built one by one.
func (b *Builder) compile(ctx context.Context, root, tmp string, entries []string) map[string]build {
	out := map[string]build{}
	batch, single := []string{}, []string{}
	seen := map[string]bool{}
	for _, e := range entries {
		if base := path.Base(e); seen[base] {
			single = append(single, e)
		} else {
			seen[base] = true
			batch = append(batch, e)
		}
	}
	if len(batch) > 1 {
		bin := filepath.Join(tmp, "batch")
		if _, err := b.goBuild(ctx, root, bin+string(filepath.Separator), batch); err == nil {
			for i, e := range batch {
				dir := filepath.Join(tmp, fmt.Sprint(i))
				err := os.MkdirAll(dir, 0o755)
				if err == nil {
					err = os.Rename(filepath.Join(bin, path.Base(e)), filepath.Join(dir, "bootstrap"))
				}
				if err != nil {
					err = fmt.Errorf("%w for %s: %v", ErrBuild, e, err)
				}
				out[e] = build{dir: dir, err: err}
			}
			batch = nil
		}
	}
	for i, e := range append(batch, single...) {
		dir := filepath.Join(tmp, fmt.Sprint("one-", i))
		if msg, err := b.goBuild(ctx, root, filepath.Join(dir, "bootstrap"), []string{e}); err != nil {
			out[e] = build{err: fmt.Errorf("%w for %s: %v\n%s", ErrBuild, e, err, msg)}
		} else {
			out[e] = build{dir: dir}
		}
	}
	return out
}

// goBuild runs go build -o output with BuildFlags on entries.
func (b *Builder) goBuild(ctx context.Context, root, output string, entries []string) (string, error) {
	args := append([]string{"build", "-o", output}, BuildFlags()...)
	for _, e := range entries {
		args = append(args, "./"+e)
	}
	cmd := exec.CommandContext(ctx, b.goBin(), args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), buildEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

// Close removes the build directories (not the cache). Call it after synthesis.
func (b *Builder) Close() error {
	b.mu.Lock()
	running := make([]*build, 0, len(b.built))
	for _, r := range b.built {
		running = append(running, r)
	}
	b.mu.Unlock()
	for _, r := range running {
		<-r.done // a background build may still be writing into a directory
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for _, d := range b.dirs {
		errs = append(errs, os.RemoveAll(d))
	}
	b.dirs, b.built = nil, nil
	return errors.Join(errs...)
}

func (b *Builder) goBin() string {
	if b.GoBinary == "" {
		return "go"
	}
	return b.GoBinary
}

func (b *Builder) cacheDir() string {
	dir := cmp.Or(b.CacheDir, os.Getenv("MF_GOLAMBDA_CACHE"))
	if dir == "off" {
		return ""
	}
	if dir == "" {
		user, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(user, "mercadofresco-golambda")
	}
	if os.MkdirAll(dir, 0o755) != nil {
		return ""
	}
	return dir
}

// Root is the module root: ModuleRoot, else the directory holding go.mod
// above the working directory.
func (b *Builder) Root() (string, error) {
	if b.ModuleRoot != "" {
		return filepath.Abs(b.ModuleRoot)
	}
	dir, err := FindUp("go.mod")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBuild, err)
	}
	return dir, nil
}

// FindUp returns the nearest directory at or above the working directory
// that holds every one of rels (slash-separated paths relative to it).
func FindUp(rels ...string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		found := true
		for _, rel := range rels {
			if _, err := os.Stat(filepath.Join(dir, rel)); err != nil {
				found = false
				break
			}
		}
		if found {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no directory above %s holds %s", wd, strings.Join(rels, " and "))
		}
	}
}

// StartAll starts (see Start) every main package in the directories
// directly under dir ("lambdas"), relative to the module root: the app calls
// it before making its constructs, so the functions compile meanwhile.
func (b *Builder) StartAll(dir string) {
	root, err := b.Root()
	if err != nil {
		return // Build reports it
	}
	subdirs, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		return
	}
	var mains []string
	for _, d := range subdirs {
		if d.IsDir() && isMain(filepath.Join(root, dir, d.Name())) {
			mains = append(mains, path.Join(filepath.ToSlash(dir), d.Name()))
		}
	}
	b.Start(mains...)
}

// isMain reports whether dir's first non-test Go file is in package main.
func isMain(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly)
		return err == nil && file.Name.Name == "main"
	}
	return false
}
