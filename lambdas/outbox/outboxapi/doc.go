// Package outboxapi is the contract between the outbox's Lambda code
// (lambdas/outbox) and what deploys and measures it (constructs/outbox,
// bench/cmd/outbox-bench), with no dependency beyond the standard library:
//
//   - the versioned SQL migrations (embedded) and their SchemaHash, which
//     the schema's custom resource carries so that a deploy that changes a
//     migration applies them again;
//   - the database roles of the functions (Roles);
//   - the publisher's schedule (an invocation every PublisherPeriod that
//     polls for PublisherPollWindow, so two overlap; docs/design.md#outbox-lag)
//     and the attempts per event;
//   - the names of the metrics the publisher and cleanup emit in
//     MercadoFresco/Tienda.
package outboxapi
