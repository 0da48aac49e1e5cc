package dlq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mercadofresco/integration/lambdas/queue"
)

// PeekVisibility is the visibility timeout of inspection receives (runbook
// step 2): if the tool dies, the messages are back in 5 seconds by
// themselves.
const PeekVisibility = 5 * time.Second

// progressStep is how many messages a long receive reports progress
// after (on Log).
const progressStep = 100

// releaseTimeout bounds the final ChangeMessageVisibility calls, which run
// even after Ctrl-C.
const releaseTimeout = 15 * time.Second

// ErrWouldSpendReceives: the queue has a redrive policy, so receiving from
// it to look could move messages on to its own DLQ.
var ErrWouldSpendReceives = errors.New("receiving would spend the messages' receives")

// peek receives up to max distinct messages from q without deleting any:
// visibility PeekVisibility, and every message made visible again
// (ChangeMessageVisibility 0) before it returns, also when ctx is done.
// Each message is returned as first received. It refuses a queue with a
// redrive policy.
func (t *Tool) peek(ctx context.Context, q QueueRef, max int) ([]queue.Message, error) {
	if n := q.MaxReceiveCount(); n > 0 {
		rp, _ := parseRedrive(q.Attrs[queue.QueueAttrRedrivePolicy])
		return nil, fmt.Errorf("%w: %s has a redrive policy (maxReceiveCount %d, to %s): every receive counts towards it and could move messages on; look at its dead-letter queue instead", ErrWouldSpendReceives, q.Name, n, rp.DeadLetterTargetArn)
	}
	var out []queue.Message
	handles := map[string]string{} // message id -> latest receipt handle
	defer func() { t.release(ctx, q.URL, handles) }()
	waited := false
	for {
		if err := t.receiveAll(ctx, q, max, &out, handles); err != nil {
			return out, err
		}
		if len(out) >= max || waited {
			return out, nil
		}
		// A receive whose answer was lost (the SDK retries it) leaves its
		// messages in flight for PeekVisibility. Release ours, and if the
		// queue still reports messages in flight, wait once for them.
		t.release(ctx, q.URL, handles)
		attrs, err := t.SQS.GetQueueAttributes(ctx, q.URL, queue.QueueAttrApproximateNumberOfMessagesNotVisible)
		if err != nil || atoi(attrs[queue.QueueAttrApproximateNumberOfMessagesNotVisible]) == 0 {
			return out, nil
		}
		fmt.Fprintf(t.log(), "%s messages of %s are in flight (another receiver, or a receive whose answer was lost); waiting %s for them\n",
			attrs[queue.QueueAttrApproximateNumberOfMessagesNotVisible], q.Name, PeekVisibility+time.Second)
		if err := t.Clock.Sleep(ctx, PeekVisibility+time.Second); err != nil {
			return out, err
		}
		waited = true
	}
}

// receiveAll receives until max distinct messages are held, two receives
// in a row come back empty (everything is held), or a budget of receives
// (twice what max needs, plus what re-receiving the held ones costs) is
// spent, which bounds the loop when the queue keeps handing back messages.
func (t *Tool) receiveAll(ctx context.Context, q QueueRef, max int, out *[]queue.Message, handles map[string]string) error {
	idle := 0
	budget := 2*(max+len(*out))/10 + 10
	reported := len(*out)
	for len(*out) < max && idle < 2 && budget > 0 {
		if len(*out)-reported >= progressStep {
			reported = len(*out)
			fmt.Fprintf(t.log(), "received %d messages of %s so far (at most %d)…\n", reported, q.Name, max)
		}
		budget--
		msgs, err := t.SQS.ReceiveMessage(ctx, &queue.ReceiveMessageInput{
			QueueURL: q.URL, MaxMessages: min(10, max-len(*out)), VisibilityTimeout: PeekVisibility, WaitTime: time.Second,
		})
		if err != nil {
			return fmt.Errorf("receive from %s: %w", q.Name, err)
		}
		for _, m := range msgs {
			if _, seen := handles[m.MessageID]; !seen {
				*out = append(*out, m)
			}
			handles[m.MessageID] = m.ReceiptHandle
		}
		if len(msgs) == 0 {
			idle++
		} else {
			idle = 0
		}
	}
	return nil
}

// release makes the messages visible again at once. A handle whose
// visibility already ran out is fine: the message is visible anyway.
func (t *Tool) release(ctx context.Context, url string, handles map[string]string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	for id, h := range handles {
		err := t.SQS.ChangeMessageVisibility(ctx, url, h, 0)
		if err != nil && !errors.Is(err, queue.ErrMessageNotInflight) && !errors.Is(err, queue.ErrReceiptHandleInvalid) {
			fmt.Fprintf(t.log(), "warning: could not release message %s (it comes back by itself within %s): %v\n", id, PeekVisibility, err)
		}
	}
}
