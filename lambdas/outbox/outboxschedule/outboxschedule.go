// Package outboxschedule is how the outbox publisher is deployed, in
// numbers shared by the CDK construct (constructs/outbox), the Lambda main
// (lambdas/outbox-publicador) and the benchmark (bench/cmd/outbox-bench), so
// the lag the benchmark reports is the lag of what is deployed. It depends
// on the standard library only.
//
// # Overlapping invocations
//
// A schedule starts an invocation every Period; each polls (every second)
// for PollWindow, longer than Period, then stops claiming and finishes its
// round within StopMargin before the function's Timeout. Consecutive
// invocations overlap for PollWindow - Period, so a publisher is always
// polling, also while the next one starts: the commit-to-bus lag is the
// poll interval plus a publish, around the clock, instead of up to the
// 20 s gap of a 40 s window every minute. Two invocations run at once
// during the overlap (reserved concurrency Concurrency); the lease and FOR
// UPDATE SKIP LOCKED keep them from publishing the same row. The reasoning
// and the cost: docs/design.md#outbox-lag.
package outboxschedule

import "time"

// The deployed model.
const (
	// Period between invocations (EventBridge Scheduler's finest rate).
	Period = time.Minute
	// PollWindow is how long one invocation claims batches.
	PollWindow = 80 * time.Second
	// StopMargin is kept free before the deadline: the round in flight
	// (PublishTimeout), the last marks and the metrics flush.
	StopMargin = 20 * time.Second
	// Timeout of the function: PollWindow + StopMargin.
	Timeout = PollWindow + StopMargin
	// Concurrency is the invocations that run at once (the overlap).
	Concurrency = 2
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
	return !t.Before(start) && t.Before(start.Add(PollWindow))
}
