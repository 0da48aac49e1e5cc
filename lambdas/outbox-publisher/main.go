// Command outbox-publisher is the Lambda function that moves outbox rows to
// bus-mercadofresco. An EventBridge Scheduler schedule invokes it every
// minute; each invocation polls about every second (Publisher.Run) and
// stops claiming 20 s before its 60 s timeout, so consecutive invocations
// do not overlap (reserved concurrency 1 suffices; with more, the lease and
// SKIP LOCKED keep concurrent invocations from publishing the same row). It connects through RDS Proxy with IAM authentication and
// applies the embedded migrations at cold start (advisory-locked,
// idempotent), so the schema always ships with the code that needs it.
//
// Environment: DB_HOST (RDS Proxy endpoint), DB_PORT, DB_NAME, DB_USER (IAM
// authentication; see outbox.ConnectFromEnv), BUS_NAME,
// EVENT_SOURCE, ENTORNO (metric dimension), MIGRATE_ON_START (default true).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercadofresco/integration/lambdas/outbox"
)

// Resultado is what one invocation did (visible in the Lambda response and
// logs).
type Resultado struct {
	Reclamados int `json:"reclamados"`
	Publicados int `json:"publicados"`
	Fallidos   int `json:"fallidos"`
	Aparcados  int `json:"aparcados"`
}

type handler struct {
	pool *pgxpool.Pool
	pub  *outbox.Publisher
	// margin is kept free at the end of the invocation: the round in flight
	// (PublishTimeout) plus the final marks and the metrics flush.
	margin time.Duration
}

func (h *handler) handle(ctx context.Context) (Resultado, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	runCtx, cancel := context.WithDeadline(ctx, deadline.Add(-h.margin))
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

func newHandler(ctx context.Context, log *slog.Logger) (*handler, error) {
	need := func(k string) (string, error) {
		v := os.Getenv(k)
		if v == "" {
			return "", fmt.Errorf("environment variable %s is required", k)
		}
		return v, nil
	}
	_, err1 := need("DB_HOST")
	bus, err2 := need("BUS_NAME")
	source, err3 := need("EVENT_SOURCE")
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, config.WithRetryMaxAttempts(2))
	if err != nil {
		return nil, err
	}
	pool, err := outbox.ConnectFromEnv(ctx, awsCfg, secretsmanager.NewFromConfig(awsCfg), 2, os.Getenv)
	if err != nil {
		return nil, err
	}
	if os.Getenv("MIGRATE_ON_START") != "false" {
		applied, err := outbox.Migrate(ctx, pool)
		if err != nil {
			return nil, err
		}
		if len(applied) > 0 {
			log.Info("outbox migrations applied", "migraciones", applied)
		}
	}
	cfg := outbox.Config{
		BusName: bus,
		Source:  source,
		// 20 s lease, 10 s publish timeout: with the 20 s margin below, an
		// invocation of the 60 s function stops claiming at 40 s and is done
		// by ~52 s, before the next minute's invocation starts.
		Lease:          20 * time.Second,
		PublishTimeout: 10 * time.Second,
		Metrics:        outbox.NewEMFWriter(os.Stdout, outbox.MetricNamespace, map[string]string{outbox.DimensionEnvironment: os.Getenv("ENTORNO")}),
		Logger:         log,
	}
	pub, err := outbox.NewPublisher(pool, eventbridge.NewFromConfig(awsCfg), cfg)
	if err != nil {
		return nil, err
	}
	return &handler{pool: pool, pub: pub, margin: 20 * time.Second}, nil
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	h, err := newHandler(context.Background(), log)
	if err != nil {
		log.Error("outbox-publisher init", "error", err)
		os.Exit(1)
	}
	lambda.Start(h.handle)
}
