package idempotency

import (
	"errors"
	"fmt"
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
	// downstream Idempotency-Key (see [KeyFromContext]) closes.
	ErrLockLost = errors.New("idempotency: lock lost to another owner")

	// ErrPayloadMismatch reports that the key was already used with a
	// different payload: a replay would return a result that belongs to
	// another request, so it is refused.
	ErrPayloadMismatch = errors.New("idempotency: same key used with a different payload")

	// ErrCorruptRecord reports an item under the key that this package did
	// not write or cannot read (missing or mistyped attributes, an unknown
	// estado, a resultado that does not decode into the result type).
	ErrCorruptRecord = errors.New("idempotency: corrupt or foreign record")

	// ErrStore wraps every DynamoDB failure other than a failed condition
	// (throttling, network, missing table, access denied). Such errors are
	// transient from the handler's point of view.
	ErrStore = errors.New("idempotency: store error")

	// ErrInvalidKey reports an empty, oversized or malformed idempotency key
	// or key component.
	ErrInvalidKey = errors.New("idempotency: invalid key")

	// ErrPermanent matches every [*PermanentError] with errors.Is.
	ErrPermanent = errors.New("idempotency: permanent failure")
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

// PermanentError marks a handler failure that retrying cannot fix (a card
// declined, an invalid address). [Do] records it as FALLIDO and every repeat
// of the key gets an equivalent *PermanentError back, without running the
// handler.
//
// Two PermanentErrors match with errors.Is when their Codes are equal, so a
// sentinel declared once, e.g.
//
//	var ErrTarjetaRechazada = idempotency.NewPermanentError("tarjeta_rechazada", "card declined")
//
// matches both the first failure and every replay of it.
type PermanentError struct {
	// Code is a stable, machine-readable reason, stored as error_codigo.
	Code string
	// Message is the human-readable text, stored as error_mensaje.
	Message string
	// Replayed is true when the error was read from the table rather than
	// produced by the handler in this call.
	Replayed bool

	err error
}

// NewPermanentError returns a permanent error with the given code and
// message, suitable as a package-level sentinel.
func NewPermanentError(code, message string) *PermanentError {
	return &PermanentError{Code: code, Message: message}
}

// Permanent wraps err as a permanent failure with the given code. The
// wrapped error stays reachable with errors.Is/As in the first run; a replay
// keeps only the code and the text.
func Permanent(code string, err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Code: code, Message: err.Error(), err: err}
}

func (e *PermanentError) Error() string {
	if e.Replayed {
		return fmt.Sprintf("permanent failure %s (recorded): %s", e.Code, e.Message)
	}
	return fmt.Sprintf("permanent failure %s: %s", e.Code, e.Message)
}

// Unwrap returns the wrapped error, if any.
func (e *PermanentError) Unwrap() error { return e.err }

// Is matches ErrPermanent and any *PermanentError with the same Code.
func (e *PermanentError) Is(target error) bool {
	if target == ErrPermanent {
		return true
	}
	var t *PermanentError
	if errors.As(target, &t) && t != nil {
		return t.Code == e.Code && t.Code != ""
	}
	return false
}

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

// Is makes errors.Is(err, ErrCorruptRecord) true.
func (e *RecordError) Is(target error) bool { return target == ErrCorruptRecord }

// Unwrap returns the underlying decode error, if any.
func (e *RecordError) Unwrap() error { return e.Err }
