package sqsconsumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/mercadofresco/integration/lambdas/degrade"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/httpdep"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// CodeRejected is the error_codigo recorded when a dependency refused a
// request (httpdep.ErrRejected).
const CodeRejected = "rechazado"

// Once calls a dependency once in effect per record: call runs under
// idempotency.Do with the record's idempotency key (set by the Processor's
// IdempotencyKey) and payload validation. Its failures keep their
// lambdas/failure marks for lambdas/sqsbatch:
//
//   - httpdep.ErrRejected (the dependency refused: a data or business
//     answer): recorded FALLIDO with CodeRejected, so every repeat gets it
//     without a call (permanent: to the DLQ with the reason).
//   - the message's receives across its deferred copies are spent
//     (plan.Admit, checked before the call): permanent, no call, the key
//     released.
//   - the dependency's circuit is open: plan.Later (the message waits as a
//     delayed copy; lambdas/degrade).
//   - the rest as marked: a payload that differs from the first call's, a
//     record that cannot be read (permanent: a person must look), a 429
//     past the attempts (RetryAfter), anything else transient (the key was
//     released; the message comes back after its visibility timeout).
func Once[T any](ctx context.Context, store *idempotency.Store, plan *degrade.Plan, rec *sqsbatch.Record, payload any, call func(ctx context.Context, key string) (T, error)) (T, error) {
	key := rec.IdempotencyKey()
	res, err := idempotency.Do(ctx, store, key, func(ctx context.Context) (T, error) {
		if err := plan.Admit(rec); err != nil {
			var zero T
			return zero, err // releases the key: a redrive after the fix starts afresh
		}
		out, err := call(ctx, key)
		if errors.Is(err, httpdep.ErrRejected) {
			return out, failure.Permanent(CodeRejected, err)
		}
		return out, err
	}, idempotency.WithPayload(payload))
	if err != nil {
		return res, plan.OnOpen(ctx, rec, fmt.Errorf("%s: %w", key, err))
	}
	return res, nil
}

// OnceDeps are the dependencies of a consumer built with PostProcessor.
// Store and Plan are required.
type OnceDeps struct {
	Store *idempotency.Store
	// DLQ sends poison and permanent failures to their queue's DLQ;
	// Visibility honours the plan's ChangeMessageVisibility (the SQS client
	// is both).
	DLQ        sqsbatch.Sender
	Visibility sqsbatch.VisibilityChanger
	// Plan defers messages while the dependency's circuit is open.
	Plan   *degrade.Plan
	Logger *slog.Logger
}

// PostProcessor returns the processor of a consumer of the fan-out's
// PedidoConfirmado that POSTs body(e) of each event E to path of the HTTP
// dependency dep, once per domain key: key derives the key from the
// event's pedido_id (e.g. idempotency.KeyPreparacion), which is also the
// Idempotency-Key; the answer decodes into R, and done logs it. The event
// must carry "pedido_id" and "confirmado_en"; E's Validate, if it has one,
// makes a bad event poison. An event older than s.IdempotencyWindow is
// refused before its key is claimed (Settings.Window: the store's records
// must live as long). Failures are classified by Once.
func PostProcessor[E, B, R any](s Settings, d OnceDeps, dep *httpdep.Client, path string, key func(pedidoID string) (string, error), body func(e *E) B, done func(rec *sqsbatch.Record, e *E, r R)) (*sqsbatch.Processor, error) {
	if dep == nil {
		return nil, errors.New("sqsconsumer: PostProcessor needs the dependency's client")
	}
	if d.Store == nil || d.Plan == nil {
		return nil, errors.New("sqsconsumer: OnceDeps.Store and OnceDeps.Plan are required")
	}
	window, err := s.Window(d.Store)
	if err != nil {
		return nil, err
	}
	d.Logger = cmp.Or(d.Logger, slog.Default())
	return s.Batch(sqsbatch.Config{
		Handler: sqsbatch.JSON(func(ctx context.Context, rec *sqsbatch.Record, e *E) error {
			if err := window.Check(rec); err != nil {
				return err
			}
			b := body(e)
			res, err := Once(ctx, d.Store, d.Plan, rec, b, func(ctx context.Context, key string) (R, error) {
				var out R
				err := dep.Post(ctx, path, key, b, &out)
				return out, err
			})
			if err == nil {
				done(rec, e, res)
			}
			return err
		}),
		DLQ:               d.DLQ,
		Visibility:        d.Visibility,
		RequiredKeys:      lambdaapi.RequiredKeysConfirmado(),
		SupportedVersions: eventsapi.AcceptedVersions(eventsapi.TypePedidoConfirmado),
		IdempotencyKey:    KeyByPedido(key),
		Logger:            d.Logger,
	})
}
