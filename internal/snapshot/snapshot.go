// Package snapshot turns synthesised CloudFormation templates into the
// reviewed golden files of test/testdata/snapshots, and lists the Lambda
// binaries they deploy.
//
// Asset hashes change with every rebuild of a CDK helper or a Go release, so
// they are masked; but a mask that hides which function's code changed would
// hide a swapped binary from review. So each Go function's asset is labelled
// with its entry (<asset:lambdas/preparar-pedido>), read from the
// synthesized.MetadataEntry metadata that constructs/golambda puts on the
// function, and the SHA-256 of every function's bootstrap binary is kept in
// a manifest beside the templates (Binaries). A code change then shows in
// `git diff` as one changed line of the manifest, naming the function.
package snapshot

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/mercadofresco/integration/synthesized"
)

// ManifestFile is the name of the binaries manifest beside the templates.
const ManifestFile = "lambda-binaries.txt"

var assetHash = regexp.MustCompile(`\b[0-9a-f]{64}\b`)

// Normalise renders tpl as indented JSON with sorted keys, each Go
// function's asset hash replaced by <asset:ENTRY> and every other asset hash
// (CDK helper code) by <asset-hash>.
func Normalise(tpl map[string]any) ([]byte, error) {
	labels := map[string]string{}
	for _, f := range functions(tpl) {
		labels[f.hash] = "<asset:" + f.entry + ">"
	}
	raw, err := json.MarshalIndent(tpl, "", "  ") // map keys are sorted
	if err != nil {
		return nil, err
	}
	raw = assetHash.ReplaceAllFunc(raw, func(h []byte) []byte {
		if l, ok := labels[string(h)]; ok {
			return []byte(l)
		}
		return []byte("<asset-hash>")
	})
	return append(raw, '\n'), nil
}

type function struct {
	entry, hash string
}

// functions lists the Go functions of tpl: entry and asset hash.
func functions(tpl map[string]any) []function {
	var out []function
	res, _ := tpl["Resources"].(map[string]any)
	for _, id := range slices.Sorted(maps.Keys(res)) {
		r, _ := res[id].(map[string]any)
		if r["Type"] != "AWS::Lambda::Function" {
			continue
		}
		meta, _ := r["Metadata"].(map[string]any)
		entry, _ := meta[synthesized.MetadataEntry].(string)
		path, _ := meta["aws:asset:path"].(string)
		if entry == "" || !strings.HasPrefix(path, "asset.") {
			continue
		}
		out = append(out, function{entry: entry, hash: strings.TrimPrefix(path, "asset.")})
	}
	return out
}

// Binaries returns, for every Go function of the templates, its entry and
// the SHA-256 of its bootstrap binary in the assembly directory outdir. An
// entry deployed by several stacks must ship the same binary everywhere;
// a mismatch is an error.
func Binaries(outdir string, templates map[string]map[string]any) (map[string]string, error) {
	out := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(templates)) {
		for _, f := range functions(templates[name]) {
			bin, err := os.ReadFile(filepath.Join(outdir, "asset."+f.hash, "bootstrap"))
			if err != nil {
				return nil, fmt.Errorf("snapshot: %s in %s: %w", f.entry, name, err)
			}
			sum := fmt.Sprintf("%x", sha256.Sum256(bin))
			if prev, ok := out[f.entry]; ok && prev != sum {
				return nil, fmt.Errorf("snapshot: %s ships two different binaries (%s and %s)", f.entry, prev, sum)
			}
			out[f.entry] = sum
		}
	}
	return out, nil
}

// Manifest renders the binaries as the manifest file: one "sha256  entry"
// line per function, sorted by entry (the format of sha256sum).
func Manifest(binaries map[string]string) []byte {
	var b strings.Builder
	b.WriteString("# SHA-256 of each Go Lambda's bootstrap binary (arm64, reproducible build).\n")
	b.WriteString("# A changed line is a function whose deployed code changed. Update with `make snapshots`.\n")
	for _, e := range slices.Sorted(maps.Keys(binaries)) {
		fmt.Fprintf(&b, "%s  %s\n", binaries[e], e)
	}
	return []byte(b.String())
}
