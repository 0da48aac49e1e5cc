// Command mf-attempts prints, for review, the worst case of attempts on
// every dependency along every path of the app, as the MF-ATTEMPTS
// guardrail computes it from the synthesised configuration (SDK or client
// attempts of each function × queue receives × workflow Retry × rule, pipe
// and schedule retries). Lines above the limit (15) are marked; synth fails
// on them unless acknowledged with a reason.
//
//	go run ./cmd/mf-attempts            every environment
//	go run ./cmd/mf-attempts -e prod    one environment
//	go run ./cmd/mf-attempts -over      only the paths above the limit
//
// No AWS credentials are needed; the Lambda binaries are not built.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/constructs/guardrails"
	"github.com/mercadofresco/integration/stacks"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	defer jsii.Close()
	fs := flag.NewFlagSet("mf-attempts", flag.ContinueOnError)
	fs.SetOutput(stderr)
	envName := fs.String("e", "", "environment (dev, staging, prod); empty: all")
	over := fs.Bool("over", false, "print only the paths above the limit")
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
	if above := writeTable(stdout, rows, *over); above > 0 {
		fmt.Fprintf(stderr, "%d path(s) above %d attempts\n", above, guardrails.MaxAttemptsPerDependency)
		return 1
	}
	return 0
}

type row struct {
	env, stack string
	path       guardrails.AttemptPath
}

// writeTable prints rows (only those above the limit when over) and
// returns how many are above the limit and not acknowledged.
func writeTable(w io.Writer, rows []row, over bool) int {
	above := 0
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "ENV\tSTACK\tDEPENDENCY\tATTEMPTS\tLIMIT\tPATH (factors)\n")
	for _, r := range rows {
		p := r.path
		mark := "ok"
		switch {
		case p.Exempt != "":
			mark = "exempt: " + p.Exempt
		case p.Total > guardrails.MaxAttemptsPerDependency:
			mark = "OVER"
			above++
		}
		if over && mark != "OVER" {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.env, r.stack, p.Dependency, total(p.Total), mark, p.Path())
	}
	tw.Flush()
	return above
}

func total(n float64) string {
	if n > 1e9 {
		return "∞"
	}
	return fmt.Sprint(n)
}
