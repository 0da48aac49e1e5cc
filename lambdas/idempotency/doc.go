// Package idempotency makes a handler exactly-once in effect on top of an
// at-least-once delivery (SQS, SNS, EventBridge, Step Functions retries),
// using the DynamoDB table mercadofresco-idempotencia.
//
// # Protocol
//
// For an idempotency key derived from the domain (see [KeyCobro],
// [KeyCorreoConfirmacion], [KeyReserva], [KeyContenido]; never the SQS
// MessageId), [Do] performs:
//
//  1. A conditional PutItem that writes the record as EN_CURSO, with a fresh
//     owner token and a lock expiry. The condition admits the write only
//     when no live record exists: the key is absent, or the record has
//     expired (expira_en in the past, which TTL may take days to delete), or
//     it is EN_CURSO with an expired lock (its owner died).
//  2. If the claim wins, the handler runs once, then one UpdateItem stores
//     COMPLETADO plus the result (or FALLIDO plus the permanent error), and
//     a transient error deletes the record so that the redelivery can retry.
//     Completion, failure and release are all conditioned on the owner
//     token (a fencing token): an owner whose lock expired and was taken
//     over cannot overwrite the new owner's record (Powertools for AWS
//     Lambda does not guard this).
//  3. If the claim loses, the failed condition is the answer, never retried
//     as a transient error. The existing item comes back in the same call
//     (ReturnValuesOnConditionCheckFailure=ALL_OLD); only when the service
//     does not return it (dynalite, older emulators) does the store read it
//     with a consistent GetItem. A COMPLETADO record returns the stored
//     result unchanged, a FALLIDO record returns the same permanent error,
//     an EN_CURSO record returns an [*InProgressError].
//
// So a first delivery costs two writes, a duplicate one call, and a
// duplicate served from the optional in-memory cache of completed records
// no call at all (TestReportDynamoCalls prints the table).
//
// # Item layout
//
//	clave           S  partition key (configurable: Config.KeyAttribute)
//	estado          S  EN_CURSO | COMPLETADO | FALLIDO
//	resultado       S  the handler's result as JSON (COMPLETADO only)
//	caduca_bloqueo  N  lock expiry, Unix epoch milliseconds (EN_CURSO only)
//	expira_en       N  TTL attribute, Unix epoch seconds (default now + 24 h)
//	propietario     S  owner token of the claim that wrote the record
//	hash_carga      S  SHA-256 of the canonical payload, when validation is on
//	error_codigo    S  permanent error code (FALLIDO only)
//	error_mensaje   S  permanent error text (FALLIDO only)
//
// The result is stored as JSON text rather than a DynamoDB map so that any
// Go type round-trips exactly (numbers, time.Time, json.RawMessage) and a
// repeat decodes the very bytes the first run stored.
//
// # Lock expiry
//
// caduca_bloqueo is the earliest of now + Config.LockWindow (when set) and
// the context deadline; in a Lambda the context deadline is the invocation
// deadline, so the lock ends exactly when the runtime would have killed the
// owner. Without either, [DefaultLockWindow] (15 minutes, the longest a
// Lambda can run) applies.
package idempotency
