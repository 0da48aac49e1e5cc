package dlq

import (
	"context"
	"fmt"
	"time"

	"github.com/mercadofresco/integration/lambdas/queue"
)

// VerifyOptions configures Verify.
type VerifyOptions struct {
	// Expect is the number of messages redriven; the sources' deletions
	// over the window must reach it. 0 skips that check.
	Expect int
	// Since is when the redrive started. Zero means one hour ago.
	Since time.Time
}

// Verify checks runbook step 6: the DLQ is back at 0 (nothing visible, in
// flight or delayed, and no move task running), and the source queues'
// NumberOfMessagesDeleted since the redrive reached the expected count.
// It returns ErrNotVerified, with what is wrong, otherwise.
func (t *Tool) Verify(ctx context.Context, target *Target, opts VerifyOptions) error {
	w := t.out()
	now := t.Clock.Now()
	if opts.Since.IsZero() {
		opts.Since = now.Add(-time.Hour)
	}
	var problems []string
	attrs, err := t.SQS.GetQueueAttributes(ctx, target.DLQ.URL, queue.QueueAttrApproximateNumberOfMessages,
		queue.QueueAttrApproximateNumberOfMessagesNotVisible, queue.QueueAttrApproximateNumberOfMessagesDelayed)
	if err != nil {
		return fmt.Errorf("read %s: %w", target.DLQ.Name, err)
	}
	visible, inflight, delayed := atoi(attrs[queue.QueueAttrApproximateNumberOfMessages]),
		atoi(attrs[queue.QueueAttrApproximateNumberOfMessagesNotVisible]), atoi(attrs[queue.QueueAttrApproximateNumberOfMessagesDelayed])
	fmt.Fprintf(w, "DLQ %s: %d visible, %d in flight, %d delayed\n", target.DLQ.Name, visible, inflight, delayed)
	if n := visible + inflight + delayed; n > 0 {
		problems = append(problems, fmt.Sprintf("%d messages in %s: if they are new arrivals after the redrive, the cause is not fixed or they were misclassified: run mf-dlq classify %s", n, target.DLQ.Name, target.DLQ.Name))
	}
	if tasks, err := t.SQS.ListMessageMoveTasks(ctx, target.DLQ.ARN, 1); err == nil && len(tasks) > 0 {
		tk := tasks[0]
		fmt.Fprintf(w, "last move task: %s, moved %d (started %s UTC)\n", tk.Status, tk.Moved, tk.Started.UTC().Format("2006-01-02 15:04:05"))
		if tk.Active() {
			problems = append(problems, "a move task is still running")
		}
		if tk.Status == queue.MoveTaskFailed {
			problems = append(problems, "the last move task failed: "+tk.FailureReason)
		}
	}
	if opts.Expect > 0 {
		switch {
		case t.Metrics == nil:
			fmt.Fprintf(w, "NumberOfMessagesDeleted: not checked (no CloudWatch client)\n")
		default:
			total := 0.0
			for _, s := range target.Sources {
				n, err := t.Metrics.SumDeleted(ctx, s.Name, opts.Since, now)
				if err != nil {
					fmt.Fprintf(w, "NumberOfMessagesDeleted of %s: CloudWatch unavailable: %s\n", s.Name, brief(err))
					continue
				}
				fmt.Fprintf(w, "source %s: NumberOfMessagesDeleted %.0f since %s UTC\n", s.Name, n, opts.Since.UTC().Format("15:04"))
				total += n
			}
			if total < float64(opts.Expect) {
				problems = append(problems, fmt.Sprintf("the sources deleted %.0f messages since %s, fewer than the %d redriven: consumers still working (CloudWatch lags a few minutes), or failing again", total, opts.Since.UTC().Format("15:04"), opts.Expect))
			}
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(w, "NOT VERIFIED: %s\n", p)
		}
		return fmt.Errorf("%w: %s", ErrNotVerified, problems[0])
	}
	fmt.Fprintf(w, "verified: %s is empty; record the incident (runbook step 7)\n", target.DLQ.Name)
	return nil
}
