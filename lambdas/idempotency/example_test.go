package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// chargeResult is what the charge step returns to the order workflow.
type chargeResult struct {
	ReferenciaCobro string `json:"referencia_cobro"`
}

// ErrTarjetaRechazada is a business failure: recorded once, replayed to
// every duplicate, never retried.
var ErrTarjetaRechazada = failure.Permanent("tarjeta_rechazada", errors.New("card declined"))

// chargeCard stands for the payment gateway client.
func chargeCard(ctx context.Context, idempotencyKey, pedidoID string, cents int64) (string, error) {
	return "ch_" + pedidoID, nil
}

// Example shows a charge consumer: one Store per cold start, a key derived
// from the domain, the key forwarded to the gateway, and the outcome
// classes a queue consumer must tell apart.
func Example() {
	ctx := context.Background()
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		panic(err)
	}
	// The SDK retries only instant network failures (max_attempts 2); the
	// queue and the workflow own the real retries.
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.RetryMaxAttempts = 2 })
	store, err := idempotency.NewStore(db, idempotency.Config{
		TableName: os.Getenv(lambdaapi.EnvIdempotencyTable),
		CacheSize: 1000, // duplicates in the same warm instance cost no call
	})
	if err != nil {
		panic(err)
	}

	handle := func(ctx context.Context, pedidoID string, cents int64) error {
		key, err := idempotency.KeyCobro(pedidoID) // never the SQS MessageId
		if err != nil {
			return err
		}
		res, err := idempotency.Do(ctx, store, key, func(ctx context.Context) (chargeResult, error) {
			ref, err := chargeCard(ctx, key, pedidoID, cents) // key: the gateway's Idempotency-Key
			return chargeResult{ReferenciaCobro: ref}, err
		}, idempotency.WithPayload(map[string]any{"pedido_id": pedidoID, "importe_centimos": cents}))
		switch {
		case err == nil:
			fmt.Println("charged", res.ReferenciaCobro) // the same reference for every duplicate
			return nil
		case errors.Is(err, ErrTarjetaRechazada):
			return nil // business outcome: tell the customer, do not retry
		case errors.Is(err, idempotency.ErrInProgress), errors.Is(err, idempotency.ErrStore), errors.Is(err, idempotency.ErrLockLost):
			return err // transient: report a batch item failure, SQS redelivers later
		case errors.Is(err, idempotency.ErrPayloadMismatch), errors.Is(err, idempotency.ErrCorruptRecord):
			return err // poison or data problem: let it reach the DLQ and the runbook
		default:
			return err // the handler's own transient error; the key was released
		}
	}
	_ = handle
}
