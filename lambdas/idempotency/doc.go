// Package idempotency makes a handler exactly-once in effect on top of an
// at-least-once delivery (SQS, SNS, EventBridge, Step Functions retries),
// using the DynamoDB table mercadofresco-idempotencia.
//
// For a key derived from the domain ([KeyCobro], [KeyCorreoConfirmacion],
// ...; never the SQS MessageId), [Do] claims the record EN_CURSO with a
// conditional PutItem (absent, expired, or EN_CURSO with an expired lock),
// runs the handler once and stores COMPLETADO with the result or FALLIDO
// with a permanent failure that has a code (lambdas/failure); a transient error deletes the record. Every write
// is fenced by the claim's owner token. A lost claim returns the stored
// result, the same permanent error, or an [*InProgressError]. The lock ends
// at the context deadline (the invocation's) or LockWindow. The item layout
// and costs: docs/design.md#idempotency-protocol.
package idempotency
