package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Class says whether and how a failure may be retried.
type Class int

// Failure classes, see the package documentation.
const (
	// ClassPermanent failures are never retried (4xx other than 429, marked
	// Permanent, the caller's context ended).
	ClassPermanent Class = iota
	// ClassRetryable failures are retried (5xx, dial failures, marked Retryable).
	ClassRetryable
	// ClassThrottled failures are retried with the longer wait and
	// Retry-After (429, marked Throttled).
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

// StatusError is an HTTP answer that is not a success. [CheckResponse]
// builds it; Classify reads StatusCode and RetryAfter.
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

// maxErrorBody bounds the body kept in a StatusError.
const maxErrorBody = 512

// CheckResponse returns nil for a 2xx/3xx response and a *StatusError
// otherwise, with Retry-After parsed relative to now and the first 512 bytes
// of the body. It does not close the body.
func CheckResponse(resp *http.Response, now time.Time) error {
	if resp.StatusCode < 400 {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	ra, _ := ParseRetryAfter(resp.Header.Get("Retry-After"), now)
	return &StatusError{StatusCode: resp.StatusCode, RetryAfter: ra, Body: strings.TrimSpace(string(body))}
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

// marked is an error classified by its creator.
type marked struct {
	class Class
	after time.Duration
	err   error
}

func (m *marked) Error() string { return m.err.Error() }
func (m *marked) Unwrap() error { return m.err }

// Permanent marks err as never retried. Permanent(nil) is nil.
func Permanent(err error) error { return mark(ClassPermanent, 0, err) }

// Retryable marks err as safe to retry even for a non-idempotent operation
// (the server said it applied nothing). Retryable(nil) is nil.
func Retryable(err error) error { return mark(ClassRetryable, 0, err) }

// Throttled marks err as a throttling answer; after is the server's
// Retry-After (0 if none). Throttled(nil, d) is nil.
func Throttled(err error, after time.Duration) error { return mark(ClassThrottled, after, err) }

// Ambiguous marks err as a failure whose effect is unknown (retried only
// for idempotent operations). Ambiguous(nil) is nil.
func Ambiguous(err error) error { return mark(ClassAmbiguous, 0, err) }

func mark(c Class, after time.Duration, err error) error {
	if err == nil {
		return nil
	}
	return &marked{class: c, after: after, err: err}
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
	var m *marked
	if errors.As(err, &m) {
		return m.class, m.after
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
