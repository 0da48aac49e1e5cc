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
	"unicode/utf8"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/constructs/guardrails"
	"github.com/mercadofresco/integration/stacks"
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
	var envs []config.Environment
	if *envName == "" {
		all, err := config.All()
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		envs = all
	} else {
		env, err := config.Lookup(*envName)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		envs = []config.Environment{env}
	}
	rows := collect(envs)
	if *markdown {
		writeMarkdown(stdout, rows)
		return 0
	}
	if above := writeTable(stdout, rows, *over); above > 0 {
		fmt.Fprintf(stderr, "%d path(s) above %d attempts\n", above, guardrails.MaxAttemptsPerDependency)
		return 1
	}
	return 0
}

// collect builds the stacks of envs (without building the Lambda
// binaries) and returns the attempts paths of each.
func collect(envs []config.Environment) []row {
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"aws:cdk:bundling-stacks": []any{}}})
	builder := &golambda.Builder{}
	defer builder.Close()
	var rows []row
	for _, env := range envs {
		es := stacks.Build(app, env, builder)
		for _, st := range es.Stacks() {
			for _, p := range guardrails.Attempts(st) {
				rows = append(rows, row{env: env.Name, stack: strings.TrimPrefix(*st.StackName(), "MercadoFresco-"), path: p})
			}
		}
	}
	return rows
}

type row struct {
	env, stack string
	path       guardrails.AttemptPath
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
	table := [][]string{{"ENV", "STACK", "DEPENDENCY", "ATTEMPTS", "LIMIT", "HEADROOM", "STATUS"}}
	var notes [][]string // the lines printed under each row of table[1:]
	for _, r := range rows {
		p := r.path
		status := "ok"
		switch {
		case p.Exempt != "":
			status = "exempt (acknowledged)"
		case p.Unreadable != "":
			status = "UNREADABLE"
			above++
		case p.Total > guardrails.MaxAttemptsPerDependency:
			status = "OVER"
			above++
		}
		if over && (status == "ok" || p.Exempt != "") {
			continue
		}
		headroom := "-"
		if !math.IsInf(p.Total, 1) {
			headroom = fmt.Sprint(guardrails.MaxAttemptsPerDependency - p.Total)
		}
		table = append(table, []string{r.env, r.stack, p.Dependency, total(p.Total), fmt.Sprint(guardrails.MaxAttemptsPerDependency), headroom, status})
		lines := wrap("path: "+p.Path(), "      ", MaxWidth)
		for _, note := range []string{p.Unreadable, p.Exempt} {
			if note != "" {
				lines = append(lines, wrap("why: "+note, "      ", MaxWidth)...)
			}
		}
		notes = append(notes, lines)
	}
	widths := make([]int, len(table[0]))
	for _, cells := range table {
		for i, c := range cells {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for i, cells := range table {
		var b strings.Builder
		for j, c := range cells {
			if j < len(cells)-1 {
				fmt.Fprintf(&b, "%s%s  ", c, strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c)))
			} else {
				b.WriteString(c)
			}
		}
		fmt.Fprintln(w, b.String())
		if i > 0 {
			for _, l := range notes[i-1] {
				fmt.Fprintln(w, l)
			}
		}
	}
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
		headroom := "-"
		if !math.IsInf(p.Total, 1) {
			headroom = fmt.Sprint(guardrails.MaxAttemptsPerDependency - p.Total)
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s |\n", p.Dependency, r.stack, total(p.Total), headroom, strings.ReplaceAll(p.Path(), "|", "\\|"))
	}
}

// wrap breaks s at spaces into lines of at most width columns, indented
// by indent (a word longer than a line is cut).
func wrap(s, indent string, width int) []string {
	var lines []string
	line := indent
	for _, word := range strings.Fields(s) {
		for utf8.RuneCountInString(indent+word) > width {
			r := []rune(word)
			cut := width - utf8.RuneCountInString(indent)
			if line != indent {
				lines = append(lines, line)
			}
			lines = append(lines, indent+string(r[:cut]))
			line, word = indent, string(r[cut:])
		}
		switch {
		case line == indent:
			line += word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width:
			lines = append(lines, line)
			line = indent + word
		default:
			line += " " + word
		}
	}
	if line != indent {
		lines = append(lines, line)
	}
	return lines
}

func total(n float64) string {
	if math.IsInf(n, 1) || n > 1e9 {
		return "∞"
	}
	return fmt.Sprint(n)
}
