// Command outbox-publisher is the Lambda function that moves outbox rows to
// bus-mercadofresco. An EventBridge Scheduler schedule invokes it every
// minute; each invocation polls about every second (Publisher.Run) and
// stops claiming 20 s before its 60 s timeout, so consecutive invocations
// do not overlap (reserved concurrency 1 suffices; with more, the lease and
// SKIP LOCKED keep concurrent invocations from publishing the same row). It connects through RDS Proxy with IAM authentication as
// its own database role (DB_USER, mf_publicador), which may read the outbox
// and update its bookkeeping columns only: it applies no migration (the
// deploy does, lambdas/outbox-migrate) and could not.
//
// Environment: DB_HOST (RDS Proxy endpoint), DB_PORT, DB_NAME, DB_USER (IAM
// authentication; see postgres.FromEnv), BUS_NAME,
// EVENT_SOURCE, ENTORNO (metric dimension).
package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercadofresco/integration/lambdas/internal/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/metrics"
	"github.com/mercadofresco/integration/lambdas/outbox"
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

type handler struct {
	pool *pgxpool.Pool
	pub  *outbox.Publisher
	// margin is kept free at the end of the invocation: the round in flight
	// (PublishTimeout) plus the final marks and the metrics flush.
	margin time.Duration
}

// runContext is the context of one invocation's publishing: it ends margin
// before the Lambda deadline (or a minute from now without one).
func (h *handler) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	return context.WithDeadline(ctx, deadline.Add(-h.margin))
}

func (h *handler) handle(ctx context.Context) (Resultado, error) {
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

func newHandler(ctx context.Context, env *lambdaenv.Env, log *slog.Logger) (*handler, error) {
	bus := env.Required("BUS_NAME")
	source := env.Required("EVENT_SOURCE")
	entorno := env.String("ENTORNO", "")
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
		// invocation of the 60 s function stops claiming at 40 s and is done
		// by ~52 s, before the next minute's invocation starts.
		Lease:          20 * time.Second,
		PublishTimeout: 10 * time.Second,
		Metrics:        metrics.ForEnvironment(os.Stdout, entorno),
		Logger:         log,
	}
	pub, err := outbox.NewPublisher(pool, eventbridge.NewFromConfig(awsCfg), cfg)
	if err != nil {
		return nil, err
	}
	return &handler{pool: pool, pub: pub, margin: 20 * time.Second}, nil
}

func main() {
	env := lambdaenv.New(os.Getenv)
	log := env.Logger("outbox-publisher")
	h, err := newHandler(context.Background(), env, log)
	if err != nil {
		log.Error("outbox-publisher init", "error", err)
		os.Exit(1)
	}
	lambda.Start(h.handle)
}
