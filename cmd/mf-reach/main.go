// Command mf-reach prints, for review, every call of every Lambda function
// (the AWS services its role is granted, the external hosts its
// configuration names) and how it leaves the VPC, as the MF-REACH rule
// (constructs/reachability) proves it on the synthesized templates: an
// interface or gateway endpoint, a NAT gateway, or "outside the VPC". A call
// without a path is marked with the missing hop and explained below the
// table (lines of at most 160 columns); the command then exits 1 (and synth fails on it).
//
//	go run ./cmd/mf-reach                 every environment
//	go run ./cmd/mf-reach -e prod         one environment
//	go run ./cmd/mf-reach -dir cdk.out    templates already synthesized
//
// No AWS credentials are needed; the Lambda binaries are not built.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/checks"
	"github.com/mercadofresco/integration/cmd/internal/synthtable"
	"github.com/mercadofresco/integration/cmd/internal/texttable"
	"github.com/mercadofresco/integration/synthesized"
)

// maxWidth is the widest line the command prints.
const maxWidth = 160

func main() {
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	jsii.Close()
	os.Exit(code)
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mf-reach", flag.ContinueOnError)
	fs.SetOutput(stderr)
	envName := fs.String("e", "", "environment (dev, staging, prod); empty: all")
	dir := fs.String("dir", "", "read <stack>-<env>.template.json from this directory instead of synthesizing")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	envs, err := synthtable.Environments(*envName)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	apps := map[string]*synthesized.App{}
	if *dir != "" {
		for _, env := range envs {
			app, err := synthesized.LoadEnv(*dir, env.Name)
			if err != nil {
				fmt.Fprintln(stderr, err)
				return 2
			}
			apps[env.Name] = app
		}
	} else {
		outdir, err := os.MkdirTemp("", "mf-reach-")
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		defer os.RemoveAll(outdir)
		app, _, done := synthtable.Build(envs, outdir)
		defer done()
		asm, err := synthesized.Load(*app.Synth(nil).Directory())
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		for _, e := range asm.Envs {
			apps[e.Env] = e
		}
	}
	var rows []row
	for _, env := range envs {
		for _, r := range checks.Reach(apps[env.Name]) {
			rows = append(rows, row{env: env.Name, Call: r})
		}
	}
	if n := writeTable(stdout, rows); n > 0 {
		fmt.Fprintf(stderr, "%d call(s) without a path\n", n)
		return 1
	}
	return 0
}

type row struct {
	env string
	checks.Call
}

// writeTable prints rows and the findings, every line at most maxWidth
// columns, and returns the number of unreachable calls.
func writeTable(w io.Writer, rows []row) int {
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].env != rows[j].env {
			return rows[i].env < rows[j].env
		}
		return rows[i].Function < rows[j].Function
	})
	table := &texttable.Table{}
	table.Row("ENV", "FUNCTION", "CALLS", "VIA", "STATUS")
	var bad []string
	for _, r := range rows {
		status := "reachable"
		if !r.OK() {
			status = "MISSING" // the hop is named below the table
			bad = append(bad, r.env+": "+r.Finding().String())
		}
		table.Row(r.env, cell(function(r.Call), 40), cell(strings.TrimPrefix(r.Target, "https://"), 40), cell(r.Via, 52), status)
	}
	_ = table.Write(w) // the command's output: nothing to do when it fails
	for _, f := range bad {
		fmt.Fprintln(w)
		for _, l := range texttable.Wrap(f, "", "    ", maxWidth) {
			fmt.Fprintln(w, l)
		}
	}
	return len(bad)
}

// function names an unnamed function by its construct path without the
// project prefix and the L1's "/Resource".
func function(r checks.Call) string {
	if r.Function != r.Path {
		return r.Function
	}
	return strings.TrimSuffix(strings.TrimPrefix(r.Path, "MercadoFresco-"), "/Resource")
}

func cell(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n+1:]
}
