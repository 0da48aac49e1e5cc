package localaws

import (
	"cmp"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"
)

// Restore stores msgs in the standard queue at url as the SQS they were
// received from held them, visible now: each keeps its message id, body,
// message attributes, MessageGroupId, SentTimestamp and
// DeadLetterQueueSourceArn, and the receives before the one that read it
// (its ApproximateReceiveCount less one, with its
// ApproximateFirstReceiveTimestamp). It loads a saved or generated DLQ as
// it was (mf-dlq's rehearsal sandbox).
func (f *SQS) Restore(url string, msgs []types.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, ok := f.byURL[url]
	if !ok {
		return noQueue(url)
	}
	now := f.now()
	at := func(m types.Message, n types.MessageSystemAttributeName) time.Time {
		if ms, err := strconv.ParseInt(m.Attributes[string(n)], 10, 64); err == nil && ms > 0 {
			return time.UnixMilli(ms)
		}
		return time.Time{}
	}
	for _, m := range msgs {
		body := aws.ToString(m.Body)
		n, _ := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
		r := &message{q: q, id: cmp.Or(aws.ToString(m.MessageId), uuid.NewString()), body: body, md5: md5Hex(body), attrs: copyAttrs(m.MessageAttributes),
			groupID: m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)], sentAt: cmp.Or(at(m, types.MessageSystemAttributeNameSentTimestamp), now),
			receiveCount: max(0, n-1), visibleAt: now, dlqSource: m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)]}
		if r.receiveCount > 0 {
			r.firstReceive = at(m, types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp)
		}
		q.msgs = append(q.msgs, r)
		q.stats.Sent++
	}
	return nil
}
