package dlq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
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
func (t *Tool) peek(ctx context.Context, q QueueRef, max int) ([]types.Message, error) {
	if n := q.MaxReceiveCount(); n > 0 {
		rp, _ := parseRedrive(q.Attrs[string(types.QueueAttributeNameRedrivePolicy)])
		return nil, fmt.Errorf("%w: %s has a redrive policy (maxReceiveCount %d, to %s): every receive counts towards it and could move messages on; look at its dead-letter queue instead", ErrWouldSpendReceives, q.Name, n, rp.DeadLetterTargetArn)
	}
	var out []types.Message
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
		attrs, err := t.queueAttributes(ctx, q.URL, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
		if err != nil || atoi(attrs[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)]) == 0 {
			return out, nil
		}
		fmt.Fprintf(t.log(), "%s messages of %s are in flight (another receiver, or a receive whose answer was lost); waiting %s for them\n",
			attrs[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)], q.Name, PeekVisibility+time.Second)
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
func (t *Tool) receiveAll(ctx context.Context, q QueueRef, max int, out *[]types.Message, handles map[string]string) error {
	idle := 0
	budget := 2*(max+len(*out))/10 + 10
	reported := len(*out)
	for len(*out) < max && idle < 2 && budget > 0 {
		if len(*out)-reported >= progressStep {
			reported = len(*out)
			fmt.Fprintf(t.log(), "received %d messages of %s so far (at most %d)…\n", reported, q.Name, max)
		}
		budget--
		got, err := t.SQS.ReceiveMessage(ctx, allAttributes(&sqs.ReceiveMessageInput{
			QueueUrl: &q.URL, MaxNumberOfMessages: int32(min(10, max-len(*out))), VisibilityTimeout: int32(PeekVisibility / time.Second), WaitTimeSeconds: 1,
		}))
		if err != nil {
			return fmt.Errorf("receive from %s: %w", q.Name, sqsError("ReceiveMessage", err))
		}
		for _, m := range got.Messages {
			if _, seen := handles[aws.ToString(m.MessageId)]; !seen {
				*out = append(*out, m)
			}
			handles[aws.ToString(m.MessageId)] = aws.ToString(m.ReceiptHandle)
		}
		if len(got.Messages) == 0 {
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
		_, err := t.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &url, ReceiptHandle: &h})
		var notInflight *types.MessageNotInflight
		var badHandle *types.ReceiptHandleIsInvalid
		if err != nil && !errors.As(err, &notInflight) && !errors.As(err, &badHandle) {
			fmt.Fprintf(t.log(), "warning: could not release message %s (it comes back by itself within %s): %v\n", id, PeekVisibility, err)
		}
	}
}
