// Command outbox-limpieza is the Lambda function that deletes outbox rows
// published more than 7 days ago, in bounded batches, once a day (an
// EventBridge Scheduler schedule). Unpublished and parked rows are never
// deleted. It stops a few seconds before its timeout; what is left goes
// the next day. It writes DeletedEvents and the outbox gauges as EMF.
//
// Environment: DB_HOST (RDS Proxy endpoint), DB_PORT, DB_NAME, DB_USER (IAM
// authentication; see postgres.FromEnv), ENTORNO, RETENTION_DAYS (default 7),
// BATCH_SIZE (default 1000), AWS_MAX_ATTEMPTS, LOG_LEVEL.
package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/metrics"
	"github.com/mercadofresco/integration/lambdas/outbox"
	"github.com/mercadofresco/integration/lambdas/outbox/outboxapi"
	"github.com/mercadofresco/integration/lambdas/postgres"
)

// Resultado is what one invocation did.
type Resultado struct {
	Borrados int64 `json:"borrados"`
}

// stopMargin is kept free before the Lambda deadline: the batch in flight
// finishes and the metrics are written.
const stopMargin = 5 * time.Second

type handler struct {
	// margin is kept free before the Lambda deadline (stopMargin).
	margin  time.Duration
	db      outbox.DB
	cfg     outbox.CleanupConfig
	metrics metrics.Emitter
	log     *slog.Logger
}

func (h *handler) handle(ctx context.Context) (Resultado, error) {
	runCtx := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithDeadline(ctx, d.Add(-h.margin))
		defer cancel()
	}
	n, err := outbox.Cleanup(runCtx, h.db, h.cfg)
	if err != nil && runCtx.Err() != nil && ctx.Err() == nil {
		// Stopped at the margin, as planned: the rest goes tomorrow.
		h.log.Info("outbox cleanup stopped before the deadline", "borrados", n)
		err = nil
	}
	ms := []metrics.Metric{{Name: outboxapi.MetricDeleted, Unit: metrics.UnitCount, Value: float64(n)}}
	if g, gerr := outbox.ReadGauges(ctx, h.db); gerr == nil {
		ms = append(ms, g.Metrics()...)
	}
	if merr := h.metrics.Write(ms...); merr != nil {
		h.log.Warn("outbox-cleanup metrics", "error", merr)
	}
	h.log.Info("outbox cleanup", "borrados", n, "error", err)
	return Resultado{Borrados: n}, err
}

// settings reads the cleanup's own variables.
func settings(env *lambdaenv.Env) outbox.CleanupConfig {
	return outbox.CleanupConfig{
		Retention: time.Duration(env.Int("RETENTION_DAYS", 7, 1, 3650)) * 24 * time.Hour,
		BatchSize: env.Int("BATCH_SIZE", 1000, 1, 100000),
	}
}

func main() {
	env := lambdaenv.New(os.Getenv)
	log := env.Logger("outbox-cleanup")
	ctx := context.Background()
	fail := func(err error) { log.Error("outbox-cleanup: cannot start", "error", err); os.Exit(1) }
	cfg := settings(env)
	awsCfg, err := env.LoadAWSConfig(ctx)
	if err != nil {
		fail(err)
	}
	pool, err := postgres.FromEnv(ctx, env, awsCfg, secretsmanager.NewFromConfig(awsCfg),
		postgres.ConnectConfig{MaxConns: 1, ApplicationName: "mf-outbox-cleanup"})
	if err != nil {
		fail(err)
	}
	h := &handler{
		margin:  stopMargin,
		db:      pool,
		cfg:     cfg,
		metrics: metrics.ForEnvironment(os.Stdout, env.String("ENTORNO", "")),
		log:     log,
	}
	lambda.Start(h.handle)
}
