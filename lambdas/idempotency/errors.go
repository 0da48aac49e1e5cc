package idempotency

import (
	"errors"
	"fmt"
	"github.com/mercadofresco/integration/lambdas/failure"
	"time"
)

var (
	// ErrInProgress reports that another owner holds a live lock on the key.
	// It is transient: the message should be retried later (for an SQS
	// batch, report it as a batch item failure). The concrete error is an
	// [*InProgressError] that says when the lock expires.
	ErrInProgress = errors.New("idempotency: operation in progress under another owner")

	// ErrLockLost reports that this owner's lock expired and another owner
	// took the key over before this owner could record its outcome. The
	// outcome of this run was NOT recorded; the new owner's record stands.
	// The side effect may have happened twice: this is the gap that the
	// downstream Idempotency-Key (the key fn forwards, see [Do]) closes.
	ErrLockLost = errors.New("idempotency: lock lost to another owner")

	// ErrPayloadMismatch reports that the key was already used with a
	// different payload: a replay would return a result that belongs to
	// another request, so it is refused.
	ErrPayloadMismatch = failure.Permanent("", errors.New("idempotency: same key used with a different payload"))

	// ErrCorruptRecord reports an item under the key that this package did
	// not write or cannot read (missing or mistyped attributes, an unknown
	// estado, a resultado that does not decode into the result type).
	ErrCorruptRecord = failure.Permanent("", errors.New("idempotency: corrupt or foreign record"))

	// ErrStore wraps every DynamoDB failure other than a failed condition
	// (throttling, network, missing table, access denied). Such errors are
	// transient from the handler's point of view.
	ErrStore = errors.New("idempotency: store error")

	// ErrInvalidKey reports an empty, oversized or malformed idempotency key
	// or key component.
	ErrInvalidKey = failure.Permanent("", errors.New("idempotency: invalid key"))
)

// InProgressError is returned when a live lock of another owner holds the
// key. errors.Is(err, ErrInProgress) is true.
type InProgressError struct {
	Key string
	// LockExpiresAt is when the other owner's lock ends; a consumer can use
	// it to pick a visibility timeout for the retry.
	LockExpiresAt time.Time
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("idempotency: key %q in progress under another owner until %s",
		e.Key, e.LockExpiresAt.UTC().Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrInProgress) true.
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// RecordError describes a corrupt or foreign item. errors.Is(err,
// ErrCorruptRecord) is true.
type RecordError struct {
	Key    string
	Reason string
	Err    error
}

func (e *RecordError) Error() string {
	msg := fmt.Sprintf("idempotency: corrupt or foreign record under key %q: %s", e.Key, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrCorruptRecord and the underlying decode error, if any.
func (e *RecordError) Unwrap() []error { return []error{ErrCorruptRecord, e.Err} }
