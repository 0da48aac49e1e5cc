package test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/internal/snapshot"
)

// UPDATE_SNAPSHOTS=1 rewrites the golden files instead of comparing
// (`make snapshots`). Review the diff before committing it.
const updateEnv = "UPDATE_SNAPSHOTS"

var snapshotDir = filepath.Join("testdata", "snapshots")

// normalise renders a template as stable, masked, indented JSON: asset
// hashes change without the infrastructure changing (a CDK helper's code, a
// Go release), so they are masked, and each Go function's asset is labelled
// with its entry; which function's code changed is in the binaries manifest
// (see internal/snapshot).
func normalise(tpl map[string]any) ([]byte, error) { return snapshot.Normalise(tpl) }

func TestSnapshots(t *testing.T) {
	s := synthApp(t)
	update := os.Getenv(updateEnv) != ""
	names := make([]string, 0, len(s.templates))
	for n := range s.templates {
		names = append(names, n)
	}
	sort.Strings(names)
	seen := map[string]bool{}
	for _, name := range names {
		file := filepath.Join(snapshotDir, name+".template.json")
		seen[filepath.Base(file)] = true
		t.Run(name, func(t *testing.T) {
			got, err := normalise(s.templates[name])
			if err != nil {
				t.Fatal(err)
			}
			if update {
				if err := os.MkdirAll(snapshotDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("no golden file for %s (run `make snapshots`): %v", name, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s (run `make snapshots` if the change is intended):\n%s", name, file, lineDiff(string(want), string(got)))
			}
		})
	}
	// The binaries manifest: one line per function, its code's SHA-256.
	t.Run(snapshot.ManifestFile, func(t *testing.T) {
		bins, err := snapshot.Binaries(s.outdir, s.templates)
		if err != nil {
			t.Fatal(err)
		}
		got := snapshot.Manifest(bins)
		file := filepath.Join(snapshotDir, snapshot.ManifestFile)
		if update {
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("no binaries manifest (run `make snapshots`): %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("the functions' code differs from %s (run `make snapshots` if intended; each line names a function):\n%s", file, lineDiff(string(want), string(got)))
		}
	})
	seen[snapshot.ManifestFile] = true
	// A golden file without a stack is a stack that disappeared.
	entries, _ := os.ReadDir(snapshotDir)
	for _, e := range entries {
		if !seen[e.Name()] {
			if update {
				os.Remove(filepath.Join(snapshotDir, e.Name()))
				continue
			}
			t.Errorf("golden file %s has no stack any more (run `make snapshots`)", e.Name())
		}
	}
}

// lineDiff shows the changed lines of two texts with a little context,
// enough to see what moved without a diff tool. It is a plain LCS diff,
// fine for templates of a few thousand lines.
func lineDiff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	shown := 0
	for i, j := 0, 0; (i < n || j < m) && shown < 80; {
		switch {
		case i < n && j < m && a[i] == b[j]:
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			fmt.Fprintf(&out, "+%5d %s\n", j+1, b[j])
			j++
			shown++
		default:
			fmt.Fprintf(&out, "-%5d %s\n", i+1, a[i])
			i++
			shown++
		}
	}
	if shown == 80 {
		out.WriteString("... (more differences)\n")
	}
	return out.String()
}
