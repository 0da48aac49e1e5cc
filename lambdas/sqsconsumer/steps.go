package sqsconsumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// Steps are the pipeline of a consumer that calls a dependency once per
// record, in this order: the replay window (an event older than it is
// refused before anything is claimed), the idempotency claim (the record's
// key, its payload checked), the degrade plan's admission (the receives
// across its deferred copies) and, when the call's failure says the
// dependency cannot take it now, the plan's deferral.
type Steps struct {
	Window sqsbatch.Window
	Store  *idempotency.Store
	Plan   *Plan
	// Defer says a failure means "later" (default: the dependency's
	// circuit is open, breaker.ErrOpen).
	Defer func(err error) bool
}

// Steps returns the steps of a consumer of the fan-out's PedidoConfirmado
// over store and plan (both required): the replay window must be set, and
// the store's records must live at least as long (Settings.Window).
func (s Settings) Steps(store *idempotency.Store, plan *Plan) (Steps, error) {
	if store == nil || plan == nil {
		return Steps{}, errors.New("sqsconsumer: the idempotency store and the degrade plan are required")
	}
	w, err := s.Window(store)
	return Steps{Window: w, Store: store, Plan: plan}, err
}

// Once runs call once in effect for rec through st: call receives the
// record's idempotency key (set by the Processor's IdempotencyKey, also the
// dependency's Idempotency-Key) and its failures keep their lambdas/failure
// marks: a permanent failure with a code is recorded FALLIDO and every
// repeat gets it back without a call; spent receives are permanent
// without a call (the key released: a redrive after the fix starts
// afresh); a payload that differs from the first call's, or a record that
// cannot be read, is permanent; anything else releases the key.
func Once[T any](ctx context.Context, st Steps, rec *sqsbatch.Record, payload any, call func(ctx context.Context, key string) (T, error)) (T, error) {
	var zero T
	if err := st.Window.Check(rec); err != nil {
		return zero, err
	}
	key := rec.IdempotencyKey()
	res, err := idempotency.Do(ctx, st.Store, key, func(ctx context.Context) (T, error) {
		if err := st.Plan.Admit(rec); err != nil {
			return zero, err
		}
		return call(ctx, key)
	}, idempotency.WithPayload(payload))
	if err == nil {
		return res, nil
	}
	err = fmt.Errorf("%s: %w", key, err)
	if st.Defer != nil && st.Defer(err) || st.Defer == nil && errors.Is(err, breaker.ErrOpen) {
		return res, st.Plan.Later(ctx, rec, err)
	}
	return res, err
}

// OnceDeps are the dependencies of a consumer built on Steps. Store and
// Plan are required.
type OnceDeps struct {
	Store *idempotency.Store
	// DLQ sends poison and permanent failures to their queue's DLQ;
	// Visibility honours the plan's ChangeMessageVisibility (the SQS client
	// is both).
	DLQ        sqsbatch.Sender
	Visibility sqsbatch.VisibilityChanger
	// Plan defers messages while the dependency cannot take them.
	Plan   *Plan
	Logger *slog.Logger
}
