package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/internal/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/queue"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/sqsbatch/dlqroute"
)

// settings is the consumer's configuration, read from the environment.
type settings struct {
	IdempotencyTable  string
	DLQRoutes         dlqroute.Routes
	ConsumerVersion   string
	Concurrency       int
	SupportedVersions []int
	DeadlineMargin    time.Duration
	LogLevel          slog.Level
}

// loadSettings reads the environment through getenv and rejects bad values
// (a typo must fail the deployment's first invocation, not silently default),
// reporting every problem at once.
func loadSettings(getenv func(string) string) (settings, error) {
	env := lambdaenv.New(getenv)
	s := settings{
		IdempotencyTable:  env.Required(idempotency.EnvTableName),
		ConsumerVersion:   env.String("CONSUMER_VERSION", "unknown"),
		Concurrency:       env.Int("BATCH_CONCURRENCY", sqsbatch.DefaultConcurrency, 1, 100),
		SupportedVersions: env.Ints("SUPPORTED_VERSIONS", 1),
		DeadlineMargin:    env.Duration("DEADLINE_MARGIN", sqsbatch.DefaultDeadlineMargin, time.Millisecond, time.Minute),
		LogLevel:          env.LogLevel(),
	}
	routes, rerr := dlqroute.Parse(getenv(dlqroute.Env))
	s.DLQRoutes = routes
	if err := errors.Join(env.Err(), rerr); err != nil {
		// Never run the side effect without its idempotency record.
		return s, err
	}
	return s, nil
}

// PedidoConfirmado is the event this consumer handles (version 1). Unknown
// fields are ignored; new fields are additive.
type PedidoConfirmado struct {
	PedidoID string  `json:"pedido_id"`
	Lineas   []Linea `json:"lineas"`
}

// Linea is one order line.
type Linea struct {
	SKU      string `json:"sku"`
	Cantidad int    `json:"cantidad"`
}

// Validate implements sqsbatch.Validator: an order no warehouse could prepare
// is poison, not something to retry.
func (p *PedidoConfirmado) Validate() error {
	if len(p.Lineas) == 0 {
		return errors.New("order has no lines")
	}
	for i, l := range p.Lineas {
		if l.SKU == "" || l.Cantidad <= 0 {
			return fmt.Errorf("line %d: sku %q, cantidad %d: want a SKU and a positive quantity", i, l.SKU, l.Cantidad)
		}
	}
	return nil
}

// ErrNoPreparable is returned by a Preparer when the order can never be
// prepared (cancelled, unknown to the warehouse): a permanent failure.
var ErrNoPreparable = errors.New("order cannot be prepared")

// Preparer asks the warehouse to prepare an order. Implementations must be
// idempotent on key (a redelivered message calls it again with the same
// key) and return the same reference for the same key.
type Preparer interface {
	Prepare(ctx context.Context, key string, p *PedidoConfirmado) (ref string, err error)
}

// idempotencyKey is derived from the domain, never from the SQS message id.
func idempotencyKey(pedidoID string) (string, error) { return idempotency.KeyPreparacion(pedidoID) }

// newProcessor wires the handler into the batch library.
func newProcessor(s settings, dlq queue.Sender, vis queue.VisibilityChanger, prep Preparer, logger *slog.Logger) (*sqsbatch.Processor, error) {
	return sqsbatch.New(sqsbatch.Config{
		Handler:           sqsbatch.JSON(handler(prep)),
		ConsumerVersion:   s.ConsumerVersion,
		DLQ:               dlq,
		DLQRoutes:         s.DLQRoutes,
		Visibility:        vis,
		Concurrency:       s.Concurrency,
		SupportedVersions: s.SupportedVersions,
		RequiredKeys:      []string{"pedido_id", "lineas"},
		IdempotencyKey: func(rec *sqsbatch.Record) (string, error) {
			var head struct {
				PedidoID string `json:"pedido_id"`
			}
			if err := rec.Decode(&head); err != nil {
				return "", err
			}
			return idempotencyKey(head.PedidoID)
		},
		DeadlineMargin: s.DeadlineMargin,
		Logger:         logger,
	})
}

func handler(prep Preparer) func(ctx context.Context, rec *sqsbatch.Record, p *PedidoConfirmado) error {
	return func(ctx context.Context, rec *sqsbatch.Record, p *PedidoConfirmado) error {
		ref, err := prep.Prepare(ctx, rec.IdempotencyKey(), p)
		switch {
		case errors.Is(err, ErrNoPreparable):
			return sqsbatch.Permanent(fmt.Errorf("pedido %s: %w", p.PedidoID, err))
		case err != nil:
			return fmt.Errorf("pedido %s: prepare: %w", p.PedidoID, err)
		}
		rec.Logger.Info("order sent to preparation", slog.String("pedido_id", p.PedidoID),
			slog.String("referencia_preparacion", ref), slog.Int("lineas", len(p.Lineas)))
		return nil
	}
}

// stubPreparer stands in for the warehouse integration until it exists: it
// logs the request and returns a reference derived from the key, which makes
// it trivially idempotent.
type stubPreparer struct{ log *slog.Logger }

// Prepare implements Preparer.
func (s stubPreparer) Prepare(ctx context.Context, key string, p *PedidoConfirmado) (string, error) {
	s.log.LogAttrs(ctx, slog.LevelDebug, "stub preparation", slog.String("idempotency_key", key), slog.String("pedido_id", p.PedidoID))
	return "prep-" + p.PedidoID, nil
}
