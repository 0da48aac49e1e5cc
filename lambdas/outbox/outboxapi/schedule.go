package outboxapi

import "time"

// The deployed model.
const (
	// PublisherPeriod between invocations (EventBridge Scheduler's finest rate).
	PublisherPeriod = time.Minute
	// PublisherPollWindow is how long one invocation claims batches.
	PublisherPollWindow = 80 * time.Second
	// PublisherStopMargin is kept free before the deadline: the round in flight
	// (PublishTimeout), the last marks and the metrics flush.
	PublisherStopMargin = 20 * time.Second
	// PublisherTimeout of the function: PublisherPollWindow + PublisherStopMargin.
	PublisherTimeout = PublisherPollWindow + PublisherStopMargin
	// PublisherConcurrency is the invocations that run at once (the overlap).
	PublisherConcurrency = 2
	// Lease and PublishTimeout of the publisher: a healthy publisher marks
	// its rows before its lease ends (PublishTimeout < Lease).
	Lease          = 20 * time.Second
	PublishTimeout = 10 * time.Second
	// RetryBaseDelay of the publisher's backoff between the claims of a
	// failing row.
	RetryBaseDelay = time.Second
)

// Attempts per event on EventBridge (the MF-ATTEMPTS guardrail multiplies
// the three variables, declared per work item: the claims are counted in
// the row, so retried invocations do not multiply them).
const (
	// EnvEntryAttempts is the sends of a failed entry within one claim
	// (outbox.Config.EntryRetries + 1; at least 2).
	EnvEntryAttempts = "OUTBOX_ENTRY_ATTEMPTS"
	// EnvMaxClaims is the claims of an event EventBridge keeps rejecting
	// before it is parked (outbox.Config.MaxAttempts).
	EnvMaxClaims = "OUTBOX_MAX_CLAIMS"
	// DefaultEntryAttempts x DefaultMaxClaims x the SDK's 2 = 12 <= 15.
	DefaultEntryAttempts = 2
	DefaultMaxClaims     = 3
)

// Polling reports whether an invocation started at start polls at t.
func Polling(start, t time.Time) bool {
	return !t.Before(start) && t.Before(start.Add(PublisherPollWindow))
}

// Environment variables of the outbox functions (besides the database's,
// lambdas/postgres, and metricsapi.EnvEnvironment).
const (
	// EnvBusName and EnvEventSource: where the publisher puts events.
	EnvBusName     = "BUS_NAME"
	EnvEventSource = "EVENT_SOURCE"
	// EnvRetentionDays (default 7) and EnvBatchSize (default 1000): the
	// cleanup's retention of published rows and rows per DELETE.
	EnvRetentionDays = "RETENTION_DAYS"
	EnvBatchSize     = "BATCH_SIZE"
	// EnvMasterSecretARN and EnvSchema (default public): the migration's
	// master secret and schema.
	EnvMasterSecretARN = "DB_MASTER_SECRET_ARN"
	EnvSchema          = "DB_SCHEMA"
)
