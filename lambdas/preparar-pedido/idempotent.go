package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// preparacion is what a preparation leaves in mercadofresco-idempotencia and
// what every repeat of the same order gets back.
type preparacion struct {
	Referencia string `json:"referencia_preparacion"`
}

// idempotentPreparer makes a Preparer exactly-once in effect per order: the
// warehouse is asked once per key (preparacion:<pedido_id>), whatever the
// number of deliveries (SNS retries, visibility-timeout redeliveries, a
// replay from the bus archive, a DLQ redrive), and every repeat returns the
// reference of the first preparation.
type idempotentPreparer struct {
	store *idempotency.Store
	next  Preparer
}

// Prepare implements Preparer.
func (p idempotentPreparer) Prepare(ctx context.Context, key string, order *PedidoConfirmado) (string, error) {
	res, err := idempotency.Do(ctx, p.store, key, func(ctx context.Context) (preparacion, error) {
		ref, err := p.next.Prepare(ctx, key, order)
		if errors.Is(err, ErrNoPreparable) {
			// Recorded FALLIDO: a repeat gets the same answer without
			// asking the warehouse again.
			return preparacion{}, idempotency.Permanent("no_preparable", err)
		}
		return preparacion{Referencia: ref}, err
	}, idempotency.WithPayload(order))
	switch {
	case err == nil:
		return res.Referencia, nil
	case errors.Is(err, idempotency.ErrPermanent):
		return "", fmt.Errorf("%w (%w)", ErrNoPreparable, err)
	case errors.Is(err, idempotency.ErrPayloadMismatch):
		// The same order id with other lines: a producer bug or a forged
		// message. Retrying cannot help and replaying the first result
		// would be wrong: to the DLQ with the reason.
		return "", sqsbatch.Permanent(err)
	case errors.Is(err, idempotency.ErrCorruptRecord), errors.Is(err, idempotency.ErrInvalidKey):
		return "", sqsbatch.Permanent(err)
	default:
		// ErrInProgress (another consumer holds the key), store outages:
		// transient, the message comes back after its visibility timeout.
		return "", err
	}
}
