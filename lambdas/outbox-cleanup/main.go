// Command outbox-cleanup is the Lambda function that deletes outbox rows
// published more than 7 days ago, in bounded batches, once a day (an
// EventBridge Scheduler schedule). Unpublished and parked rows are never
// deleted. It stops a few seconds before its timeout; what is left goes
// the next day. It writes DeletedEvents and the outbox gauges as EMF.
//
// Environment: DB_HOST (RDS Proxy endpoint), DB_PORT, DB_NAME, DB_USER (IAM
// authentication; see outbox.ConnectFromEnv), ENTORNO,
// RETENTION_DAYS (default 7), BATCH_SIZE (default 1000).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mercadofresco/integration/lambdas/outbox"
)

// Resultado is what one invocation did.
type Resultado struct {
	Borrados int64 `json:"borrados"`
}

type handler struct {
	db      outbox.DB
	cfg     outbox.CleanupConfig
	metrics *outbox.EMFWriter
	log     *slog.Logger
}

func (h *handler) handle(ctx context.Context) (Resultado, error) {
	runCtx := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithDeadline(ctx, d.Add(-5*time.Second))
		defer cancel()
	}
	n, err := outbox.Cleanup(runCtx, h.db, h.cfg)
	ms := []outbox.Metric{{Name: outbox.MetricDeleted, Unit: outbox.UnitCount, Value: float64(n)}}
	if g, gerr := outbox.ReadGauges(ctx, h.db); gerr == nil {
		ms = append(ms, g.Metrics()...)
	}
	if merr := h.metrics.Write(ms...); merr != nil {
		h.log.Warn("outbox-cleanup metrics", "error", merr)
	}
	h.log.Info("outbox cleanup", "borrados", n, "error", err)
	return Resultado{Borrados: n}, err
}

func envInt(k string, def int) (int, error) {
	v := os.Getenv(k)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive integer", k, v)
	}
	return n, nil
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ctx := context.Background()
	fail := func(err error) { log.Error("outbox-cleanup init", "error", err); os.Exit(1) }
	days, err := envInt("RETENTION_DAYS", 7)
	if err != nil {
		fail(err)
	}
	batch, err := envInt("BATCH_SIZE", 1000)
	if err != nil {
		fail(err)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, config.WithRetryMaxAttempts(2))
	if err != nil {
		fail(err)
	}
	pool, err := outbox.ConnectFromEnv(ctx, awsCfg, secretsmanager.NewFromConfig(awsCfg), 1, os.Getenv)
	if err != nil {
		fail(err)
	}
	h := &handler{
		db:      pool,
		cfg:     outbox.CleanupConfig{Retention: time.Duration(days) * 24 * time.Hour, BatchSize: batch},
		metrics: outbox.NewEMFWriter(os.Stdout, outbox.MetricNamespace, map[string]string{outbox.DimensionEnvironment: os.Getenv("ENTORNO")}),
		log:     log,
	}
	lambda.Start(h.handle)
}
