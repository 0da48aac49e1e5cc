// Command mf-attempts prints, for review, the worst case of attempts on
// every dependency along every path of the app, as the MF-ATTEMPTS
// guardrail computes it from the synthesised configuration (SDK or client
// attempts of each function × queue receives × workflow Retry × rule, pipe
// and schedule retries), the tightest first: its headroom under the limit
// (15), then the path of factors on the next line(s); no line is wider
// than 160 columns. Paths above the limit, or that the rule cannot read,
// are marked; synth fails on them unless acknowledged with a reason.
//
//	go run ./cmd/mf-attempts            every environment
//	go run ./cmd/mf-attempts -e prod    one environment
//	go run ./cmd/mf-attempts -over      only the paths above the limit
//	go run ./cmd/mf-attempts -e prod -markdown   docs/design.md's table
//
// No AWS credentials are needed; the Lambda binaries are not built.
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/checks"
	"github.com/mercadofresco/integration/cmd/internal/synthtable"
	"github.com/mercadofresco/integration/cmd/internal/texttable"
	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/synthesized"
)

func main() {
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	jsii.Close()
	os.Exit(code)
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mf-attempts", flag.ContinueOnError)
	fs.SetOutput(stderr)
	envName := fs.String("e", "", "environment (dev, staging, prod); empty: all")
	over := fs.Bool("over", false, "print only the paths above the limit")
	markdown := fs.Bool("markdown", false, "print the worst path of each dependency as the Markdown table of docs/design.md#retry-layers")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	envs, err := synthtable.Environments(*envName)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	rows, err := collect(envs)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if *markdown {
		writeMarkdown(stdout, rows)
		return 0
	}
	if above := writeTable(stdout, rows, *over); above > 0 {
		fmt.Fprintf(stderr, "%d path(s) above %d attempts\n", above, checks.MaxAttemptsPerDependency)
		return 1
	}
	return 0
}

// collect synthesizes envs (without building the Lambda binaries) and
// returns the attempts paths of each.
func collect(envs []config.Environment) ([]row, error) {
	outdir, err := os.MkdirTemp("", "mf-attempts-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(outdir)
	app, _, done := synthtable.Build(envs, outdir)
	defer done()
	asm, err := synthesized.Load(*app.Synth(nil).Directory())
	if err != nil {
		return nil, err
	}
	var rows []row
	for _, env := range envs {
		for _, p := range checks.Attempts(asm.Env(env.Name)) {
			rows = append(rows, row{env: env.Name, stack: strings.TrimPrefix(p.Stack, "MercadoFresco-"), path: p})
		}
	}
	return rows, nil
}

type row struct {
	env, stack string
	path       checks.AttemptPath
}

// MaxWidth is the widest line the table prints: a path that does not fit
// continues on the next lines.
const MaxWidth = 160

// writeTable prints rows (only those above the limit when over), the
// tightest first (least headroom under the limit), each followed by its
// path of factors, and returns how many are above the limit and not
// acknowledged.
func writeTable(w io.Writer, rows []row, over bool) int {
	rows = slices.Clone(rows)
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.path.Total != b.path.Total {
			return a.path.Total > b.path.Total
		}
		return fmt.Sprint(a.env, a.stack, a.path.Dependency) < fmt.Sprint(b.env, b.stack, b.path.Dependency)
	})
	above := 0
	table := &texttable.Table{}
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
		notes := texttable.Wrap("path: "+p.Path(), "      ", "      ", MaxWidth)
		for _, note := range []string{p.Unreadable, p.Exempt} {
			if note != "" {
				notes = append(notes, texttable.Wrap("why: "+note, "      ", "      ", MaxWidth)...)
			}
		}
		table.RowNotes([]string{r.env, r.stack, p.Dependency, total(p.Total), fmt.Sprint(checks.MaxAttemptsPerDependency), headroom(p.Total), status}, notes)
	}
	_ = table.Write(w) // the command's output: nothing to do when it fails
	return above
}

// writeMarkdown prints the worst path of each dependency (by environment
// and stack), the tightest first.
func writeMarkdown(w io.Writer, rows []row) {
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].path.Total > rows[j].path.Total })
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
