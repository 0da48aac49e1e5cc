// Command mercadofresco-integration is the CDK app: it synthesises the
// stacks of every MercadoFresco environment (or only those selected with
// `-c env=dev|staging|prod`), runs the messaging guardrails and cdk-nag on
// them and the network reachability rule (constructs/reachability) on their
// templates, and exits non-zero with the messages when any construct
// reported an error (a failed Lambda build, an invalid configuration, a
// guardrail, an unacknowledged cdk-nag finding) or a function cannot reach
// what it calls.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/constructs/reachability"
	"github.com/mercadofresco/integration/stacks"
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
	builder := &golambda.Builder{}
	defer builder.Close()
	for _, env := range envs {
		stacks.Build(app, env, builder)
	}
	stacks.ApplyChecks(app)

	assembly := app.Synth(nil)
	var errs []string
	for _, stack := range *assembly.Stacks() {
		for _, msg := range *stack.Messages() {
			if msg.Level == "error" {
				errs = append(errs, fmt.Sprintf("[%s] %s: %v", *stack.StackName(), *msg.Id, msg.Entry.Data))
			}
		}
	}
	// The network reachability rule needs every stack of an environment
	// (the VPC and the functions are in different stacks): it runs on the
	// synthesized templates.
	reach, err := reachability.CheckAssembly(assembly)
	if err != nil {
		errs = append(errs, err.Error())
	}
	errs = append(errs, reach...)
	if len(errs) > 0 {
		fmt.Fprintf(os.Stderr, "synthesis found %d error(s):\n%s\n", len(errs), strings.Join(errs, "\n"))
		return 1
	}
	return 0
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
