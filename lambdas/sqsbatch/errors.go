package sqsbatch

import "errors"

// The batch's own reasons (the failure kinds are lambdas/failure's).
var (
	// ErrPanic is wrapped around a recovered handler panic (treated as transient).
	ErrPanic = errors.New("handler panicked")
	// ErrDeadline is the reason of records not started (or abandoned) because the
	// invocation was about to time out (transient: they come back).
	ErrDeadline = errors.New("invocation deadline too close")
	// ErrGroupBlocked is the reason of FIFO records not attempted because an
	// earlier record of the same message group failed (transient).
	ErrGroupBlocked = errors.New("an earlier message of the same message group failed")
)
