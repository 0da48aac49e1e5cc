package payment

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/signing"
)

// Gateway is what the tasks need from the gateway client (*Client).
type Gateway interface {
	Charge(ctx context.Context, key string, req ChargeRequest) (Charge, error)
	Refund(ctx context.Context, key string, req RefundRequest) (Refund, error)
}

// Codes recorded as FALLIDO in the idempotency table (error_codigo).
const (
	codeDeclined = CodeTarjetaRechazada
	codeRejected = "solicitud_rechazada"
)

// TaskError is a task failure with its Step Functions error name.
type TaskError struct {
	// Name is one of the lambdaapi.Err* names.
	Name    string
	Message string
	Err     error
}

func (e *TaskError) Error() string { return e.Name + ": " + e.Message }

// Unwrap returns the cause.
func (e *TaskError) Unwrap() error { return e.Err }

// Tasks runs the cobro and reembolso tasks. Safe for concurrent use.
type Tasks struct {
	store    *idempotency.Store
	gw       Gateway
	verifier signing.Verifier
	log      *slog.Logger
}

// TaskOption configures NewTasks.
type TaskOption func(*Tasks)

// WithVerifier makes Cobro charge only what v proves the outbox publisher
// signed. Without one, Cobro refuses every charge (FirmaInvalida): the
// reembolso function, which needs no key, is built without it.
func WithVerifier(v signing.Verifier) TaskOption { return func(t *Tasks) { t.verifier = v } }

// NewTasks returns the tasks over an idempotency store and a gateway.
func NewTasks(store *idempotency.Store, gw Gateway, log *slog.Logger, opts ...TaskOption) (*Tasks, error) {
	if store == nil || gw == nil {
		return nil, errors.New("payment: NewTasks needs an idempotency store and a gateway")
	}
	log = cmp.Or(log, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	t := &Tasks{store: store, gw: gw, log: log}
	for _, o := range opts {
		o(t)
	}
	return t, nil
}

// ChargeOf is what a cobro input asks to charge, as signed.
func ChargeOf(in lambdaapi.CobroInput) signing.Charge {
	return signing.Charge{EventID: in.IDEvento, OrderID: in.PedidoID, AmountCents: in.ImporteCentimos, Currency: in.Moneda, CardToken: in.TokenTarjeta}
}

// fingerprinted is the part of a cobro input its idempotency record
// compares: the charge, not its proof (a payment retry's new event, a
// re-signature after a key rotation, ask for the same charge).
func fingerprinted(in lambdaapi.CobroInput) lambdaapi.CobroInput {
	in.IDEvento, in.Firma = "", ""
	return in
}

// verify refuses, before any claim or gateway call, a charge the outbox
// publisher did not sign as it is asked: FirmaInvalida.
func (t *Tasks) verify(ctx context.Context, in lambdaapi.CobroInput) error {
	if t.verifier == nil {
		return &TaskError{Name: lambdaapi.ErrFirmaInvalida, Message: "charge refused: this function holds no signing key, so it cannot check that order " + in.PedidoID + " is the one the shop committed"}
	}
	err := t.verifier.Verify(ctx, ChargeOf(in), in.Firma)
	if errors.Is(err, signing.ErrInvalid) {
		return &TaskError{Name: lambdaapi.ErrFirmaInvalida, Err: err, Message: fmt.Sprintf(
			"charge refused: order %s, %d %s, event %q is not what the outbox publisher signed (%v); nothing was sent to the gateway", in.PedidoID, in.ImporteCentimos, in.Moneda, in.IDEvento, err)}
	}
	return err
}

func validate(pedidoID string, cents int64, moneda string, extra ...[2]string) error {
	var problems []string
	if pedidoID == "" {
		problems = append(problems, "pedido_id is required")
	}
	if cents <= 0 {
		problems = append(problems, fmt.Sprintf("importe_centimos %d must be a positive number of cents", cents))
	}
	if !eventsapi.IsCurrency(moneda) {
		problems = append(problems, fmt.Sprintf("moneda %q is not an ISO 4217 code", moneda))
	}
	for _, f := range extra {
		if f[1] == "" {
			problems = append(problems, f[0]+" is required")
		}
	}
	if len(problems) > 0 {
		return &TaskError{Name: lambdaapi.ErrSolicitudInvalida, Message: fmt.Sprint(problems)}
	}
	return nil
}

// Cobro charges the order once, and only as signed (in.Firma over
// ChargeOf(in), WithVerifier; else FirmaInvalida before any call): idempotent through the idempotency table
// with key cobro:<pedido_id>, which also travels to the gateway as
// Idempotency-Key. A repeat (a workflow retry after a lost answer) returns
// the same referencia_cobro, or the same TarjetaRechazada, without a second
// charge. Errors are *TaskError.
func (t *Tasks) Cobro(ctx context.Context, in lambdaapi.CobroInput) (lambdaapi.CobroOutput, error) {
	if err := validate(in.PedidoID, in.ImporteCentimos, in.Moneda, [2]string{"token_tarjeta", in.TokenTarjeta}); err != nil {
		return lambdaapi.CobroOutput{}, err
	}
	key, err := idempotency.KeyCobro(in.PedidoID)
	if err != nil {
		return lambdaapi.CobroOutput{}, &TaskError{Name: lambdaapi.ErrSolicitudInvalida, Message: err.Error(), Err: err}
	}
	if err := t.verify(ctx, in); err != nil {
		return lambdaapi.CobroOutput{}, t.result(ctx, "cobro", key, err)
	}
	out, err := idempotency.Do(ctx, t.store, key, func(ctx context.Context) (lambdaapi.CobroOutput, error) {
		ch, err := t.gw.Charge(ctx, key, ChargeRequest{
			PedidoID: in.PedidoID, ImporteCentimos: in.ImporteCentimos, Moneda: in.Moneda, TokenTarjeta: in.TokenTarjeta,
		})
		if err != nil {
			return lambdaapi.CobroOutput{}, permanentIfBusiness(err)
		}
		if ch.ID == "" || ch.ImporteCentimos != in.ImporteCentimos || ch.Moneda != in.Moneda {
			// The gateway answered for another amount: never record it as ours.
			return lambdaapi.CobroOutput{}, fmt.Errorf("gateway answer %+v does not match the request", ch)
		}
		return lambdaapi.CobroOutput{PedidoID: in.PedidoID, ReferenciaCobro: ch.ID, ImporteCentimos: ch.ImporteCentimos, Moneda: ch.Moneda}, nil
	}, idempotency.WithPayload(fingerprinted(in)))
	return out, t.result(ctx, "cobro", key, err)
}

// Reembolso refunds the order's charge once (key reembolso:<pedido_id>),
// like Cobro, and only a charge Cobro recorded for the order, up to its
// amount (see refundable).
func (t *Tasks) Reembolso(ctx context.Context, in lambdaapi.ReembolsoInput) (lambdaapi.ReembolsoOutput, error) {
	if err := validate(in.PedidoID, in.ImporteCentimos, in.Moneda, [2]string{"referencia_cobro", in.ReferenciaCobro}); err != nil {
		return lambdaapi.ReembolsoOutput{}, err
	}
	key, err := idempotency.KeyReembolso(in.PedidoID)
	if err != nil {
		return lambdaapi.ReembolsoOutput{}, &TaskError{Name: lambdaapi.ErrSolicitudInvalida, Message: err.Error(), Err: err}
	}
	if err := t.refundable(ctx, in); err != nil {
		return lambdaapi.ReembolsoOutput{}, t.result(ctx, "reembolso", key, err)
	}
	out, err := idempotency.Do(ctx, t.store, key, func(ctx context.Context) (lambdaapi.ReembolsoOutput, error) {
		r, err := t.gw.Refund(ctx, key, RefundRequest{
			PedidoID: in.PedidoID, ReferenciaCobro: in.ReferenciaCobro, ImporteCentimos: in.ImporteCentimos, Moneda: in.Moneda,
		})
		if err != nil {
			return lambdaapi.ReembolsoOutput{}, permanentIfBusiness(err)
		}
		if r.ID == "" || r.ImporteCentimos != in.ImporteCentimos || r.Moneda != in.Moneda {
			return lambdaapi.ReembolsoOutput{}, fmt.Errorf("gateway answer %+v does not match the request", r)
		}
		return lambdaapi.ReembolsoOutput{PedidoID: in.PedidoID, ReferenciaReembolso: r.ID, ReferenciaCobro: in.ReferenciaCobro,
			ImporteCentimos: r.ImporteCentimos, Moneda: r.Moneda}, nil
	}, idempotency.WithPayload(in))
	return out, t.result(ctx, "reembolso", key, err)
}

// refundable checks the refund against the order's charge as Cobro
// recorded it (key cobro:<pedido_id>): the charge must exist and be
// completed, the reference and currency must be its, and the amount at most
// the amount charged. A refund the charge does not back is
// SolicitudInvalida, before any call or claim.
func (t *Tasks) refundable(ctx context.Context, in lambdaapi.ReembolsoInput) error {
	cobroKey, err := idempotency.KeyCobro(in.PedidoID)
	if err != nil {
		return &TaskError{Name: lambdaapi.ErrSolicitudInvalida, Message: err.Error(), Err: err}
	}
	ch, err := idempotency.Result[lambdaapi.CobroOutput](ctx, t.store, cobroKey)
	switch {
	case errors.Is(err, idempotency.ErrNoResult):
		return &TaskError{Name: lambdaapi.ErrSolicitudInvalida, Message: fmt.Sprintf("refund refused: order %s has no completed charge (%s)", in.PedidoID, cobroKey), Err: err}
	case err != nil:
		return err
	}
	var problems []string
	if ch.ReferenciaCobro != in.ReferenciaCobro {
		problems = append(problems, fmt.Sprintf("referencia_cobro %q is not the order's charge %q", in.ReferenciaCobro, ch.ReferenciaCobro))
	}
	if ch.Moneda != in.Moneda {
		problems = append(problems, fmt.Sprintf("moneda %s is not the charge's %s", in.Moneda, ch.Moneda))
	}
	if in.ImporteCentimos > ch.ImporteCentimos {
		problems = append(problems, fmt.Sprintf("importe_centimos %d exceeds the %d charged", in.ImporteCentimos, ch.ImporteCentimos))
	}
	if len(problems) > 0 {
		return &TaskError{Name: lambdaapi.ErrSolicitudInvalida, Message: fmt.Sprintf("refund refused for order %s: %s", in.PedidoID, strings.Join(problems, "; "))}
	}
	return nil
}

// permanentIfBusiness records business refusals as FALLIDO (so a repeat gets
// the same answer without calling the gateway) and leaves every other
// failure transient (the key is released for the retry).
func permanentIfBusiness(err error) error {
	switch {
	case errors.Is(err, ErrCardDeclined):
		return failure.Permanent(codeDeclined, err)
	case errors.Is(err, ErrRejected):
		return failure.Permanent(codeRejected, err)
	}
	return err
}

// result maps a task's error to its *TaskError and logs the outcome.
func (t *Tasks) result(ctx context.Context, task, key string, err error) error {
	if err == nil {
		t.log.LogAttrs(ctx, slog.LevelInfo, "task done", slog.String("task", task), slog.String("idempotency_key", key))
		return nil
	}
	te := classify(err)
	t.log.LogAttrs(ctx, slog.LevelWarn, "task failed", slog.String("task", task), slog.String("idempotency_key", key),
		slog.String("error_name", te.Name), slog.String("error", err.Error()))
	return te
}

func classify(err error) *TaskError {
	var te *TaskError
	if errors.As(err, &te) {
		return te
	}
	name := lambdaapi.ErrPasarelaNoDisponible
	switch code := failure.CodeOf(err); {
	case code == codeDeclined:
		name = lambdaapi.ErrTarjetaRechazada
	case code == codeRejected:
		name = lambdaapi.ErrSolicitudInvalida
	case code != "":
		name = lambdaapi.ErrRegistroInconsistente
	case errors.Is(err, ErrCallsExhausted):
		name = lambdaapi.ErrIntentosAgotados
	case errors.Is(err, breaker.ErrOpen):
		name = lambdaapi.ErrCircuitoAbierto
	case errors.Is(err, idempotency.ErrInProgress), errors.Is(err, idempotency.ErrLockLost):
		name = lambdaapi.ErrOperacionEnCurso
	case errors.Is(err, idempotency.ErrPayloadMismatch), errors.Is(err, idempotency.ErrCorruptRecord):
		name = lambdaapi.ErrRegistroInconsistente
	case errors.Is(err, idempotency.ErrStore):
		name = lambdaapi.ErrIdempotenciaNoDisponible
	case errors.Is(err, idempotency.ErrInvalidKey):
		name = lambdaapi.ErrSolicitudInvalida
	}
	return &TaskError{Name: name, Message: err.Error(), Err: err}
}

// CobroHandler is the Lambda handler of the cobro function. The input is
// decoded here (an amount with a fraction is SolicitudInvalida, not a
// runtime error), and failures are returned as
// messages.InvokeResponse_Error values: aws-lambda-go passes such a value
// through unchanged (any other error's errorType is its Go type name), so
// the errorType Step Functions matches is exactly the lambdaapi name.
func (t *Tasks) CobroHandler() func(context.Context, json.RawMessage) (lambdaapi.CobroOutput, error) {
	return handler(t.Cobro)
}

// ReembolsoHandler is the Lambda handler of the reembolso function (see
// CobroHandler).
func (t *Tasks) ReembolsoHandler() func(context.Context, json.RawMessage) (lambdaapi.ReembolsoOutput, error) {
	return handler(t.Reembolso)
}

func handler[I, O any](task func(context.Context, I) (O, error)) func(context.Context, json.RawMessage) (O, error) {
	return func(ctx context.Context, raw json.RawMessage) (O, error) {
		var in I
		if err := json.Unmarshal(raw, &in); err != nil {
			var zero O
			return zero, invokeError(&TaskError{Name: lambdaapi.ErrSolicitudInvalida, Message: "input: " + err.Error(), Err: err})
		}
		out, err := task(ctx, in)
		return out, invokeError(err)
	}
}

// invokeError turns a task error into the value aws-lambda-go reports
// verbatim (errorType = the lambdaapi name). nil stays nil.
func invokeError(err error) error {
	if err == nil {
		return nil
	}
	te := classify(err)
	return messages.InvokeResponse_Error{Type: te.Name, Message: te.Message}
}
