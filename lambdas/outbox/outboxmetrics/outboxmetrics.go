// Package outboxmetrics names the CloudWatch metrics the outbox publisher and
// cleanup emit (lambdas/outbox) and the CDK alarms watch (constructs/outbox),
// so the two sides cannot drift apart. It depends on nothing, so the CDK app
// imports it without linking the outbox's database driver.
//
// Every metric is in metrics.Namespace (MercadoFresco/Tienda) with the one
// dimension metrics.DimensionEnvironment.
package outboxmetrics

const (
	// Pending is the number of unpublished, unparked rows (gauge).
	Pending = "PendingEvents"
	// OldestAge is the age in seconds of the oldest pending row (gauge).
	OldestAge = "OldestPendingAgeSeconds"
	// Parked is the number of parked (poison) rows (gauge).
	Parked = "ParkedEvents"
	// Published counts rows marked published.
	Published = "PublishedEvents"
	// FailedAttempts counts rows released after a failed attempt.
	FailedAttempts = "FailedAttempts"
	// NewlyParked counts rows parked since the last emission.
	NewlyParked = "NewlyParkedEvents"
	// Deleted counts rows removed by the cleanup.
	Deleted = "DeletedEvents"
)
