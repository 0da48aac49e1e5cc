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
	defer t.release(ctx, q.URL, handles)
	idle := 0
	for len(out) < max && idle < 2 {
		msgs, err := t.SQS.ReceiveMessage(ctx, &queue.ReceiveMessageInput{
			QueueURL: q.URL, MaxMessages: min(10, max-len(out)), VisibilityTimeout: PeekVisibility, WaitTime: time.Second,
		})
		if err != nil {
			return out, fmt.Errorf("receive from %s: %w", q.Name, err)
		}
		fresh := 0
		for _, m := range msgs {
			if _, seen := handles[m.MessageID]; !seen {
				out = append(out, m)
				fresh++
			}
			handles[m.MessageID] = m.ReceiptHandle
		}
		if fresh == 0 {
			idle++
		} else {
			idle = 0
		}
	}
	return out, nil
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
