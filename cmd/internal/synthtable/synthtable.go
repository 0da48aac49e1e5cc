// Package synthtable is what the review commands (mf-reach, mf-attempts)
// share: the environments an -e flag names, and the app of those
// environments synthesized without building the Lambda binaries (no AWS
// credentials). Their tables: cmd/internal/texttable.
package synthtable

import (
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
	props := &awscdk.AppProps{Context: &map[string]any{"aws:cdk:bundling-stacks": []any{}, "aws:cdk:enable-path-metadata": true}}
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
