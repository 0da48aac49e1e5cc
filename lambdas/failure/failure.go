// Package failure is the project's one vocabulary of failures, shared by the
// retry policy (lambdas/retry), the idempotency records
// (lambdas/idempotency), the batch consumer (lambdas/sqsbatch) and the HTTP
// client (lambdas/httpdep). Whoever knows what a failure means marks it:
//
//   - [Transient] (and any unmarked error): it may succeed later; a call is
//     retried, a message comes back after its visibility timeout.
//   - [RetryAfter]: transient, not before the dependency's wait.
//   - [Permanent]: retrying cannot change it; a message goes to the DLQ at
//     once. With a code it is what an idempotency record stores (FALLIDO,
//     error_codigo) and every repeat of the key gets back.
//   - [Poison]: the message's content can never be processed (to the DLQ).
//
// The outermost mark in an error's chain decides ([KindOf]).
// Reasoning: docs/design.md#failure-vocabulary.
package failure

import (
	"errors"
	"fmt"
	"time"
)

// Kind is what a failure says about trying again.
type Kind int

// Kinds of failure.
const (
	KindTransient Kind = iota
	KindPermanent
	KindPoison
)

// String returns "transient", "permanent" or "poison" (the value of the
// mf-failure-class DLQ attribute).
func (k Kind) String() string {
	switch k {
	case KindPermanent:
		return "permanent"
	case KindPoison:
		return "poison"
	default:
		return "transient"
	}
}

var (
	// ErrPermanent matches (errors.Is) every permanent failure.
	ErrPermanent = errors.New("permanent failure")
	// ErrPoison matches (errors.Is) every poison failure.
	ErrPoison = errors.New("poison message")
)

// Error is a marked failure. Build it with the functions of this package;
// inspect it with errors.As, [KindOf] or [CodeOf].
type Error struct {
	Kind Kind
	// Code is a permanent failure's stable, machine-readable reason: an
	// idempotency record stores it as error_codigo.
	Code string
	// After is a transient failure's wait before the next try (a
	// dependency's Retry-After; 0: the caller's own).
	After time.Duration
	// Replayed is true when the failure was read back from an idempotency
	// record rather than produced in this call.
	Replayed bool
	Err      error
}

func (e *Error) Error() string {
	msg := "-"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	switch {
	case e.Code != "" && e.Replayed:
		return fmt.Sprintf("permanent failure %s (recorded): %s", e.Code, msg)
	case e.Code != "":
		return fmt.Sprintf("permanent failure %s: %s", e.Code, msg)
	case e.Kind == KindTransient:
		return msg
	}
	return e.Kind.String() + ": " + msg
}

// Unwrap returns the marked error.
func (e *Error) Unwrap() error { return e.Err }

// Is matches ErrPermanent and ErrPoison by kind, and another *Error with
// the same non-empty Code, so that a sentinel declared once matches the
// first failure and every replay of it.
func (e *Error) Is(target error) bool {
	var t *Error
	switch {
	case target == ErrPermanent:
		return e.Kind == KindPermanent
	case target == ErrPoison:
		return e.Kind == KindPoison
	case errors.As(target, &t) && t != nil:
		return t.Code != "" && t.Code == e.Code
	}
	return false
}

func mark(err error, k Kind, code string, after time.Duration) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: k, Code: code, After: after, Err: err}
}

// Transient marks err as worth trying again: for a call, even one that is
// not idempotent (the dependency said it applied nothing). Transient(nil)
// is nil.
func Transient(err error) error { return mark(err, KindTransient, "", 0) }

// RetryAfter marks err as transient, to be tried again no sooner than d
// (a dependency's Retry-After; a message stays hidden that long).
// RetryAfter(nil, d) is nil.
func RetryAfter(err error, d time.Duration) error { return mark(err, KindTransient, "", d) }

// Permanent marks err as a failure retrying cannot change. A non-empty
// code makes it stored by an idempotency record. Permanent(code, nil) is nil.
func Permanent(code string, err error) error { return mark(err, KindPermanent, code, 0) }

// Poison marks err as caused by the message's content. Poison(nil) is nil.
func Poison(err error) error { return mark(err, KindPoison, "", 0) }

// Poisonf returns a poison failure with a formatted reason (%w is supported).
func Poisonf(format string, args ...any) error { return Poison(fmt.Errorf(format, args...)) }

// KindOf returns the kind of the outermost mark in err's chain; an
// unmarked error is transient: when in doubt, try again (a queue's
// maxReceiveCount and a retrier's attempts still bound it).
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindTransient
}

// CodeOf returns the code of the outermost mark in err's chain ("" when
// it has none).
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
