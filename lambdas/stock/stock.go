// Package stock is the consumer of the FIFO queue
// mercadofresco-movimientos-stock.fifo (MessageGroupId = sku): it applies
// stock movements (reserva, liberacion, ajuste) to the table
// mercadofresco-stock so that each movement counts once and the final
// stock does not depend on the order in which movements arrive.
//
// # The model
//
// A SKU has one totals item (elemento "stock": existencias, reservado,
// disponible = existencias - reservado) and one item per line that moves
// it: an order's line (elemento "pedido#<pedido_id>", RESERVADA or
// LIBERADA with its cantidad and the secuencia of the movement that set
// it) and each adjustment (elemento "ajuste#<referencia>", APLICADO). A
// movement sets its line's state; it does not add blindly to the totals:
//
//   - reserva: the line becomes RESERVADA(cantidad); reservado changes by
//     cantidad minus what the line held before.
//   - liberacion: the line becomes LIBERADA; reservado gives back what the
//     line held (nothing, if its reserva never arrived).
//   - ajuste: the line is created APLICADO; existencias change by its
//     signed cantidad (once per referencia).
//
// # Version check: replays and late movements
//
// A movement is applied only if its secuencia is greater than the line's
// (the conditional write "if version > current"): a replay (same secuencia)
// or a late movement (a reserva arriving after its liberacion, after a DLQ
// redrive) changes nothing and cannot undo a newer state. Because a line
// holds a state rather than a delta, a liberacion that arrives first and a
// late reserva end where the two in order end: nothing reserved. The line
// item is the idempotency record itself (keyed like reserva:<pedido_id>:<sku>,
// the message's idempotency key), so a replay is recognised however late it
// comes, and this consumer needs no replay window
// (docs/design.md#replay-windows; TestOldReservaReplayedMonthsLaterChangesNothing):
// records of mercadofresco-idempotencia expire and would one day forget a
// redriven or replayed movement, and would cost two more writes per
// movement.
//
// # Crash safety without transactions
//
// The line and the totals are two items. A movement is applied in three
// conditional writes: (1) the totals get the deltas, and the line's new
// state as a pending change named by a random token
// ("pendiente:<elemento>"), only if no change of that line is pending and,
// when it takes stock, only if disponible covers it; (2) the line is
// written with the token, only if it is still the version the deltas were
// computed from; (3) the pending change is removed. Whoever meets a pending
// change (the same movement redelivered after its consumer died after (1),
// another movement of the line, a duplicate running at the same time)
// finishes it before its own: it writes the line with that change's token
// or, if the line changed before the change began, takes the change's
// deltas back. So the totals always equal the lines' states plus their
// pending changes, and a change counts once whoever finishes it.
// TestCrashAfterAnyWriteEndsInTheCorrectState and
// TestConcurrentMovementsOfTheSameLines check it on DynamoDB's protocol
// (dynalite). TransactWriteItems would do (1) and (2) at once; dynalite has
// no transactions, and these three writes are correct on their own. Cost: a
// consistent read and three writes per movement.
//
// # Failures
//
//   - A movement that would leave disponible below zero (a reserva of a
//     SKU never counted, an ajuste below what is reserved) is a data error:
//     to the DLQ at once with its reason and the numbers (sqsbatch
//     Permanent), never retried. Its SKU's group carries on.
//   - Malformed or unknown-version movements: poison, to the DLQ.
//   - DynamoDB failures: transient; the FIFO group waits for the retry.
package stock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/queue"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer/consumerapi"
)

// Tipo is the kind of a movement.
type Tipo string

// Kinds of movement.
const (
	TipoReserva    Tipo = "reserva"
	TipoLiberacion Tipo = "liberacion"
	TipoAjuste     Tipo = "ajuste"
)

// Movimiento is a stock movement (version 1); unknown fields are ignored.
type Movimiento struct {
	Tipo Tipo `json:"tipo"`
	// PedidoID is the order of a reserva or liberacion.
	PedidoID string `json:"pedido_id"`
	SKU      string `json:"sku"`
	// Cantidad: units, positive for reserva and liberacion, signed and
	// non-zero for ajuste.
	Cantidad int64 `json:"cantidad"`
	// Secuencia orders the movements of one line: 1 for a reserva, 2 for
	// its liberacion; for an ajuste, a number that grows per SKU.
	Secuencia int64 `json:"secuencia"`
	// Referencia names an ajuste (its document).
	Referencia string `json:"referencia"`
}

// Validate implements sqsbatch.Validator (problems are poison).
func (m *Movimiento) Validate() error {
	var problems []error
	if m.SKU == "" {
		problems = append(problems, errors.New("sku is empty"))
	}
	switch m.Tipo {
	case TipoReserva, TipoLiberacion:
		if m.PedidoID == "" {
			problems = append(problems, errors.New("pedido_id is empty"))
		}
		if m.Cantidad <= 0 {
			problems = append(problems, fmt.Errorf("cantidad %d is not positive", m.Cantidad))
		}
	case TipoAjuste:
		if m.Referencia == "" {
			problems = append(problems, errors.New("referencia is empty"))
		}
		if m.Cantidad == 0 {
			problems = append(problems, errors.New("cantidad is zero"))
		}
	default:
		problems = append(problems, fmt.Errorf("tipo %q is not reserva, liberacion or ajuste", m.Tipo))
	}
	if m.Secuencia <= 0 {
		problems = append(problems, fmt.Errorf("secuencia %d is not positive", m.Secuencia))
	}
	return errors.Join(problems...)
}

// elemento is the sort key of the movement's line.
func (m Movimiento) elemento() string {
	if m.Tipo == TipoAjuste {
		return "ajuste#" + m.Referencia
	}
	return "pedido#" + m.PedidoID
}

// Key is the movement's idempotency key (also the producers' FIFO
// deduplication id): reserva:<pedido_id>:<sku>, liberacion:<pedido_id>:<sku>
// or ajuste:<referencia>:<sku>.
func (m Movimiento) Key() (string, error) {
	switch m.Tipo {
	case TipoReserva:
		return idempotency.KeyReserva(m.PedidoID, m.SKU)
	case TipoLiberacion:
		return idempotency.KeyLiberacion(m.PedidoID, m.SKU)
	default:
		return idempotency.KeyAjuste(m.Referencia, m.SKU)
	}
}

// Deps are the consumer's dependencies; Store is required.
type Deps struct {
	Store  *Store
	DLQ    queue.Sender
	Logger *slog.Logger
}

// NewProcessor returns the batch processor of the consumer.
func NewProcessor(s sqsconsumer.Settings, d Deps) (*sqsbatch.Processor, error) {
	if d.Store == nil {
		return nil, errors.New("stock: Store is required")
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return s.Batch(sqsbatch.Config{
		Handler: sqsbatch.JSON(func(ctx context.Context, rec *sqsbatch.Record, m *Movimiento) error {
			out, err := d.Store.Apply(ctx, *m)
			switch {
			case errors.Is(err, ErrNegativeStock):
				return sqsbatch.Permanent(fmt.Errorf("%s: %w", rec.IdempotencyKey(), err))
			case err != nil:
				return fmt.Errorf("%s: %w", rec.IdempotencyKey(), err)
			}
			rec.Logger.Info("stock movement", slog.String("sku", m.SKU), slog.String("tipo", string(m.Tipo)),
				slog.Int64("cantidad", m.Cantidad), slog.Int64("secuencia", m.Secuencia), slog.String("resultado", out.String()))
			return nil
		}),
		DLQ:          d.DLQ,
		RequiredKeys: []string{"tipo", "sku"},
		IdempotencyKey: func(rec *sqsbatch.Record) (string, error) {
			var m Movimiento
			if err := rec.Decode(&m); err != nil {
				return "", err
			}
			if err := m.Validate(); err != nil {
				return "", sqsbatch.Poison(err)
			}
			return m.Key()
		},
		Logger: d.Logger,
	})
}

// FromRuntime builds the consumer with real clients (the movimientos-stock
// main): the stock table (STOCK_TABLE_NAME) and the SQS client for the DLQ.
func FromRuntime(ctx context.Context, rt *sqsconsumer.Runtime) (*sqsbatch.Processor, error) {
	table := rt.Env.Required(consumerapi.EnvStockTable)
	if err := rt.Check(); err != nil {
		return nil, err
	}
	store, err := NewStore(dynamodb.NewFromConfig(rt.AWS), table)
	if err != nil {
		return nil, err
	}
	return NewProcessor(rt.Settings, Deps{Store: store, DLQ: rt.SQS, Logger: rt.Log})
}
