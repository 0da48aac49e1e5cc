package dlq

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// VerifyOptions configures Verify.
type VerifyOptions struct {
	// Expect is the number of messages redriven; the sources' deletions
	// over the window must reach it. 0 skips that check (and says so).
	Expect int
	// Since is when the redrive started. Zero means one hour ago.
	Since time.Time
	// Window is how long a source's backlog is watched when it is not
	// empty, to see it fall. Default 30 s.
	Window time.Duration
}

// Check statuses.
const (
	CheckOK      = "ok"
	CheckFailed  = "failed"
	CheckUnknown = "unknown" // could not be measured: never counted as ok
	CheckSkipped = "skipped" // not asked for
)

// Check is one of the things Verify looks at.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
}

// VerifyResult is what Verify found.
type VerifyResult struct {
	// Verified is true only when no check failed or is unknown.
	Verified bool    `json:"verified"`
	Checks   []Check `json:"checks"`
}

// Verify checks runbook step 6, and answers VERIFIED only when every check
// passes; a check it cannot measure (CloudWatch or Lambda unreachable) is
// unknown, with the reason, and blocks the yes:
//   - the DLQ is at 0 (nothing visible, in flight or delayed, no move task
//     running or failed);
//   - each source queue's consumer (its Lambda event source mappings) is
//     enabled;
//   - each source queue's backlog is empty or falling over opts.Window;
//   - with opts.Expect, the sources' NumberOfMessagesDeleted since
//     opts.Since reached it.
//
// It returns ErrNotVerified, with the first problem, otherwise.
func (t *Tool) Verify(ctx context.Context, target *Target, opts VerifyOptions) (VerifyResult, error) {
	w := t.out()
	now := t.Clock.Now()
	if opts.Since.IsZero() {
		opts.Since = now.Add(-time.Hour)
	}
	if opts.Window <= 0 {
		opts.Window = 30 * time.Second
	}
	var res VerifyResult
	add := func(name, status, format string, args ...any) {
		c := Check{Name: name, Status: status, Detail: fmt.Sprintf(format, args...)}
		res.Checks = append(res.Checks, c)
		fmt.Fprintf(w, "  %-8s %s\n", strings.ToUpper(status), c.Detail)
	}
	fmt.Fprintf(w, "verify %s:\n", target.DLQ.Name)

	// 1. The DLQ is at 0.
	visible, inflight, delayed, err := t.depths(ctx, target.DLQ)
	if err != nil {
		return res, fmt.Errorf("read %s: %w", target.DLQ.Name, err)
	}
	if n := visible + inflight + delayed; n > 0 {
		add("dlq-empty", CheckFailed, "DLQ %s holds %d messages (%d visible, %d in flight, %d delayed): if they arrived after the redrive, the cause is not fixed or they were misclassified: %s",
			target.DLQ.Name, n, visible, inflight, delayed, t.Command("classify", target.DLQ.Name))
	} else {
		add("dlq-empty", CheckOK, "DLQ %s: 0 visible, 0 in flight, 0 delayed", target.DLQ.Name)
	}
	if tasks, err := t.moveTasks(ctx, target.DLQ.ARN, 1); err == nil && len(tasks) > 0 {
		tk := tasks[0]
		switch {
		case activeTask(tk):
			add("move-task", CheckFailed, "a move task is still running (%s, moved %d, started %s UTC)", aws.ToString(tk.Status), tk.ApproximateNumberOfMessagesMoved, time.UnixMilli(tk.StartedTimestamp).UTC().Format("2006-01-02 15:04:05"))
		case aws.ToString(tk.Status) == "FAILED":
			add("move-task", CheckFailed, "the last move task failed after %d messages: %s", tk.ApproximateNumberOfMessagesMoved, aws.ToString(tk.FailureReason))
		}
	}
	if len(target.Sources) == 0 {
		add("sources", CheckUnknown, "no SQS queue dead-letters into %s (an SNS subscription's or EventBridge target's DLQ): check that the re-published messages were delivered", target.DLQ.Name)
	}

	// 2. Each source's consumer is enabled; 3. its backlog is draining.
	for _, s := range target.Sources {
		t.verifyConsumer(ctx, target, s, add)
	}
	for _, s := range target.Sources {
		if err := t.verifyBacklog(ctx, s, opts.Window, add); err != nil {
			return res, err
		}
	}

	// 4. The deletions reached the redriven count.
	switch {
	case opts.Expect <= 0:
		add("deletions", CheckSkipped, "the sources' deletions: not checked (pass --expect N --since TIME, as redrive's next: line does)")
	case t.Metrics == nil:
		add("deletions", CheckUnknown, "the sources' NumberOfMessagesDeleted: unknown (no CloudWatch client)")
	default:
		total, unknown := 0.0, ""
		for _, s := range target.Sources {
			n, err := t.Metrics.SumDeleted(ctx, s.Name, opts.Since, now)
			if err != nil {
				unknown = fmt.Sprintf("NumberOfMessagesDeleted of %s: unknown: CloudWatch unavailable: %s", s.Name, brief(err))
				break
			}
			total += n
		}
		since := opts.Since.UTC().Format("2006-01-02 15:04")
		switch {
		case unknown != "":
			add("deletions", CheckUnknown, "%s", unknown)
		case total < float64(opts.Expect):
			add("deletions", CheckFailed, "the sources deleted %.0f messages since %s UTC, fewer than the %d redriven: consumers still working (CloudWatch lags a few minutes: run verify again), or failing again", total, since, opts.Expect)
		default:
			add("deletions", CheckOK, "the sources deleted %.0f messages since %s UTC (%d redriven)", total, since, opts.Expect)
		}
	}

	var failed, unknown []string
	for _, c := range res.Checks {
		switch c.Status {
		case CheckFailed:
			failed = append(failed, c.Detail)
		case CheckUnknown:
			unknown = append(unknown, c.Detail)
		}
	}
	if len(failed)+len(unknown) > 0 {
		first := append(failed, unknown...)[0]
		fmt.Fprintf(w, "NOT VERIFIED: %d checks failed, %d unknown; first: %s\n", len(failed), len(unknown), first)
		return res, fmt.Errorf("%w: %s", ErrNotVerified, first)
	}
	res.Verified = true
	fmt.Fprintf(w, "VERIFIED: %s is empty, its sources' consumers run and their backlog drains; record the incident (runbook step 7)\n", target.DLQ.Name)
	return res, nil
}

func (t *Tool) depths(ctx context.Context, q QueueRef) (visible, inflight, delayed int, err error) {
	attrs, err := t.queueAttributes(ctx, q.URL, types.QueueAttributeNameApproximateNumberOfMessages,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, types.QueueAttributeNameApproximateNumberOfMessagesDelayed)
	if err != nil {
		return 0, 0, 0, err
	}
	return atoi(attrs[string(types.QueueAttributeNameApproximateNumberOfMessages)]), atoi(attrs[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)]),
		atoi(attrs[string(types.QueueAttributeNameApproximateNumberOfMessagesDelayed)]), nil
}

func (t *Tool) verifyConsumer(ctx context.Context, target *Target, s QueueRef, add func(name, status, format string, args ...any)) {
	if t.Lambda == nil {
		add("consumer", CheckUnknown, "consumer of %s: unknown (no Lambda client)", s.Name)
		return
	}
	ms, err := t.Lambda.ListEventSourceMappings(ctx, s.ARN)
	if err != nil {
		add("consumer", CheckUnknown, "consumer of %s: unknown: Lambda API unavailable: %s", s.Name, brief(err))
		return
	}
	if len(ms) == 0 {
		add("consumer", CheckFailed, "no Lambda event source mapping reads %s: nothing will process the redriven messages", s.Name)
		return
	}
	for _, m := range ms {
		if m.State != "Enabled" {
			add("consumer", CheckFailed, "the consumer of %s is %s (mapping %s): the redriven messages wait there and expire with its retention; re-enable it: %s",
				s.Name, m.State, m.UUID, t.Command("contain", target.DLQ.Name, "--enable-consumer"))
			continue
		}
		add("consumer", CheckOK, "consumer of %s: mapping %s Enabled (%s)", s.Name, m.UUID, m.FunctionARN)
	}
}

// verifyBacklog passes when the source holds nothing, or holds less
// within window than at first (sampled six times).
func (t *Tool) verifyBacklog(ctx context.Context, s QueueRef, window time.Duration, add func(name, status, format string, args ...any)) error {
	v, f, d, err := t.depths(ctx, s)
	if err != nil {
		add("backlog", CheckUnknown, "backlog of %s: unknown: %s", s.Name, brief(err))
		return nil
	}
	first := v + f + d
	if first == 0 {
		add("backlog", CheckOK, "source %s: empty (0 visible, 0 in flight, 0 delayed)", s.Name)
		return nil
	}
	// Sample six times over the window; the first fall is enough.
	step := window / 6
	for i := range 6 {
		if err := t.Clock.Sleep(ctx, step); err != nil {
			return fmt.Errorf("%w: while watching the backlog of %s", ErrInterrupted, s.Name)
		}
		v, f, d, err = t.depths(ctx, s)
		if err != nil {
			add("backlog", CheckUnknown, "backlog of %s: unknown: %s", s.Name, brief(err))
			return nil
		}
		if v+f+d < first {
			window = step * time.Duration(i+1)
			break
		}
	}
	last := v + f + d
	if last < first {
		add("backlog", CheckOK, "source %s: backlog draining, %d → %d messages in %s", s.Name, first, last, window)
		return nil
	}
	add("backlog", CheckFailed, "source %s: %d messages waiting, %s in %s (%d visible, %d in flight): the consumer is disabled, throttled or failing, so the redrive is not processed yet",
		s.Name, last, map[bool]string{true: "not falling", false: "rising from " + strconv.Itoa(first)}[last == first], window, v, f)
	return nil
}
