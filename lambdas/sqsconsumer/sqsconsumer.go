// Package sqsconsumer is what the project's SQS consumer Lambdas share
// around lambdas/sqsbatch: their settings from the environment (DLQ routes,
// consumer version, batch concurrency, deadline margin, maxReceiveCount, replay
// window); a Runtime that builds the real clients a main needs (SQS, the
// breaker cache, an HTTP dependency with its API key, breaker, retry budget
// and metrics); the pipeline of a consumer that calls a dependency once per
// record ([Steps], [Once]: replay window, idempotency claim, degrade
// [Plan]); and the HTTP consumers [Preparation] and [ERPNotice]. What each
// consumer requires of a message is its entry in lambdas/consumers. A main
// is one line:
//
//	func main() { sqsconsumer.Main("aviso-erp", sqsconsumer.ERPNotice.FromRuntime) }
package sqsconsumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/consumers"
	"github.com/mercadofresco/integration/lambdas/httpdep"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/metrics"
	"github.com/mercadofresco/integration/lambdas/retry"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// Settings are the variables every consumer reads (lambdaapi names).
type Settings struct {
	Environment     string
	DLQRoutes       lambdaapi.DLQRoutes
	ConsumerVersion string
	Concurrency     int
	DeadlineMargin  time.Duration
	// MaxReceiveCount is the source queue's maxReceiveCount (0 when the
	// consumer does not defer messages and the variable is unset).
	MaxReceiveCount int
	// IdempotencyWindow is the consumer's replay window
	// (IDEMPOTENCY_WINDOW; 0 when unset): it refuses events older than
	// this and keeps its idempotency records as long
	// (docs/design.md#replay-windows). The consumers of the fan-out require
	// it (HTTPDeps).
	IdempotencyWindow time.Duration
	// VisibilityTimeout is the source queue's (0 when unset): a failed
	// record comes back after sqsbatch's jitter of it.
	VisibilityTimeout time.Duration
	// Now is the clock of the window; default time.Now.
	Now func() time.Time
	// Rand draws the jitter of a failed record's return (sqsbatch.Config.Rand).
	Rand retry.Rand
}

// Window is the replay window of a consumer of the fan-out's
// PedidoConfirmado (age from confirmado_en), checked against the store
// that records its keys: the window must be set, and the records must live
// at least as long.
func (s Settings) Window(store *idempotency.Store) (sqsbatch.Window, error) {
	w := sqsbatch.Window{Max: s.IdempotencyWindow, CreatedAt: lambdaapi.KeyConfirmadoEn, Now: s.Now}
	if err := w.Validate(); err != nil {
		return w, err
	}
	if store != nil && store.Expiry() < w.Max {
		return w, fmt.Errorf("sqsconsumer: the idempotency records live %s, less than the %s replay window: a duplicate inside the window would run again", store.Expiry(), w.Max)
	}
	return w, nil
}

// LoadSettings reads the common variables; problems are recorded in env
// (and a malformed DLQ_URLS is returned). An unset ConsumerVersion leaves
// sqsbatch's default, the running binary's build id.
func LoadSettings(env *lambdaenv.Env) (Settings, error) {
	s := Settings{
		Environment:       env.Required(lambdaapi.EnvEnvironment),
		ConsumerVersion:   env.String(lambdaapi.EnvConsumerVersion, ""),
		Concurrency:       env.Int(lambdaapi.EnvBatchConcurrency, sqsbatch.DefaultConcurrency, 1, 100),
		DeadlineMargin:    env.Duration(lambdaapi.EnvDeadlineMargin, sqsbatch.DefaultDeadlineMargin, time.Millisecond, time.Minute),
		MaxReceiveCount:   env.Int(lambdaapi.EnvMaxReceiveCount, 0, 0, 1000),
		VisibilityTimeout: env.Duration(lambdaapi.EnvVisibilityTimeout, 0, 0, 12*time.Hour),
		IdempotencyWindow: env.Duration(lambdaapi.EnvIdempotencyWindow, 0, lambdaapi.ReadmissionValidity, 400*24*time.Hour),
	}
	routes, err := lambdaapi.ParseDLQRoutes(env.String(lambdaapi.EnvDLQRoutes, ""))
	s.DLQRoutes = routes
	return s, err
}

// Batch returns a Processor with cfg, completed by these settings where cfg
// leaves a field zero (ConsumerVersion, DLQRoutes, Concurrency,
// DeadlineMargin, ReturnAfter, Rand).
func (s Settings) Batch(cfg sqsbatch.Config) (*sqsbatch.Processor, error) {
	cfg.ConsumerVersion = cmp.Or(cfg.ConsumerVersion, s.ConsumerVersion)
	if len(cfg.DLQRoutes) == 0 {
		cfg.DLQRoutes = s.DLQRoutes
	}
	cfg.Concurrency = cmp.Or(cfg.Concurrency, s.Concurrency)
	cfg.DeadlineMargin = cmp.Or(cfg.DeadlineMargin, s.DeadlineMargin)
	cfg.ReturnAfter = cmp.Or(cfg.ReturnAfter, s.VisibilityTimeout)
	cfg.Rand = cmp.Or(cfg.Rand, s.Rand)
	return sqsbatch.New(cfg)
}

// Runtime is what a consumer's main builds its dependencies from: the
// parsed environment, the AWS SDK configuration (AWS_MAX_ATTEMPTS, see
// lambdaenv), the SQS client and the logger.
//
// A consumer first reads every variable it needs (rt.Env; each problem is
// recorded), then checks rt.Env.Err() (HTTPDeps and Breakers read their
// own, then check), so a misconfigured function lists all its mistakes,
// and only then builds its clients.
type Runtime struct {
	Function string
	Env      *lambdaenv.Env
	Settings Settings
	AWS      aws.Config
	// SQS sends to DLQs and queues and changes visibility.
	SQS *sqs.Client
	Log *slog.Logger

	breakers *breaker.Cache
}

// NewRuntime reads the common settings through env and loads the SDK
// configuration.
func NewRuntime(ctx context.Context, function string, env *lambdaenv.Env) (*Runtime, error) {
	s, err := LoadSettings(env)
	if err != nil {
		return nil, err
	}
	awsCfg, err := env.LoadAWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	log := env.Logger(function)
	if len(s.DLQRoutes) == 0 {
		log.Warn("DLQ_URLS is not set: poison messages will wait for the queue's redrive (maxReceiveCount receives)")
	}
	return &Runtime{Function: function, Env: env, Settings: s, AWS: awsCfg, SQS: sqs.NewFromConfig(awsCfg), Log: log}, nil
}

// Breakers reads the breaker cache's variables (lambdaapi), reports every
// problem recorded so far, and returns the cache (breaker.Cache, opened
// once).
func (r *Runtime) Breakers() (*breaker.Cache, error) {
	if r.breakers != nil {
		return r.breakers, nil
	}
	s, err := breaker.LoadSettings(r.Env)
	if err := errors.Join(r.Env.Err(), err); err != nil {
		return nil, err
	}
	r.breakers = s.Open(r.AWS, r.Settings.Environment, r.Log)
	return r.breakers, nil
}

// HTTPDeps builds what a consumer of one HTTP dependency needs (the
// preparar-pedido, aviso-erp and correo-confirmacion mains): the
// idempotency store on IDEMPOTENCY_TABLE_NAME, its records living as long
// as the replay window (IDEMPOTENCY_WINDOW, required), with a cache of
// completed records so that a duplicate within one warm instance costs no
// DynamoDB call; the dependency's client (<prefix>_* variables: its API key
// from Secrets Manager, its breaker, its retry budget and its metrics); and
// the degrade plan (MAX_RECEIVE_COUNT, required), with the SQS client as
// DLQ sender and visibility changer. Every variable is read before any
// client is built.
func (r *Runtime) HTTPDeps(prefix, name string) (OnceDeps, *httpdep.Client, error) {
	table := r.Env.Required(lambdaapi.EnvIdempotencyTable)
	if r.Settings.IdempotencyWindow == 0 {
		r.Env.Required(lambdaapi.EnvIdempotencyWindow)
	}
	if r.Settings.MaxReceiveCount == 0 {
		r.Env.Required(lambdaapi.EnvMaxReceiveCount)
	}
	dep := httpdep.LoadSettings(r.Env, prefix)
	breakers, err := r.Breakers()
	if err != nil {
		return OnceDeps{}, nil, err
	}
	store, err := idempotency.NewStore(dynamodb.NewFromConfig(r.AWS), idempotency.Config{TableName: table, CacheSize: 1000, Expiry: r.Settings.IdempotencyWindow})
	if err != nil {
		return OnceDeps{}, nil, err
	}
	cfg, err := dep.Config(r.AWS, breakers, httpdep.Config{Name: name, Logger: r.Log})
	if err != nil {
		return OnceDeps{}, nil, err
	}
	client, err := httpdep.New(cfg)
	if err != nil {
		return OnceDeps{}, nil, err
	}
	plan, err := NewPlan(PlanConfig{MaxReceiveCount: r.Settings.MaxReceiveCount, Sender: r.SQS, Logger: r.Log})
	if err != nil {
		return OnceDeps{}, nil, err
	}
	return OnceDeps{Store: store, DLQ: r.SQS, Visibility: r.SQS, Plan: plan, Logger: r.Log}, client, nil
}

// Main is the whole main of a consumer: it builds the runtime from the
// process environment, lets build make the consumer's processor, and
// starts the Lambda runtime with it (lambdaenv.Main).
//
// Every batch is measured first for the queue-wait objective
// (MeasureQueueWait), then by observers (MeasureConfirmations), on
// standard output in EMF (docs/design.md#slo).
func Main(function string, build func(context.Context, *Runtime) (*sqsbatch.Processor, error), observers ...Observer) {
	lambdaenv.Main(function, func(ctx context.Context, env *lambdaenv.Env, log *slog.Logger) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
		p, err := Start(ctx, function, env, build)
		if err != nil {
			return nil, err
		}
		w := metrics.ForEnvironment(os.Stdout, env.String(lambdaapi.EnvEnvironment, ""))
		return Measured(w, log, p.Process, observers...), nil
	})
}

// Observer measures a batch before it is processed, writing to w.
type Observer func(w metrics.Emitter, ev events.SQSEvent) error

// Measured is process preceded by MeasureQueueWait and observers, each
// writing to w. A measurement that fails is logged and never fails the
// batch.
func Measured(w metrics.Emitter, log *slog.Logger, process func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), observers ...Observer) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	all := append([]Observer{MeasureQueueWait}, observers...)
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		for _, o := range all {
			if err := o(w, ev); err != nil {
				log.WarnContext(ctx, "objective measurement not written", slog.Any("error", err))
			}
		}
		return process(ctx, ev)
	}
}

// MeasureQueueWait writes the second objective's record of the batch: its
// messages on their first receive and how long they waited
// (metrics.QueueWaits).
func MeasureQueueWait(w metrics.Emitter, ev events.SQSEvent) error {
	attrs := make([]map[string]string, len(ev.Records))
	for i, r := range ev.Records {
		attrs[i] = r.Attributes
	}
	return metrics.QueueWaits(w, attrs...)
}

// MeasureConfirmations writes the first objective's record of every
// confirmed order of the batch on its first receive
// (metrics.Confirmations): the observer of the one consumer every
// confirmed order reaches once, order preparation.
func MeasureConfirmations(w metrics.Emitter, ev events.SQSEvent) error {
	bodies := make([]string, len(ev.Records))
	attrs := make([]map[string]string, len(ev.Records))
	for i, r := range ev.Records {
		bodies[i], attrs[i] = r.Body, r.Attributes
	}
	return metrics.Confirmations(w, bodies, attrs)
}

// Start builds the consumer's processor as Main does, from env (tests use
// it to check a main's wiring without the Lambda runtime). A function
// missing from the registry (lambdas/consumers) is refused: mf-dlq would
// not know what it requires of a message.
func Start(ctx context.Context, function string, env *lambdaenv.Env, build func(context.Context, *Runtime) (*sqsbatch.Processor, error)) (*sqsbatch.Processor, error) {
	if _, ok := consumers.Find("mf-" + function); !ok {
		return nil, fmt.Errorf("sqsconsumer: %s is not in the consumer registry (lambdas/consumers)", function)
	}
	rt, err := NewRuntime(ctx, function, env)
	if err != nil {
		return nil, err
	}
	p, err := build(ctx, rt)
	if err != nil {
		return nil, err
	}
	return p, rt.Env.Err()
}

// KeyByPedido returns a sqsbatch.Config.IdempotencyKey that derives the
// record's key from its "pedido_id" with key (e.g. idempotency.KeyAvisoERP).
// A body whose pedido_id is not a string is poison.
func KeyByPedido(key func(pedidoID string) (string, error)) func(*sqsbatch.Record) (string, error) {
	return func(rec *sqsbatch.Record) (string, error) {
		var head struct {
			PedidoID string `json:"pedido_id"`
		}
		if err := rec.Decode(&head); err != nil {
			return "", err
		}
		return key(head.PedidoID)
	}
}
