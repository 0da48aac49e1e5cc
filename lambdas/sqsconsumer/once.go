package sqsconsumer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/degrade"
	"github.com/mercadofresco/integration/lambdas/httpdep"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// CodeRejected is the error_codigo recorded when a dependency refused a
// request (httpdep.ErrRejected).
const CodeRejected = "rechazado"

// Throttle waits: how long a message whose dependency answered 429 after
// the attempts stays hidden (the dependency's Retry-After, within these
// bounds).
const (
	minThrottleWait = 30 * time.Second
	maxThrottleWait = 15 * time.Minute
)

// Once calls a dependency once in effect per record: call runs under
// idempotency.Do with the record's idempotency key (set by the Processor's
// IdempotencyKey) and payload validation, and its outcome is classified
// for lambdas/sqsbatch:
//
//   - success, or a repeat of a COMPLETADO record: the stored result.
//   - httpdep.ErrRejected (the dependency refused: a data or business
//     answer): recorded FALLIDO, so every repeat gets it without a call,
//     and returned as sqsbatch.Permanent (to the DLQ with the reason).
//   - a payload that differs from the first call's under the same key, or
//     a record that cannot be read: sqsbatch.Permanent (a person must look).
//   - the dependency's circuit is open: plan.OnOpen (the message waits;
//     lambdas/degrade).
//   - 429 after the attempts: sqsbatch.RetryAfter the dependency's
//     Retry-After (30 s to 15 min).
//   - anything else: transient (the key was released; the message comes
//     back after its visibility timeout).
func Once[T any](ctx context.Context, store *idempotency.Store, plan *degrade.Plan, rec *sqsbatch.Record, payload any, call func(ctx context.Context, key string) (T, error)) (T, error) {
	key := rec.IdempotencyKey()
	res, err := idempotency.Do(ctx, store, key, func(ctx context.Context) (T, error) {
		out, err := call(ctx, key)
		if errors.Is(err, httpdep.ErrRejected) {
			return out, idempotency.Permanent(CodeRejected, err)
		}
		return out, err
	}, idempotency.WithPayload(payload))
	if err == nil {
		return res, nil
	}
	err = fmt.Errorf("%s: %w", key, err)
	var he *httpdep.Error
	switch {
	case errors.Is(err, idempotency.ErrPermanent), errors.Is(err, idempotency.ErrPayloadMismatch),
		errors.Is(err, idempotency.ErrCorruptRecord), errors.Is(err, idempotency.ErrInvalidKey):
		return res, sqsbatch.Permanent(err)
	case errors.Is(err, breaker.ErrOpen) && plan != nil:
		return res, plan.Later(ctx, rec, err)
	case errors.As(err, &he) && he.Status == http.StatusTooManyRequests:
		return res, sqsbatch.RetryAfter(err, min(max(he.RetryAfter, minThrottleWait), maxThrottleWait))
	default:
		return res, err
	}
}
