package outbox

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/metrics"
	"github.com/mercadofresco/integration/lambdas/postgres"
	"github.com/mercadofresco/integration/lambdas/signing"
)

// PublisherResult is what one publisher invocation did (the Lambda
// response).
type PublisherResult struct {
	Reclamados int `json:"reclamados"`
	Publicados int `json:"publicados"`
	Fallidos   int `json:"fallidos"`
	Aparcados  int `json:"aparcados"`
}

// PublisherHandler is the outbox-publicador function: Handle is one
// scheduled invocation, which publishes until margin before its deadline
// (lambdaapi.PublisherStopMargin; docs/design.md#outbox).
type PublisherHandler struct {
	pub    *Publisher
	margin time.Duration
}

// PublisherFunction builds the publisher's handler from the function's
// environment with real clients (the outbox-publicador main; the
// end-to-end run's publisher sandboxes): BUS_NAME, EVENT_SOURCE, ENTORNO,
// OUTBOX_ENTRY_ATTEMPTS, OUTBOX_MAX_CLAIMS, SIGNING_SECRET_ARN (the key
// that signs every PedidoCreado: ChargeSigner) and the database's
// variables (postgres.Open, role mf_publicador).
func PublisherFunction(ctx context.Context, env *lambdaenv.Env, log *slog.Logger) (func(context.Context) (PublisherResult, error), error) {
	bus := env.Required(lambdaapi.EnvBusName)
	source := env.Required(lambdaapi.EnvEventSource)
	entorno := env.String(lambdaapi.EnvEnvironment, "")
	entryAttempts := env.Int(lambdaapi.EnvOutboxEntryAttempts, lambdaapi.DefaultOutboxEntryAttempts, 2, 5)
	maxClaims := env.Int(lambdaapi.EnvOutboxMaxClaims, lambdaapi.DefaultOutboxMaxClaims, 1, 10)
	signingSecret := env.Required(signing.EnvSecretARN)
	pool, awsCfg, err := postgres.Open(ctx, env, postgres.ConnectConfig{ApplicationName: "mf-outbox-publisher"})
	if err != nil {
		return nil, err
	}
	keys, err := signing.NewSecretSource(secretsmanager.NewFromConfig(awsCfg), signingSecret, nil)
	if err != nil {
		return nil, err
	}
	cfg := DeployedConfig(bus, source, entryAttempts, maxClaims, keys)
	cfg.Metrics, cfg.Logger = metrics.ForEnvironment(os.Stdout, entorno), log
	pub, err := NewPublisher(pool, eventbridge.NewFromConfig(awsCfg), cfg)
	if err != nil {
		return nil, err
	}
	return (&PublisherHandler{pub: pub, margin: lambdaapi.PublisherStopMargin}).Handle, nil
}

// DeployedConfig is the publisher's Config as PublisherFunction builds it
// (the outbox benchmark's as-deployed run uses it too): lambdaapi's lease,
// publish timeout and retry delay, entryAttempts sends of an entry per
// claim, maxClaims claims of a row, every PedidoCreado signed with keys.
func DeployedConfig(bus, source string, entryAttempts, maxClaims int, keys ChargeKeys) Config {
	return Config{BusName: bus, Source: source,
		Lease: lambdaapi.PublisherLease, PublishTimeout: lambdaapi.PublishTimeout, RetryBaseDelay: lambdaapi.PublisherRetryBaseDelay,
		EntryRetries: entryAttempts - 1, MaxAttempts: maxClaims, Signer: ChargeSigner{Keys: keys}}
}

// runContext ends margin before the Lambda deadline (or a minute from now
// without one).
func runContext(ctx context.Context, margin time.Duration) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	return context.WithDeadline(ctx, deadline.Add(-margin))
}

// Handle is one invocation: publish until margin before the deadline. A
// publisher whose every round failed fails the invocation.
func (h *PublisherHandler) Handle(ctx context.Context) (PublisherResult, error) {
	runCtx, cancel := runContext(ctx, h.margin)
	defer cancel()
	before := h.pub.Totals()
	if err := h.pub.Run(runCtx, nil); err != nil {
		return PublisherResult{}, err
	}
	after := h.pub.Totals()
	return PublisherResult{
		Reclamados: after.Claimed - before.Claimed,
		Publicados: after.Published - before.Published,
		Fallidos:   after.Failed - before.Failed,
		Aparcados:  after.Parked - before.Parked,
	}, nil
}

// CleanupResult is what one cleanup invocation did.
type CleanupResult struct {
	Borrados int64 `json:"borrados"`
}

// cleanupStopMargin is kept free before the cleanup's deadline: the batch
// in flight finishes and the metrics are written.
const cleanupStopMargin = 5 * time.Second

// CleanupHandler is the outbox-limpieza function: Handle deletes the rows
// published more than the retention ago (Cleanup), stops cleanupStopMargin
// before its deadline (the rest goes the next day) and writes
// DeletedEvents and the outbox gauges.
type CleanupHandler struct {
	margin  time.Duration
	db      DB
	cfg     CleanupConfig
	metrics metrics.Emitter
	log     *slog.Logger
}

// CleanupSettings reads the cleanup's own variables (RETENTION_DAYS,
// BATCH_SIZE); problems are recorded in env.
func CleanupSettings(env *lambdaenv.Env) CleanupConfig {
	return CleanupConfig{
		Retention: time.Duration(env.Int(lambdaapi.EnvRetentionDays, 7, 1, 3650)) * 24 * time.Hour,
		BatchSize: env.Int(lambdaapi.EnvBatchSize, 1000, 1, 100000),
	}
}

// CleanupFunction builds the cleanup's handler from the function's
// environment with real clients (the outbox-limpieza main): ENTORNO, the
// CleanupSettings and the database's variables (role mf_limpieza).
func CleanupFunction(ctx context.Context, env *lambdaenv.Env, log *slog.Logger) (func(context.Context) (CleanupResult, error), error) {
	cfg := CleanupSettings(env)
	pool, _, err := postgres.Open(ctx, env, postgres.ConnectConfig{ApplicationName: "mf-outbox-cleanup"})
	if err != nil {
		return nil, err
	}
	h := &CleanupHandler{margin: cleanupStopMargin, db: pool, cfg: cfg, log: log,
		metrics: metrics.ForEnvironment(os.Stdout, env.String(lambdaapi.EnvEnvironment, ""))}
	return h.Handle, nil
}

// Handle is one invocation.
func (h *CleanupHandler) Handle(ctx context.Context) (CleanupResult, error) {
	runCtx := ctx
	if _, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		runCtx, cancel = runContext(ctx, h.margin)
		defer cancel()
	}
	n, err := Cleanup(runCtx, h.db, h.cfg)
	if err != nil && runCtx.Err() != nil && ctx.Err() == nil {
		// Stopped at the margin, as planned: the rest goes tomorrow.
		h.log.Info("outbox cleanup stopped before the deadline", "borrados", n)
		err = nil
	}
	ms := []metrics.Metric{{Name: lambdaapi.MetricOutboxDeleted, Unit: metrics.UnitCount, Value: float64(n)}}
	if g, gerr := ReadGauges(ctx, h.db); gerr == nil {
		ms = append(ms, g.Metrics()...)
	}
	if merr := h.metrics.Write(ms...); merr != nil {
		h.log.Warn("outbox-cleanup metrics", "error", merr)
	}
	h.log.Info("outbox cleanup", "borrados", n, "error", err)
	return CleanupResult{Borrados: n}, err
}
