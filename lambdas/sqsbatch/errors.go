package sqsbatch

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Handlers classify their failures by wrapping with
// Permanent, Poison or RetryAfter; anything else is transient.
var (
	// ErrPoison marks a message whose content can never be processed by this
	// consumer (malformed JSON, a missing required key, an unknown major
	// version). Retrying cannot help: it goes to the DLQ after one receive.
	ErrPoison = errors.New("poison message")
	// ErrPermanent marks a business failure that retrying cannot change (the
	// order no longer exists, the card was declined). It goes to the DLQ after
	// one receive, like poison, but is reported with class "permanent".
	ErrPermanent = errors.New("permanent failure")
	// ErrPanic is wrapped around a recovered handler panic (treated as transient).
	ErrPanic = errors.New("handler panicked")
	// ErrDeadline is the reason of records not started (or abandoned) because the
	// invocation was about to time out (transient: they come back).
	ErrDeadline = errors.New("invocation deadline too close")
	// ErrGroupBlocked is the reason of FIFO records not attempted because an
	// earlier record of the same message group failed (transient).
	ErrGroupBlocked = errors.New("an earlier message of the same message group failed")
	// ErrBatchFailed is returned by Process, together with a response listing
	// every record, when no record of a non-empty batch succeeded and
	// Config.FailInvocationWhenAllFail is set. Lambda then counts an
	// invocation error and retries the whole batch, which is what the
	// response says anyway.
	ErrBatchFailed = errors.New("sqsbatch: every record of the batch failed")
)

// Class is how a record's failure is treated.
type Class int

// Failure classes.
const (
	// ClassTransient failures are reported in batchItemFailures: SQS makes the
	// message visible again after its visibility timeout, and the queue's
	// redrive policy (maxReceiveCount) is the safety net.
	ClassTransient Class = iota
	// ClassPermanent failures are sent to the DLQ at once and acknowledged.
	ClassPermanent
	// ClassPoison messages are sent to the DLQ at once and acknowledged.
	ClassPoison
)

// String returns "transient", "permanent" or "poison" (the value of the
// mf-failure-class DLQ attribute).
func (c Class) String() string {
	switch c {
	case ClassPermanent:
		return "permanent"
	case ClassPoison:
		return "poison"
	default:
		return "transient"
	}
}

// Error is a classified failure. Wrap errors with Permanent, Poison or
// RetryAfter instead of building it; inspect it with errors.As.
type Error struct {
	Class Class
	// After, for transient failures, asks the library to keep the message
	// hidden this long (ChangeMessageVisibility) instead of the queue's
	// visibility timeout, e.g. 300 s for the ERP notice while the breaker is open.
	After time.Duration
	Err   error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err == nil {
		return e.Class.String()
	}
	return e.Class.String() + ": " + e.Err.Error()
}

// Unwrap returns the wrapped error.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrPoison) and errors.Is(err, ErrPermanent) true for
// the corresponding classes.
func (e *Error) Is(target error) bool {
	return (target == ErrPoison && e.Class == ClassPoison) || (target == ErrPermanent && e.Class == ClassPermanent)
}

// Permanent marks err as a permanent failure: the record goes to the DLQ
// after this single receive. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Class: ClassPermanent, Err: err}
}

// Poison marks err as caused by the message content: the record goes to
// the DLQ after this single receive. Poison(nil) is nil.
func Poison(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Class: ClassPoison, Err: err}
}

// Poisonf returns a poison error with a formatted reason (%w is supported).
func Poisonf(format string, args ...any) error {
	return &Error{Class: ClassPoison, Err: fmt.Errorf(format, args...)}
}

// RetryAfter marks err as transient and asks for the message to come back in
// d rather than after the queue's visibility timeout (the library calls
// ChangeMessageVisibility when Config.Visibility is set). RetryAfter(nil, d)
// is nil.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &Error{Class: ClassTransient, After: d, Err: err}
}

// Classify returns the class of err: ClassPoison if errors.Is(err, ErrPoison),
// ClassPermanent if errors.Is(err, ErrPermanent), otherwise ClassTransient (including
// panics, timeouts and anything unknown: when in doubt, retry, because the
// queue's maxReceiveCount still bounds the attempts).
func Classify(err error) Class {
	switch {
	case err == nil:
		return ClassTransient
	case errors.Is(err, ErrPoison):
		return ClassPoison
	case errors.Is(err, ErrPermanent):
		return ClassPermanent
	default:
		return ClassTransient
	}
}
