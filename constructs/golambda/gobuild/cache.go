package gobuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// listedPackage is what `go list -json` says of a package the key needs.
type listedPackage struct {
	ImportPath, Name, Dir string
	Standard              bool
	Deps                  []string
	GoFiles, SFiles       []string
	EmbedFiles            []string
	Module                *struct {
		Path, Version string
		Main          bool
		Replace       *struct{ Path, Version string }
	}
}

// sourceKeys returns, for each entry, a hash of everything its binary is
// built from: the go version, the build flags and environment, go.mod and
// go.sum, and for each package it links, the module version (a module in
// the module cache never changes) or, for the project's own and replaced
// modules, the contents of its Go, assembly and embedded files.
func sourceKeys(ctx context.Context, goBin, root string, entries []string) (map[string]string, error) {
	run := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, goBin, args...)
		cmd.Dir, cmd.Env = root, append(os.Environ(), buildEnv...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go %s: %v: %s", args[0], err, stderr.String())
		}
		return out, nil
	}
	version, err := run("env", "GOVERSION")
	if err != nil {
		return nil, err
	}
	args := []string{"list", "-deps", "-tags", "lambda.norpc", "-json=ImportPath,Name,Dir,Standard,Deps,GoFiles,SFiles,EmbedFiles,Module"}
	for _, e := range entries {
		args = append(args, "./"+e)
	}
	listed, err := run(args...)
	if err != nil {
		return nil, err
	}
	pkgs := map[string]*listedPackage{}
	byDir := map[string]*listedPackage{}
	for dec := json.NewDecoder(bytes.NewReader(listed)); ; {
		p := &listedPackage{}
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		pkgs[p.ImportPath], byDir[filepath.Clean(p.Dir)] = p, p
	}

	common := sha256.New()
	fmt.Fprintf(common, "%s\n%q\n%q\n", bytes.TrimSpace(version), BuildFlags(), buildEnv)
	for _, f := range []string{"go.mod", "go.sum"} {
		if err := hashFile(common, root, f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	pkgHash := map[string]string{}
	hashOf := func(p *listedPackage) (string, error) {
		if h, ok := pkgHash[p.ImportPath]; ok {
			return h, nil
		}
		h := sha256.New()
		fmt.Fprintf(h, "%s\n", p.ImportPath)
		if m := p.Module; m != nil && !m.Main && m.Replace == nil {
			fmt.Fprintf(h, "%s@%s\n", m.Path, m.Version)
		} else {
			files := append(append(append([]string{}, p.GoFiles...), p.SFiles...), p.EmbedFiles...)
			sort.Strings(files)
			for _, f := range files {
				if err := hashFile(h, p.Dir, f); err != nil {
					return "", err
				}
			}
		}
		s := hex.EncodeToString(h.Sum(nil))
		pkgHash[p.ImportPath] = s
		return s, nil
	}
	keys := map[string]string{}
	for _, e := range entries {
		main := byDir[filepath.Join(root, filepath.FromSlash(e))]
		if main == nil || main.Name != "main" {
			continue // not a main package: go build says so
		}
		h := sha256.New()
		h.Write(common.Sum(nil))
		for _, ip := range append([]string{main.ImportPath}, main.Deps...) {
			p := pkgs[ip]
			if p == nil || p.Standard {
				continue // the standard library is the go version's
			}
			ph, err := hashOf(p)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(h, "%s\n", ph)
		}
		keys[e] = hex.EncodeToString(h.Sum(nil))[:32]
	}
	return keys, nil
}

// hashFile writes name and the contents of dir/name into h.
func hashFile(h io.Writer, dir, name string) error {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	fmt.Fprintf(h, "%s %d\n", name, st.Size())
	_, err = io.Copy(h, f)
	return err
}

// Store copies dir (its bootstrap only) into cache/key (the binary cache,
// or the cloud assembly where constructs/golambda stages the asset)
// through a temporary directory renamed into place, and returns
// cache/key; when that fails it returns dir, which still holds the binary. Two processes storing the same key at once both succeed: the
// binaries are identical, and the rename of the later one fails harmlessly.
func Store(cache, key, dir string) string {
	final := filepath.Join(cache, key)
	if _, err := os.Stat(filepath.Join(final, "bootstrap")); err == nil {
		return final
	}
	tmp, err := os.MkdirTemp(cache, ".tmp-")
	if err != nil {
		return dir
	}
	if err := os.CopyFS(tmp, os.DirFS(dir)); err != nil { // bootstrap, with its execute bits
		os.RemoveAll(tmp)
		return dir
	}
	if err := os.Rename(tmp, final); err != nil {
		os.RemoveAll(tmp)
		if _, err := os.Stat(filepath.Join(final, "bootstrap")); err != nil {
			return dir
		}
	}
	return final
}

// prune removes cache entries not used for maxAge with their sums, and
// temporary files and directories left by an interrupted store or sum.
func prune(cache string, maxAge time.Duration) {
	entries, err := os.ReadDir(cache)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue
		}
		age := time.Since(info.ModTime())
		if e.IsDir() && age > maxAge || strings.HasPrefix(e.Name(), ".tmp-") && age > time.Hour {
			os.RemoveAll(filepath.Join(cache, e.Name()))
		}
	}
	// A binary's sum (binarySum) goes with its entry.
	for _, e := range entries {
		if entry, ok := strings.CutSuffix(e.Name(), ".sha256"); ok && !e.IsDir() {
			if _, err := os.Stat(filepath.Join(cache, entry)); errors.Is(err, os.ErrNotExist) {
				os.Remove(filepath.Join(cache, e.Name()))
			}
		}
	}
}
