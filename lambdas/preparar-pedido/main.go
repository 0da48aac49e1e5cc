// Command preparar-pedido is the consumer of cola-mercadofresco-pedidos: for
// every confirmed order (PedidoConfirmado, delivered by the SNS fan-out with
// raw delivery) it asks the warehouse to prepare the order.
//
// Batch semantics come from lambdas/sqsbatch: malformed or unknown-version
// events go to the DLQ after one receive with the reason attached, transient
// failures come back through batchItemFailures, and the queue's
// maxReceiveCount is the safety net. The event source mapping must enable
// ReportBatchItemFailures.
//
// Environment:
//
//	IDEMPOTENCY_TABLE_NAME  mercadofresco-idempotencia of the environment (required)
//	DLQ_URLS           JSON {source queue name: DLQ URL} (lambdas/sqsbatch/dlqroute; empty: rely on the queue's redrive only)
//	CONSUMER_VERSION   build identifier written to dead-lettered messages (default: the
//	                   SHA-256 of this binary, "sha256:<12 hex>", which names the exact build)
//	BATCH_CONCURRENCY  records handled at once per invocation (default 8, max 100)
//	SUPPORTED_VERSIONS comma-separated major event versions understood (default "1")
//	DEADLINE_MARGIN    time kept free before the Lambda deadline (Go duration, default 2s)
//	LOG_LEVEL          DEBUG, INFO, WARN or ERROR (default INFO)
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/internal/buildid"
	"github.com/mercadofresco/integration/lambdas/queue"
)

func main() {
	if err := run(); err != nil {
		// An init failure: Lambda reports it and retries the batch later.
		slog.Error("preparar-pedido: cannot start", slog.String("error", err.Error()))
		os.Exit(1)
	}
}

func run() error {
	s, err := loadSettings(os.Getenv)
	if err != nil {
		return err
	}
	if os.Getenv("CONSUMER_VERSION") == "" {
		if id, err := buildid.Executable(); err == nil {
			s.ConsumerVersion = id
		}
	}
	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: s.LogLevel})).
		With(slog.String("consumer", "preparar-pedido"), slog.String("consumer_version", s.ConsumerVersion))
	// SDK retries: 2 attempts (SPEC "retry layers"); the queue's receives and
	// the DLQ are the outer layers.
	awsCfg, err := config.LoadDefaultConfig(context.Background(), config.WithRetryMaxAttempts(2))
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	sqsClient := queue.New(sqs.NewFromConfig(awsCfg))
	if len(s.DLQRoutes) == 0 {
		logger.Warn("DLQ_URLS is not set: poison messages will wait for the queue's redrive (maxReceiveCount receives)")
	}
	db := dynamodb.NewFromConfig(awsCfg)
	store, err := idempotency.NewStore(db, idempotency.Config{
		TableName: s.IdempotencyTable,
		// Duplicates within one warm instance cost no DynamoDB call.
		CacheSize: 1000,
	})
	if err != nil {
		return err
	}
	prep := idempotentPreparer{store: store, next: stubPreparer{log: logger}}
	p, err := newProcessor(s, sqsClient, sqsClient, prep, logger)
	if err != nil {
		return err
	}
	lambda.Start(p.Process)
	return nil
}
