package lambdaapi

// The payment tasks (cobro, reembolso) and the order workflow: the JSON
// shapes of their input and output, the error names their failures carry
// (the Lambda errorType, which Step Functions matches in Retry and Catch),
// their environment and metrics.

// Error names: the errorType of a failed invocation, i.e. the "Error" that
// a Step Functions Retry's ErrorEquals or a Catch matches. Each is stable:
// renaming one breaks the deployed workflow.
const (
	// ErrTarjetaRechazada: the gateway declined the card (HTTP 402). A
	// business outcome: never retry; Catch it, do not confirm the order and
	// tell the customer. A repeat of the same task returns it again (it is
	// recorded as FALLIDO in the idempotency table).
	ErrTarjetaRechazada = "TarjetaRechazada"
	// ErrPasarelaNoDisponible: the gateway failed transiently (5xx, 429,
	// timeout, connection failure, its API key refused after reading it
	// again: docs/design.md#http-dependencies) after the function's own
	// attempts, or its retry budget was spent. Retry it in the workflow;
	// the key was released, so the retry charges at most once (the gateway's
	// Idempotency-Key covers a charge whose answer was lost).
	ErrPasarelaNoDisponible = "PasarelaNoDisponible"
	// ErrCircuitoAbierto: the gateway's circuit breaker is open; nothing was
	// sent. Fail fast: Catch it, do not confirm the order and tell the
	// customer to try again in a few minutes (charging does not degrade).
	// The workflow may retry it once after the open period.
	ErrCircuitoAbierto = "CircuitoAbierto"
	// ErrOperacionEnCurso: another invocation holds the idempotency lock of
	// this order's charge (a workflow retry overlapping a slow first try).
	// Transient: retry after a few seconds.
	ErrOperacionEnCurso = "OperacionEnCurso"
	// ErrSolicitudInvalida: the task input is invalid (missing pedido_id,
	// an amount that is not positive integer cents, a currency that is not
	// three capital letters) or the gateway refused the request as invalid
	// (HTTP 4xx other than 401, 402, 409, 429). Never retry.
	ErrSolicitudInvalida = "SolicitudInvalida"
	// ErrRegistroInconsistente: the idempotency record of the key belongs to
	// a different request (same pedido_id, different amount) or cannot be
	// read. Never retry: a person must look (the DLQ runbook's data class).
	ErrRegistroInconsistente = "RegistroInconsistente"
	// ErrIdempotenciaNoDisponible: the idempotency table could not be read
	// or written (throttling, network). Transient: retry.
	ErrIdempotenciaNoDisponible = "IdempotenciaNoDisponible"
	// ErrIntentosAgotados: the order's charge (or refund) has made
	// MaxGatewayCallsPerOperation calls to the gateway over all its
	// executions and payment retries; no more are made. Never retry: the
	// order is not confirmed and a person reconciles it with the gateway
	// (a call whose answer was lost may have charged).
	ErrIntentosAgotados = "IntentosAgotados"
	// ErrFirmaInvalida: the charge's signature is missing, malformed, of an
	// unknown key or does not match the amount, currency, card token, order
	// and event asked for (lambdas/signing): the input is not the order the
	// shop committed. Nothing is sent to the gateway. Never retry: the
	// order fails and a person looks (docs/design.md#charge-signature).
	ErrFirmaInvalida = "FirmaInvalida"
	// ErrLambdaThrottled is Lambda's refusal of an invocation beyond the
	// function's reserved concurrency: the function did not run. The
	// workflow waits its turn in a retrier of its own, which MF-ATTEMPTS
	// does not count (docs/design.md#payment-throttle).
	ErrLambdaThrottled = "Lambda.TooManyRequestsException"
)

// MaxGatewayCallsPerOperation is the most calls one operation (an order's
// charge, its refund) makes to the gateway, over every attempt, workflow
// retry and payment retry of the customer (at most 15 attempts on a
// dependency per order: docs/design.md#retry-layers).
const MaxGatewayCallsPerOperation = 15

// ErrorSpec describes one error name for the workflow's Retry and Catch.
type ErrorSpec struct {
	Name string
	// Retry is true for transient errors the workflow should retry.
	Retry bool
	// Business is true for outcomes the customer must be told about (the
	// order is not confirmed).
	Business bool
}

// PaymentErrors lists every error name the payment tasks return.
var PaymentErrors = []ErrorSpec{
	{Name: ErrTarjetaRechazada, Business: true},
	{Name: ErrPasarelaNoDisponible, Retry: true},
	{Name: ErrCircuitoAbierto, Business: true},
	{Name: ErrOperacionEnCurso, Retry: true},
	{Name: ErrSolicitudInvalida},
	{Name: ErrRegistroInconsistente},
	{Name: ErrIdempotenciaNoDisponible, Retry: true},
	{Name: ErrIntentosAgotados, Business: true},
	{Name: ErrFirmaInvalida},
}

// CobroInput is the input of the cobro task. Unknown fields are ignored.
type CobroInput struct {
	PedidoID string `json:"pedido_id"`
	// ImporteCentimos is the amount in integer cents (48.20 EUR = 4820);
	// a JSON number with a fraction is refused.
	ImporteCentimos int64 `json:"importe_centimos"`
	// Moneda is the ISO 4217 code ("EUR").
	Moneda string `json:"moneda"`
	// TokenTarjeta is the card token the shop obtained from the gateway.
	TokenTarjeta string `json:"token_tarjeta"`
	// IDEvento is the PedidoCreado's id_evento, and Firma its signature
	// (eventsapi.PedidoCreado.Firma): cobro charges only an amount,
	// currency and token the outbox publisher signed (ErrFirmaInvalida).
	IDEvento string `json:"id_evento,omitempty"`
	Firma    string `json:"firma,omitempty"`
}

// CobroOutput is the result of the cobro task (also what a repeat returns).
type CobroOutput struct {
	PedidoID        string `json:"pedido_id"`
	ReferenciaCobro string `json:"referencia_cobro"`
	ImporteCentimos int64  `json:"importe_centimos"`
	Moneda          string `json:"moneda"`
}

// ReembolsoInput is the input of the reembolso task (the compensation of a
// charge).
type ReembolsoInput struct {
	PedidoID        string `json:"pedido_id"`
	ReferenciaCobro string `json:"referencia_cobro"`
	ImporteCentimos int64  `json:"importe_centimos"`
	Moneda          string `json:"moneda"`
}

// ReembolsoOutput is the result of the reembolso task.
type ReembolsoOutput struct {
	PedidoID            string `json:"pedido_id"`
	ReferenciaReembolso string `json:"referencia_reembolso"`
	ReferenciaCobro     string `json:"referencia_cobro"`
	ImporteCentimos     int64  `json:"importe_centimos"`
	Moneda              string `json:"moneda"`
}

// GatewayEnvPrefix is the prefix of the gateway's lambdas/httpdep variables.
const GatewayEnvPrefix = "GATEWAY"

// Environment variables of the cobro and reembolso functions (besides the
// breaker's, EnvIdempotencyTable, EnvEnvironment and AWS_MAX_ATTEMPTS).
const (
	// EnvGatewayURL is the gateway's base URL, https (required).
	EnvGatewayURL = GatewayEnvPrefix + EnvSuffixURL
	// EnvGatewaySecretARN is the Secrets Manager secret holding the API key
	// (required): a plain string, or JSON {"api_key": "..."}.
	EnvGatewaySecretARN = GatewayEnvPrefix + EnvSuffixSecretARN
	// EnvGatewayMaxAttempts is the gateway attempts per invocation
	// (default 3, at most 10). The attempts guardrail multiplies it by the
	// workflow's Retry attempts and requires at most 15 per order.
	EnvGatewayMaxAttempts = GatewayEnvPrefix + EnvSuffixMaxAttempts
	// EnvGatewayReadTimeout is the per-attempt read timeout (Go duration,
	// default DefaultReadTimeout). The function timeout must
	// cover MaxAttempts of it.
	EnvGatewayReadTimeout = GatewayEnvPrefix + EnvSuffixReadTimeout
)

// GatewayDependency is the breaker name and Dependencia dimension of the
// payment gateway.
const GatewayDependency = "pasarela"

// Metrics in MercadoFresco/Tienda, dimensions Entorno and Dependencia
// (= GatewayDependency).
const (
	// MetricGatewayLatency is the duration of each gateway attempt in
	// milliseconds (alarm on its p99).
	MetricGatewayLatency = "PasarelaLatencia"
	// MetricGatewayErrors counts gateway attempts that failed (5xx, 429,
	// timeouts, resets).
	MetricGatewayErrors = "PasarelaErrores"
	// MetricRetryBudgetDenied counts retries refused by the retry budget.
	MetricRetryBudgetDenied = "ReintentosDenegados"
)

// The charge signature (lambdas/signing) of the outbox publisher, the order
// starter and cobro.
const (
	// EnvSigningSecretARN names the signing key's Secrets Manager secret.
	EnvSigningSecretARN = "SIGNING_SECRET_ARN"
	// MinSigningKeyBytes is the shortest key the signer and the verifiers
	// use (256 bits, the HMAC-SHA256 output size).
	MinSigningKeyBytes = 32
)
