// Package publisherfn is the outbox publisher Lambda function (the main is
// lambdas/outbox-publicador): the function that moves outbox rows to
// bus-mercadofresco. An EventBridge Scheduler schedule invokes it every
// minute; each invocation polls about every second (Publisher.Run) for
// outboxapi.PublisherPollWindow (80 s) and stops claiming StopMargin (20 s)
// before its 100 s timeout, so consecutive invocations overlap by 20 s and a
// publisher is always polling (commit-to-bus lag ~1 s around the clock; the
// lease and SKIP LOCKED keep the two from publishing the same row). It
// connects through RDS Proxy with IAM authentication as its own database
// role (DB_USER, mf_publicador), which may read the outbox and update its
// bookkeeping columns only: it applies no migration (the deploy does,
// lambdas/outbox-migraciones) and could not.
//
// Attempts per event on EventBridge: AWS_MAX_ATTEMPTS (SDK, 2) x
// OUTBOX_ENTRY_ATTEMPTS (sends of a failed entry in one claim, 2) x
// OUTBOX_MAX_CLAIMS (claims before a rejected event is parked, 3) = 12,
// counted per event across invocations (the claims are in the row). A
// claim whose PutEvents call failed as a whole (the bus unreachable,
// throttling past the SDK's attempts) is refunded so that an outage delays
// events but never parks them; such claims are paced by the row's growing
// jittered lease (RetryBaseDelay 1 s, cap 2 min), which bounds the load on
// EventBridge by time, not by a count (docs/design.md#outbox-lag).
//
// Environment: DB_HOST (RDS Proxy endpoint), DB_PORT, DB_NAME, DB_USER (IAM
// authentication; see postgres.FromEnv), BUS_NAME, EVENT_SOURCE, ENTORNO
// (metric dimension), AWS_MAX_ATTEMPTS, OUTBOX_ENTRY_ATTEMPTS (default 2,
// 2..5), OUTBOX_MAX_CLAIMS (default 3, 1..10).
package publisherfn

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/metrics"
	"github.com/mercadofresco/integration/lambdas/outbox"
	"github.com/mercadofresco/integration/lambdas/outbox/outboxapi"
	"github.com/mercadofresco/integration/lambdas/postgres"
)

// Resultado is what one invocation did (visible in the Lambda response and
// logs).
type Resultado struct {
	Reclamados int `json:"reclamados"`
	Publicados int `json:"publicados"`
	Fallidos   int `json:"fallidos"`
	Aparcados  int `json:"aparcados"`
}

// Handler is the publisher function: one Handle per scheduled invocation.
type Handler struct {
	pool *pgxpool.Pool
	pub  *outbox.Publisher
	// margin is kept free at the end of the invocation: the round in flight
	// (PublishTimeout) plus the final marks and the metrics flush.
	margin time.Duration
}

// runContext is the context of one invocation's publishing: it ends margin
// before the Lambda deadline (or a minute from now without one).
func (h *Handler) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	return context.WithDeadline(ctx, deadline.Add(-h.margin))
}

// Handle is one invocation: publish until StopMargin before the deadline.
func (h *Handler) Handle(ctx context.Context) (Resultado, error) {
	runCtx, cancel := h.runContext(ctx)
	defer cancel()
	before := h.pub.Totals()
	if err := h.pub.Run(runCtx, nil); err != nil {
		return Resultado{}, err
	}
	after := h.pub.Totals()
	return Resultado{
		Reclamados: after.Claimed - before.Claimed,
		Publicados: after.Published - before.Published,
		Fallidos:   after.Failed - before.Failed,
		Aparcados:  after.Parked - before.Parked,
	}, nil
}

// FromEnv builds the handler from the function's environment with real
// clients, as the main does (the end-to-end run builds it in-process).
func FromEnv(ctx context.Context, env *lambdaenv.Env, log *slog.Logger) (*Handler, error) {
	bus := env.Required("BUS_NAME")
	source := env.Required("EVENT_SOURCE")
	entorno := env.String("ENTORNO", "")
	entryAttempts := env.Int(outboxapi.EnvEntryAttempts, outboxapi.DefaultEntryAttempts, 2, 5)
	maxClaims := env.Int(outboxapi.EnvMaxClaims, outboxapi.DefaultMaxClaims, 1, 10)
	awsCfg, err := env.LoadAWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	pool, err := postgres.FromEnv(ctx, env, awsCfg, secretsmanager.NewFromConfig(awsCfg),
		postgres.ConnectConfig{MaxConns: 2, ApplicationName: "mf-outbox-publisher"})
	if err != nil {
		return nil, err
	}
	cfg := outbox.Config{
		BusName: bus,
		Source:  source,
		// 20 s lease, 10 s publish timeout: with the 20 s margin below, an
		// invocation of the 100 s function stops claiming at 80 s and is
		// done by ~92 s; the next minute's invocation started at 60 s.
		Lease:          outboxapi.Lease,
		PublishTimeout: outboxapi.PublishTimeout,
		EntryRetries:   entryAttempts - 1,
		MaxAttempts:    maxClaims,
		RetryBaseDelay: outboxapi.RetryBaseDelay,
		Metrics:        metrics.ForEnvironment(os.Stdout, entorno),
		Logger:         log,
	}
	pub, err := outbox.NewPublisher(pool, eventbridge.NewFromConfig(awsCfg), cfg)
	if err != nil {
		return nil, err
	}
	return &Handler{pool: pool, pub: pub, margin: outboxapi.PublisherStopMargin}, nil
}

// NewHandler is a handler over an existing publisher (tests).
func NewHandler(pool *pgxpool.Pool, pub *outbox.Publisher, margin time.Duration) *Handler {
	return &Handler{pool: pool, pub: pub, margin: margin}
}

// Close releases the database pool.
func (h *Handler) Close() {
	if h.pool != nil {
		h.pool.Close()
	}
}
