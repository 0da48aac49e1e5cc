package outboxapi

const (
	// MetricPending is the number of unpublished, unparked rows (gauge).
	MetricPending = "PendingEvents"
	// MetricOldestAge is the age in seconds of the oldest pending row (gauge).
	MetricOldestAge = "OldestPendingAgeSeconds"
	// MetricParked is the number of parked (poison) rows (gauge).
	MetricParked = "ParkedEvents"
	// MetricPublished counts rows marked published.
	MetricPublished = "PublishedEvents"
	// MetricFailedAttempts counts rows released after a failed attempt.
	MetricFailedAttempts = "FailedAttempts"
	// MetricNewlyParked counts rows parked since the last emission.
	MetricNewlyParked = "NewlyParkedEvents"
	// MetricDeleted counts rows removed by the cleanup.
	MetricDeleted = "DeletedEvents"
)
