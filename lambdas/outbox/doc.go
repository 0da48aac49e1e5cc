// Package outbox is MercadoFresco's transactional outbox on Aurora
// PostgreSQL: the shop writes an order and its event in one transaction
// (Add), a publisher moves the events to the EventBridge bus
// bus-mercadofresco, a daily cleanup deletes what was published more than
// 7 days ago, and EMF metrics feed the alarms.
//
// # Why
//
// INSERT into Aurora followed by PutEvents is a dual write: a process that
// dies between the two (deploy, scale-in, OOM) leaves an order without its
// event and nobody retries, because nobody knows. That lost 1 order in 900.
// With the outbox, the event row commits or rolls back with the order.
//
// # Schema
//
// The versioned SQL files of package schema are embedded and applied by
// Migrate, once per deploy, by the custom resource of constructs/outbox
// (lambdas/outbox-migraciones, as the owner role; cmd/outbox-migrate for local
// databases). CreateRoles and Grant give every function its own database
// role with only the privileges it uses (docs/design.md#database-roles).
// Table outbox (id = event id,
// agregado_id, tipo, payload jsonb, creado_en, publicado_en, intentos,
// ultimo_error, lease columns bloqueado_hasta/bloqueado_por, parked flag
// aparcado_en), a partial index on unpublished unparked rows, and the
// example pedidos table.
//
// # Claim with a lease, not a lock held across PutEvents
//
// The publisher claims a batch (BatchSize, default 500) with one short
// transaction around one statement:
//
//	SELECT ... WHERE unpublished AND unparked AND lease free
//	ORDER BY creado_en LIMIT n FOR UPDATE SKIP LOCKED
//
// as the id list of an UPDATE that sets bloqueado_hasta = now() + Lease and
// a per-batch token, and commits. SKIP LOCKED lets concurrent publishers
// claim disjoint batches without waiting on each other; the lease keeps the
// rows away from the others after the row locks are gone. EventBridge is
// then called with no transaction open, and a second short transaction marks
// the rows published (or records the failure). Holding FOR UPDATE across
// PutEvents instead would keep a transaction, its row locks and a database
// connection (through RDS Proxy: a pinned backend) open for as long as the
// slowest PutEvents call and its SDK retries, and would hold back VACUUM;
// with Lambda concurrency that is how the ~200 Aurora connections run out.
//
// # Crash behaviour: at-least-once with the same event id
//
// A publisher that dies after claiming leaves its rows leased; when
// bloqueado_hasta passes (Lease, default 30 s) any publisher re-claims
// them. If it died after PutEvents succeeded but before marking, those
// events are published again, with the same detail.id_evento, so consumers
// de-duplicate. Nothing is ever lost: a row leaves the pending set only
// when a mark statement says PutEvents accepted it, or when it is parked
// (kept, counted and alarmed). Claims abandoned by a crash count in
// intentos but never park a row by themselves; only EventBridge rejecting
// the entry does (so repeated crashes shorten a row's retry budget). A healthy publisher
// always marks well before its lease ends (PublishTimeout < Lease), so two
// live publishers never publish the same row; duplicates come only from
// crash replay (or a publisher stalled longer than its lease).
//
// # Asynchronous commit of the publisher's own transactions
//
// The claim and the verdicts (published marks, failure records, parking)
// run in transactions that start with SET LOCAL synchronous_commit = off:
// their COMMIT returns without waiting for the WAL flush (PostgreSQL
// flushes it within ~3 x wal_writer_delay, 600 ms by default). This is
// safe because what such a commit can lose is only ever publisher
// bookkeeping, and losing it only makes the publisher redo work:
//
//   - The events themselves are inserted by the shop's own transaction
//     (Add), which keeps the server's synchronous_commit: SET LOCAL ends
//     with the publisher's transaction, so a pooled connection the shop
//     reuses is unaffected (TestAsyncCommitOnlyForThePublishersStatements).
//   - A PostgreSQL crash loses at most the last asynchronous commits, never
//     a synchronous one nor anything before it (WAL is flushed in order,
//     and every synchronous commit flushes all earlier records). A lost
//     claim leaves the row claimable: it is claimed again. A lost mark
//     leaves a row that is on the bus unpublished in the table: it is
//     published again with the same id_evento, the crash replay consumers
//     already de-duplicate. A lost failure record or parking is redone on
//     the next attempt (intentos may be one lower than it should).
//   - Nothing else reads the lost state before the crash in a way that
//     matters: the cleanup deletes only rows marked published 7 days ago.
//
// So at-least-once and event id = outbox id hold across a database crash;
// the price is more replays after one, in exchange for not waiting on a
// WAL flush twice per batch.
//
// # Overlapping rounds
//
// While Run finds full batches (a backlog), it records the verdicts of a
// batch on one pooled connection while it claims and sends the next on
// another. Each mark still starts right after its own PutEvents phase, so
// it is as early relative to its lease as in PublishOnce; the two batches
// are disjoint (a batch waiting for its mark is still leased). Run returns
// only after the last mark has finished.
//
// # EventBridge details
//
// Rows become PutEvents entries (Source from Config, DetailType = tipo,
// Time = creado_en, Detail = the payload's JSON object with id_evento,
// agregado_id and creado_en added at its top level: see Detail), packed
// into calls of at most 10 entries and 256 KB, sizes computed as EventBridge
// does (EntrySize). Calls of a batch run concurrently. When FailedEntryCount
// > 0 only the failed entries are re-sent (full-jitter backoff, EntryRetries
// times); the accepted ones are marked. A failing row is released with an
// exponential backoff lease; after MaxAttempts claims, or at once when the
// failure cannot be retried (entry over 256 KB, MalformedDetail, a request
// that EventBridge rejects as invalid: bisected down to the offending
// entry), it is parked with its error and skipped from then on, so a poison
// row never blocks the others. A whole call that fails for infrastructure
// reasons (network, throttling beyond the SDK's retries, credentials)
// refunds the attempt: an EventBridge outage delays events but never parks
// them. Parked rows are counted in the ParkedEvents metric (alarm > 0); an
// operator unparks them after fixing the cause:
//
//	UPDATE outbox SET aparcado_en = NULL, intentos = 0 WHERE id = ...;
//
// Ordering is best effort (ORDER BY creado_en inside a batch); concurrent
// publishers, retries and replays can reorder, so consumers rely on
// versions, not arrival order.
//
// # Polling
//
// Run loops: another round at once while batches come back full, else
// wait PollInterval (1 s) or until a NOTIFY from the insert trigger (Listen)
// wakes it. The Lambda publisher polls only: LISTEN through RDS Proxy pins
// connections.
//
// # Metrics
//
// Every MetricsInterval the publisher writes one EMF line with
// PendingEvents, OldestPendingAgeSeconds, ParkedEvents (read with the
// database clock) and its counters, through lambdas/metrics; the metric
// names are in outboxapi, which the CDK alarms import.
package outbox
