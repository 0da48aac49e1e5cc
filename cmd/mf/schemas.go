package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// runSchemas generates the JSON Schemas of the event contracts from the Go
// types (generate) and checks them against their history (check), as
// `buf breaking` does for protobuf (docs/design.md#event-contracts). check
// exits 1 when schemas/ differs from what the Go types generate, when a
// schema breaks any version of its file committed in HEAD's history (a
// removed field, a changed type, a new required field, a shrunk enum, a
// deleted file; a new major version is a new file and passes), or when
// that history is missing (a shallow clone). The compatibility rules are
// this tool's own: no maintained Go library compares two JSON Schemas.
func runSchemas(args []string, stdout, stderr io.Writer) int {
	const usage = "generate|check [-dir schemas]"
	if len(args) == 0 || (args[0] != "generate" && args[0] != "check") {
		newFlags("schemas", usage, stderr).Usage()
		if len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help"}, args[0]) {
			return 0
		}
		return 2
	}
	fs := newFlags("schemas "+args[0], "[-dir schemas]", stderr)
	dir := fs.String("dir", "schemas", "the schemas directory")
	if code, done := parse(fs, args[1:]); done {
		return code
	}
	var err error
	switch args[0] {
	case "generate":
		_, err = sync(*dir, true, stdout)
	case "check":
		var problems []string
		problems, err = check(*dir, stdout)
		for _, p := range problems {
			fmt.Fprintln(stdout, "FAIL", p)
		}
		if err == nil && len(problems) > 0 {
			err = fmt.Errorf("%d problem(s); a breaking change needs a new major version (docs/design.md#event-contracts)", len(problems))
		}
	}
	if err != nil {
		return fail(stderr, "schemas", err, 1)
	}
	return 0
}

// sync lists the generated schemas that differ from the files in dir, or
// with write, writes them.
func sync(dir string, write bool, stdout io.Writer) ([]string, error) {
	gen, err := generate()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range slices.Sorted(maps.Keys(gen)) {
		full := filepath.Join(dir, filepath.FromSlash(p))
		old, err := os.ReadFile(full)
		switch {
		case err == nil && bytes.Equal(old, gen[p]):
		case err != nil && !errors.Is(err, os.ErrNotExist):
			return nil, err
		case !write:
			out = append(out, fmt.Sprintf("%s/%s differs from the Go types: run `go run ./cmd/mf schemas generate` and commit it", dir, p))
		default:
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(full, gen[p], 0o644); err != nil {
				return nil, err
			}
			fmt.Fprintln(stdout, "wrote", full)
		}
	}
	return out, nil
}

func check(dir string, stdout io.Writer) ([]string, error) {
	problems, err := sync(dir, false, stdout)
	if err != nil {
		return nil, err
	}
	n, evo, err := checkHistory(dir)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "compared %s with the %d versions of its schemas committed in HEAD's history\n", dir, n)
	return append(problems, evo...), nil
}
