package retry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mercadofresco/integration/lambdas/failure"
)

// Class is how the retrier reads a failure: its lambdas/failure mark
// (permanent and poison are never retried, RetryAfter is throttled, a
// transient mark says nothing was applied), else an HTTP answer, a network
// error or the caller's context.
type Class int

// Failure classes, see the package documentation.
const (
	// ClassPermanent failures are never retried (4xx other than 429, marked
	// permanent or poison, the caller's context ended).
	ClassPermanent Class = iota
	// ClassRetryable failures are retried (5xx, dial failures, marked
	// transient).
	ClassRetryable
	// ClassThrottled failures are retried with the longer wait and
	// Retry-After (429, marked RetryAfter).
	ClassThrottled
	// ClassAmbiguous failures may have been applied by the server (timeouts,
	// connection resets, unknown errors): retried only for idempotent
	// operations.
	ClassAmbiguous
)

func (c Class) String() string {
	switch c {
	case ClassRetryable:
		return "retryable"
	case ClassThrottled:
		return "throttled"
	case ClassAmbiguous:
		return "ambiguous"
	default:
		return "permanent"
	}
}

// StatusError is an HTTP answer that is not a success (lambdas/httpdep
// builds it); Classify reads StatusCode and RetryAfter.
type StatusError struct {
	StatusCode int
	// RetryAfter is the parsed Retry-After header (0 when absent or invalid).
	RetryAfter time.Duration
	// Body is the start of the response body, for the error message.
	Body string
}

func (e *StatusError) Error() string {
	msg := "HTTP " + strconv.Itoa(e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		msg += " " + t
	}
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// ParseRetryAfter parses a Retry-After header value: delta-seconds ("120")
// or an HTTP-date ("Fri, 31 Dec 1999 23:59:59 GMT", and the two obsolete
// formats http.ParseTime accepts), relative to now. A date in the past is 0.
// ok is false for an empty or malformed value.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, int64(24*time.Hour/time.Second))) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// Classify returns the class of err and, for throttling, the server's
// requested wait. ctx is the caller's context: when it has ended, every
// failure is permanent (the caller has given up), while a per-attempt
// timeout derived from it is ambiguous.
func Classify(ctx context.Context, err error) (Class, time.Duration) {
	if err == nil {
		return ClassPermanent, 0
	}
	if ctx != nil && ctx.Err() != nil {
		return ClassPermanent, 0
	}
	var f *failure.Error
	if errors.As(err, &f) {
		switch {
		case f.Kind != failure.KindTransient:
			return ClassPermanent, 0
		case f.After > 0:
			return ClassThrottled, f.After
		}
		return ClassRetryable, 0
	}
	var se *StatusError
	if errors.As(err, &se) {
		switch {
		case se.StatusCode == http.StatusTooManyRequests:
			return ClassThrottled, se.RetryAfter
		case se.StatusCode == http.StatusNotImplemented:
			return ClassPermanent, 0
		case se.StatusCode >= 500:
			if se.StatusCode == http.StatusServiceUnavailable && se.RetryAfter > 0 {
				return ClassThrottled, se.RetryAfter
			}
			return ClassRetryable, 0
		default:
			return ClassPermanent, 0
		}
	}
	if errors.Is(err, context.Canceled) {
		return ClassPermanent, 0
	}
	if IsDialError(err) {
		return ClassRetryable, 0
	}
	// Timeouts (a per-attempt deadline, net.Error.Timeout), resets, EOF
	// mid-answer and anything unknown: the request may have been applied.
	return ClassAmbiguous, 0
}

// IsDialError reports a failure to open the connection (refused, a dial
// that timed out, a name that did not resolve, however the lookup ended):
// the request never left this process, so nothing can have been applied.
func IsDialError(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// Reason says why a Retrier stopped.
type Reason string

// Reasons reported in GiveUpError.
const (
	ReasonPermanent     Reason = "permanent"      // the failure's class is never retried
	ReasonNotIdempotent Reason = "not_idempotent" // ambiguous failure of a non-idempotent operation
	ReasonExhausted     Reason = "exhausted"      // MaxAttempts reached
	ReasonBudget        Reason = "budget"         // the dependency's retry budget is spent
	ReasonDeadline      Reason = "deadline"       // the wait would end after ctx's deadline
	ReasonRetryAfter    Reason = "retry_after"    // the server asked for more than MaxRetryAfter
	ReasonCanceled      Reason = "canceled"       // ctx ended
)

// ErrBudgetExhausted matches (errors.Is) a GiveUpError caused by the retry budget.
var ErrBudgetExhausted = errors.New("retry: retry budget exhausted")

// GiveUpError is returned by Do when the operation failed and will not be
// retried. It wraps the last failure (errors.Is/As see through it).
type GiveUpError struct {
	Attempts int
	Reason   Reason
	Class    Class
	Err      error
}

func (e *GiveUpError) Error() string {
	return fmt.Sprintf("%v (after %d attempt(s), not retried: %s)", e.Err, e.Attempts, e.Reason)
}

func (e *GiveUpError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrBudgetExhausted) true when the budget stopped the retries.
func (e *GiveUpError) Is(target error) bool {
	return target == ErrBudgetExhausted && e.Reason == ReasonBudget
}
