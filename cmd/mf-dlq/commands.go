package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq/classify"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq/dataset"
	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/retry"
)

type command func(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error)

var commands = map[string]command{
	"contain":  cmdContain,
	"inspect":  cmdInspect,
	"classify": cmdClassify,
	"redrive":  cmdRedrive,
	"verify":   cmdVerify,
	"gen":      cmdGen,
	"sandbox":  cmdSandbox,
}

// common are the flags every AWS command takes.
type common struct {
	profile, region, endpoint, env string
	json                           bool
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.profile, "profile", "", "AWS shared-config profile")
	fs.StringVar(&c.region, "region", "", "AWS region (default: the profile's or AWS_REGION)")
	fs.StringVar(&c.endpoint, "endpoint-url", "", "endpoint for SQS, Lambda and CloudWatch (a local emulator such as mf-dlq sandbox)")
	fs.StringVar(&c.env, "e", "", "environment (dev, staging, prod) of a logical or catalogue queue name")
	fs.StringVar(&c.env, "env", "", "same as -e")
	registerJSON(fs, &c.json)
}

func registerJSON(fs *flag.FlagSet, v *bool) {
	fs.BoolVar(v, "json", false, "print the result as JSON on stdout (the text for a person goes to stderr)")
}

// connection are the given flags that choose where the commands go; the
// tool repeats them in every command it suggests.
func (c *common) connection() []string {
	var out []string
	for _, f := range []struct{ name, v string }{{"--endpoint-url", c.endpoint}, {"--profile", c.profile}, {"--region", c.region}} {
		if f.v != "" {
			out = append(out, f.name, f.v)
		}
	}
	return out
}

// human is where the text for a person goes: stdout, or stderr with --json.
func human(asJSON bool, stdout, stderr io.Writer) io.Writer {
	if asJSON {
		return stderr
	}
	return stdout
}

// emit prints v as indented JSON.
func emit(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// helpRequested is returned by parse for -h/--help: run prints the
// command's usage and flags to stdout and exits 0.
type helpRequested struct{ fs *flag.FlagSet }

func (helpRequested) Error() string { return "help requested" }

// synopses are the commands' usage lines (see usage).
var synopses = map[string]string{
	"contain":  "QUEUE [--window 30s] [--samples 4] [--disable-consumer | --enable-consumer]",
	"inspect":  "QUEUE [-n 10] [--save FILE]",
	"classify": "QUEUE | --from-file FILE [--max 1000] [--accept-versions 1] [--required-keys k1,k2]",
	"redrive":  "QUEUE --confirm-fixed [--only transient] [--reason TEXT] [--version N] [--rate 10] [--max N] [--dry-run] [--to QUEUE] [--mode auto|task|loop] [--readmit-expired]",
	"verify":   "QUEUE [--expect N --since TIME] [--window 30s]",
	"gen":      "--scenario NAME [--seed N] [--end TIME]",
	"sandbox":  "[--scenario NAME] [--seed N] [-e dev] [--listen 127.0.0.1:0] [--consumer-accepts 1,2]",
}

func printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: mf-dlq %s %s\n\nflags:\n", fs.Name(), synopses[fs.Name()])
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintf(w, "\nRunbook: docs/runbooks/dlq.md. Exit codes: mf-dlq --help.\n")
}

// parse parses args allowing flags before and after the one positional
// argument (the queue). It returns the positional, or "".
func parse(fs *flag.FlagSet, args []string) (string, error) {
	fs.SetOutput(io.Discard)
	wrap := func(err error) error {
		if errors.Is(err, flag.ErrHelp) {
			return helpRequested{fs}
		}
		return fmt.Errorf("%w: %w (mf-dlq %s --help lists the flags)", dlq.ErrUsage, err, fs.Name())
	}
	if err := fs.Parse(args); err != nil {
		return "", wrap(err)
	}
	pos := ""
	rest := fs.Args()
	if len(rest) > 0 {
		pos = rest[0]
		if err := fs.Parse(rest[1:]); err != nil {
			return "", wrap(err)
		}
		if fs.NArg() > 0 {
			return "", fmt.Errorf("%w: unexpected arguments %q", dlq.ErrUsage, fs.Args())
		}
	}
	return pos, nil
}

// tool builds the AWS clients.
func (c *common) tool(ctx context.Context, stdout, stderr io.Writer) (*dlq.Tool, error) {
	var opts []func(*config.LoadOptions) error
	if c.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(c.profile))
	}
	if c.region != "" {
		opts = append(opts, config.WithRegion(c.region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	cfg.HTTPClient = lambdaenv.SDKHTTPClient(cfg.HTTPClient)
	if cfg.Region == "" {
		return nil, fmt.Errorf("%w: no AWS region: pass --region or set AWS_REGION (the stacks deploy to eu-west-1)", dlq.ErrUsage)
	}
	var endpoint *string
	if c.endpoint != "" {
		endpoint = aws.String(c.endpoint)
	}
	clock := retry.SystemClock
	return &dlq.Tool{
		SQS:        sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = endpoint }),
		Lambda:     dlq.LambdaMappings{API: lambda.NewFromConfig(cfg, func(o *lambda.Options) { o.BaseEndpoint = endpoint })},
		Metrics:    dlq.CloudWatchMetrics{API: cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) { o.BaseEndpoint = endpoint }), Clock: clock},
		Clock:      clock,
		Out:        human(c.json, stdout, stderr),
		Log:        stderr,
		Connection: c.connection(),
	}, nil
}

// resolve builds the tool and resolves the queue.
func (c *common) resolve(ctx context.Context, spec string, stdout, stderr io.Writer) (*dlq.Tool, *dlq.Target, error) {
	t, err := c.tool(ctx, stdout, stderr)
	if err != nil {
		return nil, nil, err
	}
	tg, err := t.Resolve(ctx, spec, c.env)
	if err != nil {
		return nil, nil, err
	}
	return t, tg, nil
}

// target parses the common flags, builds the tool and resolves the queue.
func target(ctx context.Context, fs *flag.FlagSet, c *common, args []string, stdout, stderr io.Writer) (*dlq.Tool, *dlq.Target, error) {
	spec, err := parse(fs, args)
	if err != nil {
		return nil, nil, err
	}
	return c.resolve(ctx, spec, stdout, stderr)
}

// result prints v as JSON when asked, and passes err on.
func result(c *common, stdout io.Writer, v any, err error) (int, error) {
	if c.json {
		if jerr := emit(stdout, v); jerr != nil && err == nil {
			err = jerr
		}
	}
	return exitOK, err
}

func cmdContain(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("contain", flag.ContinueOnError)
	var c common
	c.register(fs)
	var o dlq.ContainOptions
	fs.DurationVar(&o.Window, "window", 30*time.Second, "how long to sample the DLQ depth")
	fs.IntVar(&o.Samples, "samples", 4, "how many samples over the window (at least 2)")
	fs.BoolVar(&o.Disable, "disable-consumer", false, "disable the source queue's Lambda event source mapping(s)")
	fs.BoolVar(&o.Enable, "enable-consumer", false, "enable them again")
	t, tg, err := target(ctx, fs, &c, args, stdout, stderr)
	if err != nil {
		return 0, err
	}
	res, err := t.Contain(ctx, tg, o)
	return result(&c, stdout, res, err)
}

func cmdInspect(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	var c common
	c.register(fs)
	var o dlq.InspectOptions
	save := fs.String("save", "", "also write the raw messages to FILE as JSON lines (aws sqs receive-message shape)")
	fs.IntVar(&o.Max, "n", dlq.DefaultInspectCount, "number of messages to look at")
	t, tg, err := target(ctx, fs, &c, args, stdout, stderr)
	if err != nil {
		return 0, err
	}
	var f *os.File
	if *save != "" {
		if f, err = os.OpenFile(*save, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
			return 0, fmt.Errorf("--save: %w (the file must not exist: DLQ messages carry customer data)", err)
		}
		defer f.Close()
		o.Save = f
	}
	msgs, err := t.Inspect(ctx, tg, o)
	if err == nil && f != nil {
		if err = f.Close(); err == nil {
			fmt.Fprintf(stderr, "saved %d messages to %s (mode 0600: it holds customer data)\n", len(msgs), *save)
		}
	}
	if err != nil {
		return 0, err
	}
	return result(&c, stdout, dlq.Rows(msgs), nil)
}

func cmdClassify(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("classify", flag.ContinueOnError)
	var c common
	c.register(fs)
	fromFile := fs.String("from-file", "", "classify saved messages (JSON lines from inspect --save, or aws sqs receive-message output) instead of the live DLQ")
	accept := fs.String("accept-versions", "", "override the major versions the consumer accepts (default: its declared ones, eventsapi.AcceptedVersions through config/catalog)")
	required := fs.String("required-keys", "", "keys the consumer requires (default: the queue's consumer's)")
	max := fs.Int("max", 1000, "most messages received from a live DLQ (progress on stderr every 100)")
	spec, err := parse(fs, args)
	if err != nil {
		return 0, err
	}
	var report classify.Report
	name := spec
	var command func(args ...string) string
	switch {
	case *fromFile != "" && spec != "" && c.env == "":
		return 0, fmt.Errorf("%w: with --from-file, a QUEUE only selects the consumer's expectations and needs -e", dlq.ErrUsage)
	case *fromFile != "":
		opts, err := fileOptions(spec, *accept, *required)
		if err != nil {
			return 0, err
		}
		f, err := os.Open(*fromFile)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		msgs, err := dlq.ReadMessages(f)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", *fromFile, err)
		}
		if len(msgs) == 0 {
			return 0, fmt.Errorf("%w: %s holds no message", dlq.ErrEmpty, *fromFile)
		}
		name = *fromFile
		report = classify.Classify(msgs, opts)
	default:
		t, tg, err := c.resolve(ctx, spec, stdout, stderr)
		if err != nil {
			return 0, err
		}
		o := dlq.ClassifyOptions{Options: dlq.ConsumerOptions(tg), Max: *max}
		if err := override(&o.Options, *accept, *required); err != nil {
			return 0, err
		}
		if report, err = t.Classify(ctx, tg, o); err != nil {
			return 0, err
		}
		name, command = tg.DLQ.Name, t.Command
	}
	if c.json {
		if err := emit(stdout, report); err != nil {
			return 0, err
		}
	} else {
		dlq.PrintReport(stdout, name, report, command)
		fmt.Fprintf(stdout, "\nexit code %d (%s)\n", verdictExit[report.Verdict], report.Verdict)
	}
	return verdictExit[report.Verdict], nil
}

// fileOptions picks the consumer's expectations for offline classification:
// the queue spec names, else the order queue's consumer (the DLQs this tool
// is for carry PedidoConfirmado events).
func fileOptions(spec, accept, required string) (classify.Options, error) {
	q, _, ok := catalog.Find(cmp.Or(spec, "Pedidos"))
	if !ok {
		return classify.Options{}, fmt.Errorf("%w: %q is not a queue of the Messaging stack", dlq.ErrUsage, spec)
	}
	o := dlq.ConsumerOptions(&dlq.Target{Catalog: &q})
	return o, override(&o, accept, required)
}

func override(o *classify.Options, accept, required string) error {
	if accept != "" {
		o.AcceptedVersions = nil
		for _, p := range strings.Split(accept, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || n < 0 {
				return fmt.Errorf("%w: --accept-versions %q: want comma-separated major versions", dlq.ErrUsage, accept)
			}
			o.AcceptedVersions = append(o.AcceptedVersions, n)
		}
	}
	if required != "" {
		o.RequiredKeys = strings.Split(required, ",")
		if required == "-" {
			o.RequiredKeys = nil
		}
	}
	return nil
}

func cmdRedrive(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("redrive", flag.ContinueOnError)
	var c common
	c.register(fs)
	var o dlq.RedriveOptions
	fs.BoolVar(&o.ConfirmFixed, "confirm-fixed", false, "state that the cause is fixed (runbook step 4); required")
	fs.Float64Var(&o.Rate, "rate", dlq.DefaultRate, "messages per second, in (0, 500]; a fractional rate runs the receive/send/delete loop")
	fs.BoolVar(&o.DryRun, "dry-run", false, "print the plan (counts per verdict and destination), move nothing")
	fs.IntVar(&o.Max, "max", 0, "move at most this many messages (forces the receive/send/delete loop)")
	fs.StringVar(&o.To, "to", "", "send every message to this queue (name or URL) instead of its source")
	fs.StringVar(&o.Mode, "mode", dlq.ModeAuto, "auto, task (SQS move task) or loop (receive/send/delete)")
	fs.BoolVar(&o.ReadmitExpired, "readmit-expired", false, "also redrive the messages older than their consumer's replay window, marked re-admitted: you state that, for each, the side effect did not happen (docs/runbooks/dlq.md#expired-messages)")
	only := fs.String("only", "", "move only the messages of these classify verdicts (transient, data, poison, expired; comma-separated); without it, poison or data messages make the redrive refuse")
	fs.StringVar(&o.Reason, "reason", "", "move only the messages whose consumer reason or classify finding contains TEXT")
	fs.StringVar(&o.Version, "version", "", "move only the messages of this schema version")
	spec, err := parse(fs, args)
	if err != nil {
		return 0, err
	}
	if o.Rate <= 0 || math.IsNaN(o.Rate) || o.Rate > dlq.MaxMoveRate {
		return 0, fmt.Errorf("%w: --rate %v: want messages per second in (0, %d]", dlq.ErrUsage, o.Rate, dlq.MaxMoveRate)
	}
	if *only != "" {
		if o.Only, err = dlq.ParseVerdicts(*only); err != nil {
			return 0, err
		}
	}
	t, tg, err := c.resolve(ctx, spec, stdout, stderr)
	if err != nil {
		return 0, err
	}
	res, err := t.Redrive(ctx, tg, o)
	return result(&c, stdout, res, err)
}

func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	var c common
	c.register(fs)
	var o dlq.VerifyOptions
	fs.IntVar(&o.Expect, "expect", 0, "messages redriven (the sources' NumberOfMessagesDeleted must reach it)")
	since := fs.String("since", "", "start of the redrive: RFC 3339 time or a duration ago (45m); default 1h ago")
	fs.DurationVar(&o.Window, "window", 30*time.Second, "how long to watch a source backlog that is not empty")
	t, tg, err := target(ctx, fs, &c, args, stdout, stderr)
	if err != nil {
		return 0, err
	}
	if *since != "" {
		if ts, err := time.Parse(time.RFC3339, *since); err == nil {
			o.Since = ts
		} else if d, err := time.ParseDuration(*since); err == nil && d > 0 {
			o.Since = t.Clock.Now().Add(-d)
		} else {
			return 0, fmt.Errorf("%w: --since %q: want an RFC 3339 time or a duration", dlq.ErrUsage, *since)
		}
	}
	res, err := t.Verify(ctx, tg, o)
	return result(&c, stdout, res, err)
}

func cmdGen(_ context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	scenario := fs.String("scenario", "", "one of "+strings.Join(dataset.Scenarios, ", "))
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "random seed (printed; pass it again to reproduce)")
	end := fs.String("end", "2026-11-30T07:00:00Z", "the data set ends before this time (RFC 3339)")
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "print one receive-message document {\"Messages\": [...]} instead of JSON lines (classify --from-file reads both)")
	if _, err := parse(fs, args); err != nil {
		return 0, err
	}
	at, err := time.Parse(time.RFC3339, *end)
	if err != nil {
		return 0, fmt.Errorf("%w: --end: %w", dlq.ErrUsage, err)
	}
	msgs, err := dataset.Generate(*scenario, *seed, at, dataset.DefaultTopology)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", dlq.ErrUsage, err)
	}
	fmt.Fprintf(stderr, "scenario %s, seed %d: %d messages\n", *scenario, *seed, len(msgs))
	if asJSON {
		return exitOK, dlq.WriteDocument(stdout, msgs)
	}
	return exitOK, dlq.WriteMessages(stdout, msgs)
}
