// Command mf-dlq is the DLQ runbook (docs/runbooks/dlq.md) as one tool:
// contain, inspect, classify, redrive and verify over AWS (package dlq),
// and sandbox, the rehearsal on the local AWS. `mf-dlq --help` prints the
// synopses and the exit codes, `mf-dlq COMMAND --help` a command's flags;
// every command takes --json, and scripts read verdicts and results there.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// The exit codes, the one table of them (usage, docs/runbooks/dlq.md#exit-codes).
const (
	exitOK          = 0 // done; verify: VERIFIED
	exitError       = 1 // an AWS error (a missing permission names the IAM action), Ctrl-C
	exitUsage       = 2 // a wrong command, flag or queue name
	exitEmpty       = 3 // the DLQ holds no message
	exitRefused     = 4 // a rail of the runbook stopped the command (the message says which)
	exitNotVerified = 5 // verify: a check failed or could not be measured
)

const usage = `mf-dlq: the DLQ runbook as a command (docs/runbooks/dlq.md)

%s
Every command takes --json (its result as JSON on stdout; the text for a
person goes to stderr) and --help (its flags). Flags may follow QUEUE.

QUEUE: a queue URL or name, or with -e dev|staging|prod a logical name (%s);
a source queue stands for its DLQ. AWS: --profile, --region, --endpoint-url
(repeated in every command the tool suggests).

Exit codes: 0 done (verify: VERIFIED), 1 error (AWS, missing permission,
Ctrl-C), 2 usage, 3 empty DLQ, 4 refused by a rail (no --confirm-fixed,
poison or data not named with --only, expired messages left, a move task
running, not a DLQ, a queue whose receives would count), 5 not verified.
classify exits 0: its verdict is "verdict" in --json.
`

// commands are the runbook's steps: their synopsis (the flags they take)
// and what they do with the parsed flags.
var commands = []command{
	{"contain", "QUEUE [--window 30s] [--samples 4] [--disable-consumer | --enable-consumer]", contain},
	{"inspect", "QUEUE [-n 10] [--save FILE]", inspect},
	{"classify", "QUEUE | --from-file FILE [--max 1000] [--accept-versions 1] [--required-keys k1,k2]", classify},
	{"redrive", "QUEUE --confirm-fixed [--only transient|data|poison|expired] [--reason TEXT] [--version N] [--rate 10] [--max N] [--dry-run] [--to QUEUE] [--readmit-expired]", redrive},
	{"verify", "QUEUE [--expect N --since 2026-11-30T08:00:00Z | --since 45m] [--window 30s]", verify},
	{"sandbox", "[--scenario mixture] [-e dev] [--listen 127.0.0.1:0] [--consumer-accepts 1,2]", nil},
}

type command struct {
	name, synopsis string
	run            func(ctx context.Context, o *opts, t *dlq.Tool, tg *dlq.Target) (any, error)
}

// opts are every flag of the tool; a command takes those its synopsis
// names, and the AWS ones.
type opts struct {
	queue, profile, region, endpoint, env, save, fromFile, accept, required, only, reason, version, to, since, scenario, listen string
	json, disable, enable, confirm, dryRun, readmit                                                                             bool
	n, samples, max, expect                                                                                                     int
	rate                                                                                                                        float64
	window                                                                                                                      time.Duration
}

func (o *opts) register(fs *flag.FlagSet) {
	fs.StringVar(&o.profile, "profile", "", "AWS shared-config profile")
	fs.StringVar(&o.region, "region", "", "AWS region (default: the profile's or AWS_REGION)")
	fs.StringVar(&o.endpoint, "endpoint-url", "", "endpoint for SQS, Lambda and CloudWatch (a local one such as mf-dlq sandbox)")
	fs.StringVar(&o.env, "e", "", "environment (dev, staging, prod) of a logical or catalogue queue name")
	fs.StringVar(&o.env, "env", "", "same as -e")
	fs.BoolVar(&o.json, "json", false, "print the result as JSON on stdout (the text for a person goes to stderr)")
	fs.DurationVar(&o.window, "window", 30*time.Second, "contain: how long to sample the DLQ depth; verify: how long to watch a source backlog that is not empty")
	fs.IntVar(&o.samples, "samples", 4, "how many samples over the window (at least 2)")
	fs.BoolVar(&o.disable, "disable-consumer", false, "disable the source queues' Lambda event source mappings")
	fs.BoolVar(&o.enable, "enable-consumer", false, "enable them again")
	fs.IntVar(&o.n, "n", 10, "number of messages to look at")
	fs.StringVar(&o.save, "save", "", "also write the messages to FILE as JSON lines (aws sqs receive-message shape; a new file, mode 0600: customer data)")
	fs.StringVar(&o.fromFile, "from-file", "", "classify saved messages (inspect --save, or aws sqs receive-message output) instead of the live DLQ")
	fs.StringVar(&o.accept, "accept-versions", "", "major versions the consumer accepts, comma-separated (default: its declared ones, lambdas/consumers)")
	fs.StringVar(&o.required, "required-keys", "", "keys the consumer requires, comma-separated, - for none (default: the queue's consumer's)")
	fs.IntVar(&o.max, "max", 0, "classify: most messages received (default 1000); redrive: most messages moved (default all)")
	fs.BoolVar(&o.confirm, "confirm-fixed", false, "state that the cause is fixed (runbook step 4); required")
	fs.StringVar(&o.only, "only", "", "move only the messages of these classify verdicts (transient, data, poison, expired; comma-separated); without it, poison or data messages make the redrive refuse")
	fs.StringVar(&o.reason, "reason", "", "move only the messages whose consumer reason or classify finding contains TEXT")
	fs.StringVar(&o.version, "version", "", "move only the messages of this schema version")
	fs.Float64Var(&o.rate, "rate", dlq.DefaultRate, "messages per second, in (0, 500]")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the plan (counts per verdict and destination), move nothing")
	fs.StringVar(&o.to, "to", "", "send every message to this queue (name or URL) instead of its source")
	fs.BoolVar(&o.readmit, "readmit-expired", false, "also redrive the messages older than their consumer's replay window, marked re-admitted: you state that, for each, the side effect did not happen (docs/runbooks/dlq.md#expired-messages)")
	fs.IntVar(&o.expect, "expect", 0, "messages redriven (the sources' NumberOfMessagesDeleted must reach it)")
	fs.StringVar(&o.since, "since", "", "start of the redrive: RFC 3339 time or a duration ago (45m); default 1h ago")
	fs.StringVar(&o.scenario, "scenario", "mixture", "data set to load: transient-burst, data-drip, deploy-v2, malformed, mixture or expired")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:0", "address to serve on")
	fs.StringVar(&o.accept, "consumer-accepts", "", "major versions the sandbox consumers accept (default: the catalogue's): 1,2 rehearses the deploy of a consumer that accepts version 2")
}

// flagSet is the command's flags: the AWS ones (but for sandbox) and
// those its synopsis names.
func (o *opts) flagSet(name, synopsis string) *flag.FlagSet {
	all := flag.NewFlagSet(name, flag.ContinueOnError)
	o.register(all)
	takes := "json e env"
	if name != "sandbox" {
		takes += " profile region endpoint-url"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	all.VisitAll(func(f *flag.Flag) {
		if slices.Contains(strings.Fields(takes), f.Name) || strings.Contains(synopsis, "-"+f.Name+" ") || strings.Contains(synopsis, "-"+f.Name+"]") {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
	return fs
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once (still safe: send comes before delete)
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var synopses strings.Builder
	for _, c := range commands {
		fmt.Fprintf(&synopses, "  mf-dlq %-8s %s\n", c.name, c.synopsis)
	}
	if len(args) == 0 || slices.Contains([]string{"-h", "--help", "help"}, args[0]) {
		fmt.Fprintf(stderr, usage, synopses.String(), strings.Join(catalog.Logicals(), ", "))
		return map[bool]int{true: exitUsage, false: exitOK}[len(args) == 0]
	}
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == args[0] })
	if i < 0 {
		fmt.Fprintf(stderr, "mf-dlq: unknown command %q\n\n"+usage, args[0], synopses.String(), strings.Join(catalog.Logicals(), ", "))
		return exitUsage
	}
	c := commands[i]
	o := &opts{}
	fs := o.flagSet(c.name, c.synopsis)
	// Flags may come before and after the one positional argument (QUEUE).
	err := fs.Parse(args[1:])
	if err == nil && fs.NArg() > 0 {
		if o.queue, err = fs.Arg(0), fs.Parse(fs.Args()[1:]); err == nil && fs.NArg() > 0 {
			err = fmt.Errorf("unexpected arguments %q", fs.Args())
		}
	}
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, "usage: mf-dlq %s %s\n\nflags:\n", c.name, c.synopsis)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fmt.Fprintf(stdout, "\nRunbook: docs/runbooks/dlq.md. Exit codes: mf-dlq --help.\n")
		return exitOK
	} else if err != nil {
		err = fmt.Errorf("%w: %w (mf-dlq %s --help lists the flags)", dlq.ErrUsage, err, c.name)
	}
	var result any
	if err == nil && c.name == "sandbox" {
		err = serveSandbox(ctx, o, stdout)
	} else if err == nil {
		human := map[bool]io.Writer{false: stdout, true: stderr}[o.json]
		var t *dlq.Tool
		var tg *dlq.Target
		if t, err = o.tool(ctx, human, stderr); err == nil && o.fromFile == "" {
			tg, err = t.Resolve(ctx, o.queue, o.env)
		}
		if err == nil {
			result, err = c.run(ctx, o, t, tg)
		}
	}
	if o.json && result != nil {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		err = cmp.Or(err, enc.Encode(result))
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "mf-dlq %s: %v\n", c.name, err)
	for sentinel, code := range map[error]int{dlq.ErrUsage: exitUsage, dlq.ErrEmpty: exitEmpty, dlq.ErrRefused: exitRefused, dlq.ErrNotVerified: exitNotVerified} {
		if errors.Is(err, sentinel) {
			return code
		}
	}
	return exitError
}

// tool builds the AWS clients; the text for a person goes to out.
func (o *opts) tool(ctx context.Context, out, log io.Writer) (*dlq.Tool, error) {
	var cfgOpts []func(*config.LoadOptions) error
	if o.profile != "" {
		cfgOpts = append(cfgOpts, config.WithSharedConfigProfile(o.profile))
	}
	if o.region != "" {
		cfgOpts = append(cfgOpts, config.WithRegion(o.region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, cfgOpts...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	} else if cfg.Region == "" && o.fromFile == "" {
		return nil, fmt.Errorf("%w: no AWS region: pass --region or set AWS_REGION (the stacks deploy to eu-west-1)", dlq.ErrUsage)
	}
	cfg.HTTPClient = lambdaenv.SDKHTTPClient(cfg.HTTPClient)
	if o.endpoint != "" {
		cfg.BaseEndpoint = &o.endpoint
	}
	t := &dlq.Tool{SQS: sqs.NewFromConfig(cfg), Lambda: lambda.NewFromConfig(cfg), CloudWatch: cloudwatch.NewFromConfig(cfg), Clock: retry.SystemClock, Out: out, Log: log}
	for _, f := range [][2]string{{"--endpoint-url", o.endpoint}, {"--profile", o.profile}, {"--region", o.region}} {
		if f[1] != "" {
			t.Connection = append(t.Connection, f[0], f[1])
		}
	}
	return t, nil
}

func contain(ctx context.Context, o *opts, t *dlq.Tool, tg *dlq.Target) (any, error) {
	if o.disable && o.enable {
		return nil, fmt.Errorf("%w: --disable-consumer and --enable-consumer together", dlq.ErrUsage)
	} else if o.disable || o.enable {
		return t.Contain(ctx, tg, o.window, o.samples, &o.enable)
	}
	return t.Contain(ctx, tg, o.window, o.samples, nil)
}

func inspect(ctx context.Context, o *opts, t *dlq.Tool, tg *dlq.Target) (any, error) {
	if o.save == "" {
		return t.Inspect(ctx, tg, o.n, nil)
	}
	f, err := os.OpenFile(o.save, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--save: %w (the file must not exist: DLQ messages carry customer data)", err)
	}
	defer f.Close()
	rows, err := t.Inspect(ctx, tg, o.n, f)
	if err == nil {
		if err = f.Close(); err == nil {
			fmt.Fprintf(t.Log, "saved %d messages to %s (mode 0600: it holds customer data)\n", len(rows), o.save)
		}
	}
	return rows, err
}

func classify(ctx context.Context, o *opts, t *dlq.Tool, tg *dlq.Target) (any, error) {
	if tg != nil {
		opts, err := o.expectations(dlq.ConsumerOptions(tg))
		if err != nil {
			return nil, err
		}
		report, err := t.Classify(ctx, tg, cmp.Or(o.max, 1000), opts)
		if err == nil {
			dlq.PrintReport(t.Out, tg.DLQ.Name, report, t.Command)
		}
		return report, err
	}
	// The expectations of the queue named, else of the order queue's
	// consumer (the DLQs this tool is for carry PedidoConfirmado events).
	q, _, ok := catalog.Find(cmp.Or(o.queue, "Pedidos"))
	if !ok || o.queue != "" && o.env == "" {
		return nil, fmt.Errorf("%w: with --from-file, QUEUE only selects the consumer's expectations: a logical name with -e", dlq.ErrUsage)
	}
	opts, err := o.expectations(dlq.ConsumerOptions(&dlq.Target{Catalog: &q}))
	if err != nil {
		return nil, err
	}
	f, err := os.Open(o.fromFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	msgs, err := dlq.ReadMessages(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.fromFile, err)
	} else if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: %s holds no message", dlq.ErrEmpty, o.fromFile)
	}
	report := dlq.Classify(msgs, opts)
	dlq.PrintReport(t.Out, o.fromFile, report, nil)
	return report, nil
}

// expectations overrides the consumer's accepted versions and required
// keys with --accept-versions and --required-keys.
func (o *opts) expectations(opts dlq.Options) (dlq.Options, error) {
	if o.accept != "" {
		opts.SupportedVersions = nil
		for _, p := range strings.Split(o.accept, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || n < 0 {
				return opts, fmt.Errorf("%w: %q: want comma-separated major versions", dlq.ErrUsage, o.accept)
			}
			opts.SupportedVersions = append(opts.SupportedVersions, n)
		}
	}
	if o.required == "-" {
		opts.RequiredKeys = nil
	} else if o.required != "" {
		opts.RequiredKeys = strings.Split(o.required, ",")
	}
	return opts, nil
}

func redrive(ctx context.Context, o *opts, t *dlq.Tool, tg *dlq.Target) (any, error) {
	ro := dlq.RedriveOptions{ConfirmFixed: o.confirm, DryRun: o.dryRun, ReadmitExpired: o.readmit, Rate: o.rate, Max: o.max, To: o.to, Reason: o.reason, Version: o.version}
	if o.rate <= 0 { // the library's default rate is for callers that give none
		return nil, fmt.Errorf("%w: --rate %v: want messages per second in (0, %d]", dlq.ErrUsage, o.rate, dlq.MaxRate)
	}
	for _, p := range strings.Split(o.only, ",") {
		if v := dlq.Verdict(strings.ToLower(strings.TrimSpace(p))); slices.Contains([]dlq.Verdict{dlq.Transient, dlq.Data, dlq.Poison, dlq.Expired}, v) {
			ro.Only = append(ro.Only, v)
		} else if o.only != "" {
			return nil, fmt.Errorf("%w: --only %q: want a comma-separated list of transient, data, poison, expired", dlq.ErrUsage, o.only)
		}
	}
	return t.Redrive(ctx, tg, ro)
}

func verify(ctx context.Context, o *opts, t *dlq.Tool, tg *dlq.Target) (any, error) {
	since := t.Clock.Now().Add(-time.Hour)
	if ts, err := time.Parse(time.RFC3339, o.since); err == nil {
		since = ts
	} else if d, err := time.ParseDuration(o.since); err == nil && d > 0 {
		since = t.Clock.Now().Add(-d)
	} else if o.since != "" {
		return nil, fmt.Errorf("%w: --since %q: want an RFC 3339 time or a duration", dlq.ErrUsage, o.since)
	}
	return t.Verify(ctx, tg, o.expect, since, o.window)
}
