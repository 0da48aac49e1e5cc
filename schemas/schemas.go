// Package schemas holds the JSON Schemas (draft-04) of the messages that
// cross a boundary of the app: the events of lambdas/eventsapi and the
// payment tasks' inputs and outputs, one file per major version at
// <Name>/v<major>.json. They are generated from the Go types by
// `go run ./cmd/mf schemas generate` and checked against every committed
// version by `go run ./cmd/mf schemas check` (docs/design.md#event-contracts).
// The package embeds them, standard library only, for the schema registry
// construct and the tests.
package schemas

import (
	"cmp"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// Draft4 is the $schema of every file (the EventBridge schema registry's
// JSONSchemaDraft4 type).
const Draft4 = "http://json-schema.org/draft-04/schema#"

//go:embed */*.json
var files embed.FS

// Schema is one committed schema file.
type Schema struct {
	// Name is the message's name (the event's detail-type), Major its
	// major version.
	Name  string
	Major int
	// Path is the file's path under schemas/.
	Path    string
	Content []byte
}

// Path is the file of name's major version under schemas/.
func Path(name string, major int) string { return fmt.Sprintf("%s/v%d.json", name, major) }

// Parse splits a path of the form <Name>/v<major>.json.
func Parse(path string) (name string, major int, ok bool) {
	name, file, found := strings.Cut(path, "/")
	if !found || strings.Contains(file, "/") || !strings.HasPrefix(file, "v") || !strings.HasSuffix(file, ".json") {
		return "", 0, false
	}
	major, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(file, "v"), ".json"))
	return name, major, err == nil && major > 0
}

// All returns every committed schema, sorted by name and major.
func All() []Schema {
	paths, _ := fs.Glob(files, "*/*.json") // the pattern is well formed
	var out []Schema
	for _, p := range paths {
		if name, major, ok := Parse(p); ok {
			b, _ := files.ReadFile(p) // an embedded file Glob listed
			out = append(out, Schema{Name: name, Major: major, Path: p, Content: b})
		}
	}
	slices.SortFunc(out, func(a, b Schema) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.Major, b.Major))
	})
	return out
}
