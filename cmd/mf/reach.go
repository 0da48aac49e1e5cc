package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mercadofresco/integration/checks"
)

// runReach prints, for review, every call of every Lambda function (the
// AWS services its role is granted, the external hosts its configuration
// names), of the secret rotation and between security groups, and how it
// leaves the VPC, as the MF-REACH rule proves it on the
// synthesized templates: an interface or gateway endpoint, a NAT gateway,
// or "outside the VPC". A call without a path is marked with the missing
// hop and explained below the table (exit 1; synth fails on it).
func runReach(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("reach", "[-e ENV] [-dir DIR]", stderr)
	env := fs.String("e", "", "environment (dev, staging, prod); empty: all")
	dir := fs.String("dir", "", "read the synthesized templates from this directory instead of synthesizing")
	if code, done := parse(fs, args); done {
		return code
	}
	apps, err := load(*env, *dir)
	if err != nil {
		return fail(stderr, "reach", err, 2)
	}
	var rows []reachRow
	for _, app := range apps {
		for _, r := range checks.Reach(app) {
			rows = append(rows, reachRow{env: app.Env, Call: r})
		}
	}
	if n := writeReach(stdout, rows); n > 0 {
		fmt.Fprintf(stderr, "%d call(s) without a path\n", n)
		return 1
	}
	return 0
}

type reachRow struct {
	env string
	checks.Call
}

// writeReach prints rows and the findings, every line at most maxWidth
// columns, and returns the number of unreachable calls.
func writeReach(w io.Writer, rows []reachRow) int {
	slices.SortStableFunc(rows, func(a, b reachRow) int {
		return cmp.Or(strings.Compare(a.env, b.env), strings.Compare(a.Function, b.Function))
	})
	table := &Table{}
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
		for _, l := range Wrap(f, "", "    ", maxWidth) {
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
