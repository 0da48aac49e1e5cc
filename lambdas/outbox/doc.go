// Package outbox is MercadoFresco's transactional outbox on Aurora
// PostgreSQL: the shop writes an order and its event in one transaction
// (Add), a Publisher moves the events to bus-mercadofresco, a daily Cleanup
// deletes what was published more than 7 days ago, and EMF metrics feed the
// alarms. Migrate, CreateRoles and Grant apply the schema and each
// function's database role once per deploy, run by the Migrator of the
// schema's custom resource.
//
// Delivery is at least once with the same event id (detail.id_evento = the
// row's id): a row leaves the pending set only when PutEvents accepted it or
// when it is parked (kept, counted and alarmed) after MaxAttempts claims or
// an entry EventBridge can never accept. Claims are leases (SKIP LOCKED, no
// transaction open across PutEvents). Ordering is best effort. A Signer
// (ChargeSigner) signs each PedidoCreado (docs/design.md#charge-signature).
// The reasoning: docs/design.md#outbox-publisher.
package outbox
