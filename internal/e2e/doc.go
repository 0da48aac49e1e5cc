// Package e2e runs the whole order flow on one machine, as synthesized,
// under chaos, and reports whether every order was charged, prepared,
// confirmed by e-mail and notified to the ERP exactly once (TestOrderFlow: 100
// orders in `make test`, 1,000 with `make e2e` (docs/e2e-report.md), 9,000 in
// ten times Friday's bursts with `make e2e-friday`).
//
// Real: the project's code, each function built the way its main builds it
// from its template environment with real SDK clients on local endpoints;
// PostgreSQL, dynalite and Redis; the configuration, read from the committed
// prod template snapshots (queues, mappings, rules, pipe, state machine run
// in aws-local-stepfunctions). Played: SQS (internal/localaws), EventBridge,
// SNS, Step Functions' API, Secrets Manager (localaws.Endpoint), Lambda's
// pollers and the external services (fakes with a ledger). Every event is
// delivered twice. What is played, the two time scales and the departures
// from the templates: docs/design.md#e2e-run.
package e2e
