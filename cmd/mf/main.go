// Command mf is the operator's command, without AWS credentials:
//
//	mf attempts [-e ENV] [-dir DIR] [-over] [-markdown]   worst-case attempts per dependency (MF-ATTEMPTS)
//	mf reach [-e ENV] [-dir DIR]                          every function's calls and their way out of the VPC (MF-REACH)
//	mf schemas generate|check [-dir schemas]              the event contracts' JSON Schemas
//	mf cost [-e ENV] [-dir DIR] [-before DIR]             the monthly cost of an environment (docs/cost.md)
//	mf review [-e ENV] [-fail]                            cdk diff against the committed snapshots
//	mf migrate [-dsn DSN] [-list]                         the outbox migrations on a local or CI database
//
// Every subcommand parses its flags the same way (`mf <command> -h` lists
// them; a bad flag exits 2), reads the synthesized app through package
// synthesized (a cloud assembly or directory of templates given with -dir,
// or the app synthesized now, without building the Lambda binaries), and
// prints its tables with one printer (table.go).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/golambda/gobuild"
	"github.com/mercadofresco/integration/stacks"
	"github.com/mercadofresco/integration/synthesized"
)

type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
}

// commands are mf's subcommands, in the order `mf help` lists them.
var commands = []command{
	{"attempts", "the worst case of attempts on every dependency along every path (MF-ATTEMPTS)", runAttempts},
	{"reach", "every call of every function and how it leaves the VPC (MF-REACH)", runReach},
	{"schemas", "generate the event contracts' JSON Schemas, or check them against every committed version", runSchemas},
	{"cost", "the monthly cost of an environment, or its delta from other templates", runCost},
	{"review", "what a change does to an environment, against the committed snapshots", runReview},
	{"migrate", "apply the outbox migrations to a PostgreSQL database", runMigrate},
}

func main() {
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	jsii.Close()
	os.Exit(code)
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		i := slices.IndexFunc(commands, func(c command) bool { return c.name == args[0] })
		if i >= 0 {
			return commands[i].run(args[1:], stdout, stderr)
		}
	}
	w, code := stderr, 2
	if len(args) > 0 && slices.Contains([]string{"help", "-h", "-help", "--help"}, args[0]) {
		w, code = stdout, 0
	} else if len(args) > 0 {
		fmt.Fprintf(stderr, "mf: unknown command %q\n", args[0])
	}
	fmt.Fprintln(w, "usage: mf <command> [flags]   (mf <command> -h: its flags)")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	return code
}

// newFlags is the flag set of a command: -h prints usage ("mf <name>
// <usage>") and the flags to stderr.
func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("mf "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mf %s %s\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args into fs; when the command ends there, done is true
// and code is its exit code: 0 after -h, 2 after a bad flag.
func parse(fs *flag.FlagSet, args []string) (code int, done bool) {
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return 0, true
	case err != nil:
		return 2, true
	}
	return 0, false
}

// fail prints err as the command's and returns code.
func fail(stderr io.Writer, name string, err error, code int) int {
	fmt.Fprintf(stderr, "mf %s: %v\n", name, err)
	return code
}

// load returns the apps of env (every environment when env is ""): read
// from dir (a cloud assembly or a directory of templates), or, when dir is
// "", the app synthesized now into a temporary directory without building
// the Lambda binaries.
func load(env, dir string) ([]*synthesized.App, error) {
	if dir == "" {
		envs, err := config.All()
		if env != "" {
			var e config.Environment
			e, err = config.Lookup(env)
			envs = []config.Environment{e}
		}
		if err != nil {
			return nil, err
		}
		out, err := os.MkdirTemp("", "mf-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(out)
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out),
			Context: &map[string]any{"aws:cdk:bundling-stacks": []any{}, "aws:cdk:enable-path-metadata": true}})
		builder := &gobuild.Builder{}
		defer builder.Close()
		for _, e := range envs {
			stacks.Build(app, e, builder)
		}
		dir = *app.Synth(nil).Directory()
	}
	asm, err := synthesized.Load(dir)
	switch {
	case err != nil:
		return nil, err
	case env == "":
		return asm.Envs, nil
	case asm.Env(env) == nil:
		return nil, fmt.Errorf("no template of environment %q in %s", env, dir)
	}
	return []*synthesized.App{asm.Env(env)}, nil
}
