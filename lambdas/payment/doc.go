// Package payment is the payment path of the order workflow: the gateway
// client and the charge (cobro) and refund (reembolso) tasks.
//
// # The gateway client
//
// [Client] speaks the gateway's JSON API:
//
//	POST /v1/cobros       {"pedido_id","importe_centimos","moneda","token_tarjeta"}
//	                      201 {"id","pedido_id","importe_centimos","moneda","estado"}
//	                      402 {"codigo":"tarjeta_rechazada","mensaje"}
//	POST /v1/reembolsos   {"pedido_id","referencia_cobro","importe_centimos","moneda"}
//	                      201 {"id","referencia_cobro","importe_centimos","moneda","estado"}
//
// with headers Authorization: Bearer <API key> and Idempotency-Key
// (cobro:<pedido_id>, reembolso:<pedido_id>). Each operation runs through
// the retry library (lambdas/retry: full jitter, the gateway's retry
// budget; sent as idempotent because of the key, so timeouts and resets are
// retried and the gateway returns the first charge instead of making a
// second) and each attempt through the shared circuit breaker
// (lambdas/breaker): an open circuit stops the operation at once. Each
// attempt has its own read timeout (default 30 s, GATEWAY_READ_TIMEOUT), far
// below the queue visibility timeouts, unlike the lesson's 180 s against
// 120 s. The API key comes from Secrets Manager ([SecretKey]: cached for an
// hour, read again when the gateway answers 401, then the request is sent
// once more).
//
// Classification: 2xx success; 402 card declined (never retried); 409 (the
// same key still running at the gateway) retried; 401 after a refresh, and
// other 4xx, never retried; 429 and 5xx retried with the retry library's
// waits (Retry-After honoured); no answer retried. The breaker counts only
// no answer, 5xx and 429 as the gateway failing.
//
// # The tasks
//
// [Tasks.Cobro] and [Tasks.Reembolso] are idempotent through
// lambdas/idempotency with the same key they send to the gateway, so two
// layers hold: a repeat after our record is written returns the stored
// result (the same referencia_cobro); a repeat in the gap between the charge
// and our record (the Lambda died, the answer was lost) is answered by the
// gateway's own Idempotency-Key. A declined card is recorded as FALLIDO
// and every repeat gets it back without calling the gateway; a transient
// failure releases the key for the workflow's retry. Amounts are integer
// cents with an explicit ISO 4217 currency.
//
// # At most 15 gateway calls per operation
//
// The attempt settings bound one execution (GATEWAY_MAX_ATTEMPTS per task
// run, times the workflow's retries), not an order: a customer who pays
// again after an outage starts another execution. [CallBudget] keeps the
// SPEC's bound for the whole order: a counter per operation key in the
// idempotency table, taken before each call and given back when the breaker
// refuses it; once paymentapi.MaxGatewayCallsPerOperation calls are made the
// task fails with IntentosAgotados, which the workflow does not retry.
//
// Failures carry a Step Functions error name (paymentapi.Err*): the Lambda
// handlers ([Tasks.CobroHandler]) return messages.InvokeResponse_Error
// values, which aws-lambda-go reports verbatim, so the errorType of the
// failed invocation is exactly the documented name
// (TestErrorTypeThroughTheLambdaRuntime runs the real runtime loop to check
// it).
package payment
