package golambda

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ErrBuild is wrapped by every failure to compile a function.
var ErrBuild = errors.New("golambda: go build failed")

// BuildFlags returns the flags every function binary is built with. They make
// the binary reproducible (no paths, no VCS stamp, no symbol tables) and drop
// the legacy RPC mode that provided.al2023 does not use. The empty -buildid
// matters: Go's build id hashes the source files, comments included, so
// without it a comment-only edit would change the binary and make `cdk diff`
// report a function whose machine code did not change.
func BuildFlags() []string {
	return []string{"-trimpath", "-buildvcs=false", "-tags", "lambda.norpc", "-ldflags", "-s -w -buildid="}
}

// Builder compiles Lambda main packages into `bootstrap` binaries for
// provided.al2023 on arm64.
//
// A Builder remembers what it built, so an app that synthesises the same
// function for several environments compiles it once. Use one Builder per
// synthesis run (a long-lived Builder would not notice source changes); the
// zero value is ready to use.
type Builder struct {
	// ModuleRoot is the directory holding go.mod. Empty means: found by
	// walking up from the working directory.
	ModuleRoot string
	// GoBinary is the go command. Empty means "go" from PATH.
	GoBinary string
	// Timeout bounds one build. Zero means 5 minutes.
	Timeout time.Duration

	mu    sync.Mutex
	built map[string]string // entry -> directory holding bootstrap
	dirs  []string
}

// Build compiles entry (a directory of a main package relative to the module
// root, e.g. "lambdas/preparar-pedido") and returns the directory that holds
// the resulting `bootstrap`. A compilation error is returned wrapping
// ErrBuild with the compiler's output.
func (b *Builder) Build(ctx context.Context, entry string) (string, error) {
	root, err := b.root()
	if err != nil {
		return "", err
	}
	clean := filepath.ToSlash(filepath.Clean(entry))
	if entry == "" || filepath.IsAbs(entry) || strings.HasPrefix(clean, "../") || clean == ".." {
		return "", fmt.Errorf("%w: entry %q must be a directory relative to the module root %s", ErrBuild, entry, root)
	}
	if st, err := os.Stat(filepath.Join(root, clean)); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w: entry %q: no such directory under %s", ErrBuild, entry, root)
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if dir, ok := b.built[clean]; ok {
		return dir, nil
	}
	dir, err := os.MkdirTemp("", "mf-golambda-")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrBuild, err)
	}
	timeout := b.Timeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	goBin := b.GoBinary
	if goBin == "" {
		goBin = "go"
	}
	args := append([]string{"build", "-o", filepath.Join(dir, "bootstrap")}, BuildFlags()...)
	args = append(args, "./"+clean)
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0", "GOFLAGS=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("%w for %s: %v\n%s", ErrBuild, clean, err, strings.TrimSpace(out.String()))
	}
	if b.built == nil {
		b.built = map[string]string{}
	}
	b.built[clean] = dir
	b.dirs = append(b.dirs, dir)
	return dir, nil
}

// Close removes the build directories. Call it after synthesis.
func (b *Builder) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for _, d := range b.dirs {
		errs = append(errs, os.RemoveAll(d))
	}
	b.dirs, b.built = nil, nil
	return errors.Join(errs...)
}

func (b *Builder) root() (string, error) {
	if b.ModuleRoot != "" {
		return filepath.Abs(b.ModuleRoot)
	}
	return FindModuleRoot()
}

// FindModuleRoot walks up from the working directory to the directory that
// holds go.mod.
func FindModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrBuild, err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%w: no go.mod above the working directory", ErrBuild)
		}
		dir = parent
	}
}

// copyFile copies src to dst with mode.
func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// writeFile writes content to path.
func writeFile(path, content string) error {
	return os.WriteFile(path, []byte(content), 0o644)
}
