// Package payment is the payment path of the order workflow: the gateway
// client, the charge (cobro) and refund (reembolso) tasks, and the call
// budget.
//
// [Client] is a thin adapter over lambdas/httpdep (POST /v1/cobros and
// /v1/reembolsos, Idempotency-Key cobro:<pedido_id> / reembolso:<pedido_id>):
// 402 is ErrCardDeclined, never retried. [Tasks] are idempotent through
// lambdas/idempotency with the key they send to the gateway; a declined card
// is recorded FALLIDO and repeated without a call, a transient failure
// releases the key; cobro charges only what the outbox publisher signed
// ([WithVerifier], else FirmaInvalida). [CallBudget] caps an operation at
// lambdaapi.MaxGatewayCallsPerOperation (15) calls over every execution.
// Failures carry a lambdaapi payment error name as their Lambda errorType
// ([Tasks.CobroHandler]). Reasoning: docs/design.md#payment-tasks.
package payment
