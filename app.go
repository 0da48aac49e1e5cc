// Command mercadofresco-integration is the CDK app: it synthesises the
// stacks of every MercadoFresco environment (or only those selected with
// `-c env=dev|staging|prod`) with cdk-nag on them, runs the project's
// checks (package checks) on the synthesized templates of every
// environment, and exits 1 with the messages when any construct reported an
// error or a warning (a failed Lambda build, an invalid configuration, a
// cdk-nag finding of any level) or a check found anything (a queue without
// its DLQ, a path the attempts rule cannot read, a function that cannot
// reach what it calls, ...). A finding passes only when it is acknowledged
// with a reason: core.Acknowledge, core.AcknowledgeNag, or the CDK's
// Annotations.AcknowledgeWarning.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/checks"
	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/golambda/gobuild"
	"github.com/mercadofresco/integration/stacks"
	"github.com/mercadofresco/integration/synthesized"
)

func main() {
	os.Exit(run())
}

func run() int {
	defer jsii.Close()
	app := awscdk.NewApp(nil)

	envs, err := selectEnvironments(app)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	builder := &gobuild.Builder{}
	defer builder.Close()
	builder.StartAll("lambdas") // compiles while the constructs are made
	for _, env := range envs {
		stacks.Build(app, env, builder)
	}
	stacks.ApplyNag(app)

	return verdict(app.Synth(nil), os.Stderr)
}

// verdict prints every unresolved annotation of the assembly and every
// finding of the checks on its templates, and returns the exit code: 1
// when there is any, 0 otherwise.
func verdict(assembly cxapi.CloudAssembly, stderr io.Writer) int {
	errs := unresolved(assembly)
	asm, err := synthesized.Load(*assembly.Directory())
	if err != nil {
		errs = append(errs, synthError{Text: err.Error()})
	} else {
		for _, f := range checks.Run(asm) {
			errs = append(errs, synthError{Env: synthesized.EnvOf(f.Stack), Text: "[" + f.Stack + "] " + f.String()})
		}
	}
	found := onceForAllEnvironments(errs, config.Names())
	if len(found) > 0 {
		fmt.Fprintf(stderr, "synthesis found %d unresolved finding(s) (errors and warnings; acknowledge a warning only with a written reason):\n%s\n", len(found), strings.Join(found, "\n"))
		return 1
	}
	return 0
}

// unresolved lists the error and warning messages of every stack:
// acknowledged findings are not in the assembly (cdk-nag drops them, the
// CDK turns an acknowledged warning into nothing).
func unresolved(assembly cxapi.CloudAssembly) []synthError {
	var out []synthError
	for _, stack := range *assembly.Stacks() {
		for _, msg := range *stack.Messages() {
			if msg.Level == cxapi.SynthesisMessageLevel_ERROR || msg.Level == cxapi.SynthesisMessageLevel_WARNING {
				out = append(out, synthError{Env: synthesized.EnvOf(*stack.StackName()), Text: fmt.Sprintf("[%s] %s %s: %v", *stack.StackName(), msg.Level, *msg.Id, msg.Entry.Data)})
			}
		}
	}
	return out
}

// selectEnvironments reads the `env` context: a comma-separated list of
// environment names, or "all" (the default).
func selectEnvironments(app awscdk.App) ([]config.Environment, error) {
	raw := "all"
	if v, ok := app.Node().TryGetContext(jsii.String("env")).(string); ok && v != "" {
		raw = v
	}
	if raw == "all" {
		return config.All()
	}
	var envs []config.Environment
	for _, name := range strings.Split(raw, ",") {
		env, err := config.Lookup(strings.TrimSpace(name))
		if err != nil {
			return nil, fmt.Errorf("-c env=%s: %w", raw, err)
		}
		envs = append(envs, env)
	}
	return envs, nil
}
