package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/metrics"
	"github.com/mercadofresco/integration/lambdas/outbox"
	"github.com/mercadofresco/integration/lambdas/signing"
)

// deployment is how the publisher runs in Lambda: an invocation every
// period, each polling for window (then it stops claiming).
type deployment struct {
	name           string
	period, window time.Duration
}

// deployments are the model deployed today (lambdas/lambdaapi)
// and the one before it (40 s of polling every minute), for comparison.
func deployments() []deployment {
	return []deployment{
		{fmt.Sprintf("deployed: every %s, polls %s (overlap %s)", lambdaapi.PublisherPeriod, lambdaapi.PublisherPollWindow, lambdaapi.PublisherPollWindow-lambdaapi.PublisherPeriod), lambdaapi.PublisherPeriod, lambdaapi.PublisherPollWindow},
		{"before: every 1m0s, polls 40s (20 s without a publisher)", time.Minute, 40 * time.Second},
	}
}

// deployedConfig is the Config the deployed function builds
// (outbox.DeployedConfig: it signs every PedidoCreado), its key read through
// signing's Secrets Manager source as in Lambda, from benchSecret, and its
// metrics written, to nowhere.
func deployedConfig() (outbox.Config, error) {
	keys, err := signing.NewSecretSource(benchSecret{}, "mercadofresco-firma-cobro", nil)
	if err != nil {
		return outbox.Config{}, err
	}
	cfg := outbox.DeployedConfig("bus-mercadofresco", "mercadofresco.tienda", lambdaapi.DefaultOutboxEntryAttempts, lambdaapi.DefaultOutboxMaxClaims, keys)
	cfg.Metrics = metrics.ForEnvironment(io.Discard, "bench")
	return cfg, nil
}

// benchSecret is the signing key's secret: one version, never rotated.
type benchSecret struct{}

func (benchSecret) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	return &secretsmanager.GetSecretValueOutput{VersionId: aws.String("v1"), SecretString: aws.String(strings.Repeat("k", signing.MinKeyBytes))}, nil
}

type deployedRow struct {
	model       string
	invocations int
	row
}

// benchDeployed writes o.rate orders/s, one per transaction, for d while
// publisher "invocations" start every period on a fresh Publisher each (as
// Lambda does: a new invocation, the deployed Config), each running for the
// model's window; it reports the commit-to-sink lag over the whole time,
// gaps between invocations included (events committed in a gap wait for
// the next invocation: a period more of patience).
func benchDeployed(ctx context.Context, o options, m deployment, d time.Duration) (deployedRow, error) {
	cfg, err := deployedConfig()
	if err != nil {
		return deployedRow{}, err
	}
	r := deployedRow{model: m.name}
	o.n, o.lagSeconds, o.timeout = 0, int(d.Seconds()), m.period+o.timeout
	// 4 publishers: a pool of 16 connections, room for overlapping invocations.
	r.row, err = measure(ctx, o, fmt.Sprintf("bench_deployed_%d", int(m.window.Seconds())), 4, "outbox", func(pool *pgxpool.Pool) (writeFunc, func(context.Context, *errgroup.Group, *recorder), error) {
		// The scheduler: one invocation now and one every period until the
		// run ends, each with its own publisher (a new Lambda invocation),
		// cancelled when its window ends.
		return outboxWriter(pool), func(ctx context.Context, g *errgroup.Group, rec *recorder) {
			g.Go(func() error {
				tick := time.NewTicker(m.period)
				defer tick.Stop()
				for {
					p, err := outbox.NewPublisher(pool, ebSink{rec, o.latency}, cfg)
					if err != nil {
						return err
					}
					r.invocations++
					g.Go(func() error {
						ictx, icancel := context.WithTimeout(ctx, m.window)
						defer icancel()
						_ = p.Run(ictx, nil) // until its window ends
						return nil
					})
					select {
					case <-tick.C:
					case <-ctx.Done():
						return nil
					}
				}
			})
		}, nil
	})
	return r, err
}

func printDeployed(o options, d time.Duration, rows []deployedRow) {
	fmt.Printf("\nCommit-to-bus lag as deployed: %d orders/s (one transaction each) for %s, sink latency %s per call; invocations started on a real-time schedule, each a new publisher with the deployed Config (outbox.DeployedConfig: lambdas/lambdaapi's figures, every PedidoCreado signed).\n\n", o.rate, d, o.latency)
	fmt.Println("| publisher model | invocations | lag p50 | lag p99 | lag max | samples |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Printf("| %s | %d | %s | %s | %s | %d |\n", r.model, r.invocations, r.p50.Round(time.Millisecond), r.p99.Round(time.Millisecond), r.maxLag.Round(time.Millisecond), r.lagN)
	}
}
