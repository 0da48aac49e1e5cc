// Package localaws is the local AWS of the tests, in one place: an
// in-memory SQS with the SDK client's signatures (SQS) and its wire
// (Handler), Lambda's event source mapping over it (Receive, Settle), the
// recording endpoint that answers the other AWS APIs the functions call
// (Endpoint: EventBridge, Step Functions, Secrets Manager, SES, DynamoDB,
// with a ledger; UseEndpoint points the SDK at it), the local processes
// (dynalite, a private Redis, a PostgreSQL schema or database of its own,
// aws-local-stepfunctions) and the fake third
// parties with their ledgers (Service, SES). Nothing here imports the
// project's Lambda code: internal/lambdatest builds functions on it.
// Reasoning: docs/design.md#local-aws and #sqs-fake.
package localaws
