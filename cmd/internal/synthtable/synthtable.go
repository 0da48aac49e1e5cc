// Package synthtable is what the review commands (mf-reach, mf-attempts)
// share: the environments an -e flag names, the app of those environments
// synthesized without building the Lambda binaries (no AWS credentials),
// and a table of aligned columns whose rows may carry note lines, wrapped
// to a width.
package synthtable

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/stacks"
)

// Environments returns the environment name names, or every environment
// when name is "".
func Environments(name string) ([]config.Environment, error) {
	if name == "" {
		return config.All()
	}
	env, err := config.Lookup(name)
	if err != nil {
		return nil, err
	}
	return []config.Environment{env}, nil
}

// Build builds the stacks of envs into one app writing to outdir ("": the
// CDK's default), with bundling off: no Lambda binary is built. Call close
// once done with the app.
func Build(envs []config.Environment, outdir string) (app awscdk.App, built []*stacks.EnvironmentStacks, close func()) {
	props := &awscdk.AppProps{Context: &map[string]any{"aws:cdk:bundling-stacks": []any{}}}
	if outdir != "" {
		props.Outdir = jsii.String(outdir)
	}
	app = awscdk.NewApp(props)
	builder := &golambda.Builder{}
	for _, env := range envs {
		built = append(built, stacks.Build(app, env, builder))
	}
	return app, built, func() { builder.Close() }
}

// Row is one row of a table and the lines printed under it.
type Row struct {
	Cells []string
	Notes []string
}

// Write prints header and rows with the columns aligned (two spaces apart,
// the last column unpadded), each row followed by its notes.
func Write(w io.Writer, header []string, rows []Row) {
	widths := make([]int, len(header))
	for _, cells := range append([][]string{header}, cellsOf(rows)...) {
		for i, c := range cells {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for j, c := range cells {
			b.WriteString(c)
			if j < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c)+2))
			}
		}
		fmt.Fprintln(w, b.String())
	}
	line(header)
	for _, r := range rows {
		line(r.Cells)
		for _, n := range r.Notes {
			fmt.Fprintln(w, n)
		}
	}
}

func cellsOf(rows []Row) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = r.Cells
	}
	return out
}

// Wrap breaks s at spaces into lines of at most width columns, the first
// prefixed by indent and the others by hang (a word longer than a line is
// cut).
func Wrap(s, indent, hang string, width int) []string {
	var lines []string
	prefix := indent
	line := prefix
	flush := func() {
		lines = append(lines, line)
		prefix = hang
		line = prefix
	}
	for _, word := range strings.Fields(s) {
		for utf8.RuneCountInString(prefix+word) > width {
			if line != prefix {
				flush()
			}
			r := []rune(word)
			cut := max(width-utf8.RuneCountInString(prefix), 1)
			line += string(r[:cut])
			word = string(r[cut:])
			flush()
		}
		switch {
		case line == prefix:
			line += word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width:
			flush()
			line += word
		default:
			line += " " + word
		}
	}
	if line != prefix {
		lines = append(lines, line)
	}
	return lines
}
