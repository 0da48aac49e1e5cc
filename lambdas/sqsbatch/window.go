package sqsbatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// ErrExpired is matched (errors.Is) by every [*ExpiredError].
var ErrExpired = errors.New(lambdaapi.ReasonExpiredWindow)

// maxClockSkew is how far in the future a re-admission mark may be (the
// operator's clock against the consumer's).
const maxClockSkew = 5 * time.Minute

// Window is a consumer's replay window: it bounds how late the consumer
// processes a message when it recognises duplicates through records that
// expire (its idempotency records, or Step Functions' memory of execution
// names). Check runs before the consumer claims any key or calls anything:
// an event older than Max, measured from the creation time in its body
// (never SentTimestamp, which a redrive or a delayed copy renews), is
// refused as a permanent failure with the reason
// "expired-idempotency-window". A message an operator re-admitted (the
// attribute lambdaapi.AttrReadmision) is processed while that mark is
// younger than lambdaapi.ReadmissionValidity. Max and CreatedAt are
// required. Why: docs/design.md#replay-windows.
type Window struct {
	// Max is how old an event may be and still be processed. The
	// consumer's records must live at least this long.
	Max time.Duration
	// CreatedAt is the dotted path of the event's creation time (RFC 3339)
	// in the body: "confirmado_en", "detail.creado_en".
	CreatedAt string
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Validate reports a window that cannot be applied.
func (w Window) Validate() error {
	var problems []string
	if w.Max <= 0 {
		problems = append(problems, fmt.Sprintf("Max %s must be positive (set %s)", w.Max, lambdaapi.EnvIdempotencyWindow))
	} else if w.Max < lambdaapi.ReadmissionValidity {
		problems = append(problems, fmt.Sprintf("Max %s is shorter than a re-admission's validity (%s)", w.Max, lambdaapi.ReadmissionValidity))
	}
	if w.CreatedAt == "" || strings.HasPrefix(w.CreatedAt, ".") || strings.HasSuffix(w.CreatedAt, ".") || strings.Contains(w.CreatedAt, "..") {
		problems = append(problems, fmt.Sprintf("CreatedAt %q is not a dotted key path", w.CreatedAt))
	}
	if len(problems) > 0 {
		return errors.New("replaywindow: " + strings.Join(problems, "; "))
	}
	return nil
}

// ExpiredError is the refusal of a message older than its window.
type ExpiredError struct {
	// Key is the record's idempotency key ("" when it has none).
	Key string
	// Field is the body key the creation time was read from.
	Field   string
	Created time.Time
	Age     time.Duration
	Window  time.Duration
	// LapsedMark is the re-admission mark the message carried, if it had
	// one that is no longer valid.
	LapsedMark string
}

// Error starts with lambdaapi.ReasonExpiredWindow, which mf-dlq looks for.
func (e *ExpiredError) Error() string {
	var b strings.Builder
	b.WriteString(lambdaapi.ReasonExpiredWindow + ": ")
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	fmt.Fprintf(&b, "%s %s is %s old, beyond this consumer's window of %s (its idempotency records may have expired, so a duplicate would no longer be recognised): not processed",
		e.Field, e.Created.UTC().Format(time.RFC3339), Days(e.Age), Days(e.Window))
	if e.LapsedMark != "" {
		fmt.Fprintf(&b, " (its re-admission mark %s is older than %s)", e.LapsedMark, Days(lambdaapi.ReadmissionValidity))
	}
	b.WriteString("; docs/runbooks/dlq.md#expired-messages")
	return b.String()
}

// Is makes errors.Is(err, ErrExpired) true.
func (e *ExpiredError) Is(target error) bool { return target == ErrExpired }

// Check says whether rec may be processed at the window's now: nil when its
// event is inside the window, or outside it with a valid re-admission mark
// (logged on rec.Logger); a permanent failure wrapping an [*ExpiredError]
// when it is older; poison when its body has no readable creation time (no
// window can be applied to it).
func (w Window) Check(rec *Record) error {
	created, err := CreatedAt([]byte(rec.Body()), w.CreatedAt)
	if err != nil {
		return failure.Poisonf("%s: cannot apply the %s replay window: %w", lambdaapi.ReasonExpiredWindow, Days(w.Max), err)
	}
	now := time.Now()
	if w.Now != nil {
		now = w.Now()
	}
	age := now.Sub(created)
	if age <= w.Max {
		return nil
	}
	mark, valid := Readmission(rec.Message.MessageAttributes, now)
	if valid {
		if rec.Logger != nil {
			rec.Logger.Warn("processing a message older than the replay window: an operator re-admitted it",
				slog.String("readmitted_at", mark), slog.Duration("age", age), slog.Duration("window", w.Max))
		}
		return nil
	}
	return failure.Permanent("", &ExpiredError{Key: rec.IdempotencyKey(), Field: w.CreatedAt, Created: created, Age: age, Window: w.Max, LapsedMark: mark})
}

// Readmission returns the re-admission mark of a message's attributes and
// whether it is valid at now (see ReadmissionValid). mark is "" when the
// message has none.
func Readmission(attrs map[string]events.SQSMessageAttribute, now time.Time) (mark string, valid bool) {
	a, ok := attrs[lambdaapi.AttrReadmision]
	if !ok || a.StringValue == nil {
		return "", false
	}
	return *a.StringValue, ReadmissionValid(*a.StringValue, now)
}

// ReadmissionValid reports whether a re-admission mark admits its message
// at now: an RFC 3339 time not older than lambdaapi.ReadmissionValidity
// and not in the future beyond a few minutes of clock skew.
func ReadmissionValid(mark string, now time.Time) bool {
	t, err := time.Parse(time.RFC3339Nano, mark)
	return err == nil && !t.After(now.Add(maxClockSkew)) && now.Sub(t) <= lambdaapi.ReadmissionValidity
}

// CreatedAt reads the RFC 3339 time at the dotted path of a JSON body.
func CreatedAt(body []byte, path string) (time.Time, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil || env == nil {
		return time.Time{}, fmt.Errorf("no %s in the body (not a JSON object)", path)
	}
	raw, ok, err := Lookup(env, path)
	if err != nil || !ok {
		return time.Time{}, fmt.Errorf("no %s in the body", path)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return time.Time{}, fmt.Errorf("%s is %s, want an RFC 3339 time", path, strconv.Quote(string(raw)))
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q is not an RFC 3339 time", path, s)
	}
	return t, nil
}

// Days prints a duration in days when it is one or more ("45 days",
// "43.5 days"), else as Go does.
func Days(d time.Duration) string {
	if d < 24*time.Hour {
		return d.Round(time.Second).String()
	}
	v := d.Hours() / 24
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10) + " days"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " days"
}
