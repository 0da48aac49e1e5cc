package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/mercadofresco/integration/synthesized"
)

// contractReview says, when the change touches schemas/, which stacks
// consume and produce each event (the mercadofresco:accepts / :produces
// metadata of the templates) and the order the stacks deploy in (the
// assembly's dependencies): consumers first (docs/design.md#event-contracts).
func contractReview(w io.Writer, app *synthesized.App) error {
	changed, err := changedSchemas()
	if err != nil {
		fmt.Fprintf(w, "\nEvent contracts: cannot tell whether schemas/ changed (%v)\n", err)
		return nil
	}
	if len(changed) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nEvent contracts: this change touches")
	for _, c := range changed {
		fmt.Fprintln(w, "  "+c)
	}
	consumers, producers := map[string][]string{}, map[string][]string{}
	for _, r := range app.Resources("") {
		for key, into := range map[string]map[string][]string{synthesized.MetadataAccepts: consumers, synthesized.MetadataProduces: producers} {
			for _, d := range synthesized.Declarations(r.Metadata[key]) {
				into[d.Type] = append(into[d.Type], fmt.Sprintf("%s %s (versions %v)", r.Stack, r.LogicalID, d.Versions))
			}
		}
	}
	for _, typ := range slices.Sorted(maps.Keys(producers)) {
		fmt.Fprintf(w, "  %s\n    produced by %s\n    consumed by %s\n", typ, strings.Join(producers[typ], "; "), cmp.Or(strings.Join(consumers[typ], "; "), "no declared consumer"))
	}
	order, err := deployOrder(app)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  Deploy the consumers before the producers of a new version: `cdk deploy --all` follows the stacks' dependencies, in this order: %s.\n", strings.Join(order, ", "))
	fmt.Fprintln(w, "  Synth already refused any route where a producer may emit a version a consumer does not accept (MF-CONTRACT) or may deploy first (MF-CONTRACT-ORDER).")
	return nil
}

// changedSchemas lists the files of schemas/ that differ from the
// merge-base with main (or HEAD), committed or not.
func changedSchemas() ([]string, error) {
	base := baseRef(".")
	diff, err := git(".", "diff", "--name-status", base, "--", "schemas")
	if err != nil {
		return nil, err
	}
	untracked, err := git(".", "ls-files", "--others", "--exclude-standard", "--", "schemas")
	if err != nil {
		return nil, err
	}
	var files []string
	for _, l := range strings.Split(diff, "\n") {
		if l != "" {
			files = append(files, strings.Join(strings.Fields(l), " "))
		}
	}
	for _, l := range strings.Split(untracked, "\n") {
		if l != "" {
			files = append(files, "A "+l)
		}
	}
	return files, nil
}

// deployOrder sorts the app's stacks so that every stack follows the
// stacks it depends on: DependsOn is transitive, so a stack depends on
// more stacks than any stack it depends on (ties by name).
func deployOrder(app *synthesized.App) ([]string, error) {
	stacks, deps := app.StackNames(), map[string]int{}
	for _, s := range stacks {
		if app.DependsOn(s, s) {
			return nil, fmt.Errorf("the stacks' dependencies have a cycle through %s", s)
		}
		for _, d := range stacks {
			if app.DependsOn(s, d) {
				deps[s]++
			}
		}
	}
	slices.SortStableFunc(stacks, func(a, b string) int { return deps[a] - deps[b] })
	return stacks, nil
}
