package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/mercadofresco/integration/checks"
	"github.com/mercadofresco/integration/synthesized"
)

// runAttempts prints, for review, the worst case of attempts on every
// dependency along every path of the app, as the MF-ATTEMPTS rule computes
// it from the synthesized configuration (SDK or client attempts of each
// function × queue receives × workflow Retry × rule, pipe and schedule
// retries), the tightest first: its headroom under the limit (15), then the
// path of factors on the next line(s), no line wider than maxWidth. Paths
// above the limit, or that the rule cannot read, are marked (exit 1); synth
// fails on them unless acknowledged with a reason. -markdown prints
// docs/design.md's table.
func runAttempts(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("attempts", "[-e ENV] [-dir DIR] [-over] [-markdown]", stderr)
	env := fs.String("e", "", "environment (dev, staging, prod); empty: all")
	dir := fs.String("dir", "", "read the synthesized templates from this directory instead of synthesizing")
	over := fs.Bool("over", false, "print only the paths above the limit")
	markdown := fs.Bool("markdown", false, "print the worst path of each dependency as the Markdown table of docs/design.md#retry-layers")
	if code, done := parse(fs, args); done {
		return code
	}
	apps, err := load(*env, *dir)
	if err != nil {
		return fail(stderr, "attempts", err, 2)
	}
	rows := collect(apps)
	if *markdown {
		writeMarkdown(stdout, rows)
		return 0
	}
	if above := writeAttempts(stdout, rows, *over); above > 0 {
		fmt.Fprintf(stderr, "%d path(s) above %d attempts\n", above, checks.MaxAttemptsPerDependency)
		return 1
	}
	return 0
}

// collect returns the attempts paths of each app.
func collect(apps []*synthesized.App) []attemptRow {
	var rows []attemptRow
	for _, app := range apps {
		for _, p := range checks.Attempts(app) {
			rows = append(rows, attemptRow{env: app.Env, stack: strings.TrimPrefix(p.Stack, "MercadoFresco-"), path: p})
		}
	}
	return rows
}

type attemptRow struct {
	env, stack string
	path       checks.AttemptPath
}

// writeAttempts prints rows (only those above the limit when over), the
// tightest first (least headroom under the limit), each followed by its
// path of factors, and returns how many are above the limit and not
// acknowledged.
func writeAttempts(w io.Writer, rows []attemptRow, over bool) int {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b attemptRow) int {
		return cmp.Or(cmp.Compare(b.path.Total, a.path.Total), strings.Compare(fmt.Sprint(a.env, a.stack, a.path.Dependency), fmt.Sprint(b.env, b.stack, b.path.Dependency)))
	})
	above := 0
	table := &Table{}
	table.Row("ENV", "STACK", "DEPENDENCY", "ATTEMPTS", "LIMIT", "HEADROOM", "STATUS")
	for _, r := range rows {
		p := r.path
		status := "ok"
		switch {
		case p.Exempt != "":
			status = "exempt (acknowledged)"
		case p.Unreadable != "":
			status = "UNREADABLE"
			above++
		case p.Total > checks.MaxAttemptsPerDependency:
			status = "OVER"
			above++
		}
		if over && (status == "ok" || p.Exempt != "") {
			continue
		}
		notes := Wrap("path: "+p.Path(), "      ", "      ", maxWidth)
		for _, note := range []string{p.Unreadable, p.Exempt} {
			if note != "" {
				notes = append(notes, Wrap("why: "+note, "      ", "      ", maxWidth)...)
			}
		}
		table.RowNotes([]string{r.env, r.stack, p.Dependency, total(p.Total), fmt.Sprint(checks.MaxAttemptsPerDependency), headroom(p.Total), status}, notes)
	}
	_ = table.Write(w) // the command's output: nothing to do when it fails
	return above
}

// writeMarkdown prints the worst path of each dependency (by environment
// and stack), the tightest first.
func writeMarkdown(w io.Writer, rows []attemptRow) {
	slices.SortStableFunc(rows, func(a, b attemptRow) int { return cmp.Compare(b.path.Total, a.path.Total) })
	fmt.Fprintln(w, "| dependency | stack | worst case | headroom | path |")
	fmt.Fprintln(w, "|---|---|---:|---:|---|")
	seen := map[string]bool{}
	for _, r := range rows {
		p := r.path
		k := r.env + "/" + r.stack + "/" + p.Dependency
		if seen[k] {
			continue
		}
		seen[k] = true
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s |\n", p.Dependency, r.stack, total(p.Total), headroom(p.Total), strings.ReplaceAll(p.Path(), "|", "\\|"))
	}
}

// headroom is how far n is under the limit, "-" when n is unbounded.
func headroom(n float64) string {
	if math.IsInf(n, 1) {
		return "-"
	}
	return fmt.Sprint(checks.MaxAttemptsPerDependency - n)
}

func total(n float64) string {
	if math.IsInf(n, 1) || n > 1e9 {
		return "∞"
	}
	return fmt.Sprint(n)
}
