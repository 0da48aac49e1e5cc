// Package stock is the consumer of the FIFO queue
// mercadofresco-movimientos-stock.fifo (MessageGroupId = sku): it applies
// reserva, liberacion and ajuste movements to mercadofresco-stock so that
// each counts once and the final stock does not depend on arrival order.
//
// A SKU has a totals item and one item per order line or adjustment; a
// movement sets its line's state only if its secuencia is greater than the
// line's (replays and late movements change nothing; the line is the
// movement's idempotency record and never expires), and the totals change by
// the line's transition, in three conditional writes that whoever meets a
// pending change finishes, the first only on the totals' version it read (a
// late copy of any write changes nothing). A movement that would leave
// disponible below zero is Permanent (to the DLQ with the numbers); malformed
// ones are poison; DynamoDB failures are transient. Reasoning:
// docs/design.md#stock-movements.
package stock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mercadofresco/integration/lambdas/consumers"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
)

// elemento is the sort key of the movement's line.
func elemento(m eventsapi.MovimientoStock) string {
	if m.Tipo == eventsapi.Ajuste {
		return "ajuste#" + m.Referencia
	}
	return "pedido#" + m.PedidoID
}

// Deps are the consumer's dependencies; Store is required. DLQ takes
// poison and permanent failures; Visibility returns a failed movement's
// group after sqsbatch's jitter of the visibility timeout (the SQS client
// is both).
type Deps struct {
	Store      *Store
	DLQ        sqsbatch.Sender
	Visibility sqsbatch.VisibilityChanger
	Logger     *slog.Logger
}

// NewProcessor returns the batch processor of the consumer.
func NewProcessor(s sqsconsumer.Settings, d Deps) (*sqsbatch.Processor, error) {
	if d.Store == nil {
		return nil, errors.New("stock: Store is required")
	}
	d.Logger = cmp.Or(d.Logger, slog.Default())
	return s.Batch(sqsbatch.Config{
		Handler: sqsbatch.JSON(func(ctx context.Context, rec *sqsbatch.Record, m *eventsapi.MovimientoStock) error {
			out, err := d.Store.Apply(ctx, *m)
			switch {
			case errors.Is(err, ErrNegativeStock):
				return failure.Permanent("", fmt.Errorf("%s: %w", rec.IdempotencyKey(), err))
			case err != nil:
				return fmt.Errorf("%s: %w", rec.IdempotencyKey(), err)
			}
			rec.Logger.Info("stock movement", slog.String("sku", m.SKU), slog.String("tipo", string(m.Tipo)),
				slog.Int64("cantidad", m.Cantidad), slog.Int64("secuencia", m.Secuencia), slog.String("resultado", out.String()))
			return nil
		}),
		DLQ:        d.DLQ,
		Visibility: d.Visibility,
		Envelope:   consumers.Stock.Envelope(),
		IdempotencyKey: func(rec *sqsbatch.Record) (string, error) {
			var m eventsapi.MovimientoStock
			err := rec.Decode(&m) // checked by the envelope's Content
			return m.DeduplicationID(), err
		},
		Logger: d.Logger,
	})
}

// FromRuntime builds the consumer with real clients (the movimientos-stock
// main): the stock table (STOCK_TABLE_NAME) and the SQS client for the DLQ
// and the visibility changes.
func FromRuntime(ctx context.Context, rt *sqsconsumer.Runtime) (*sqsbatch.Processor, error) {
	table := rt.Env.Required(lambdaapi.EnvStockTable)
	if err := rt.Env.Err(); err != nil {
		return nil, err
	}
	store, err := NewStore(dynamodb.NewFromConfig(rt.AWS), table)
	if err != nil {
		return nil, err
	}
	return NewProcessor(rt.Settings, Deps{Store: store, DLQ: rt.SQS, Visibility: rt.SQS, Logger: rt.Log})
}
