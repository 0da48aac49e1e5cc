package localaws

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// SQS's batch limits: at most MaxBatchEntries entries, and at most
// MaxBatchPayload bytes for the bodies and attributes of all entries
// together (the service's limit, whatever the queue's MaximumMessageSize;
// each entry is also held to the queue's own limit).
const (
	MaxBatchEntries = 10
	MaxBatchPayload = 1 << 20
)

// SendMessageBatch sends up to ten messages. As in SQS, a malformed request
// (no entries, more than ten, a bad or repeated id, a payload over
// MaxBatchPayload) fails whole; otherwise each entry succeeds or fails on its
// own, with the answer SendMessage would give it (or the Fault's for
// "SendMessageBatchEntry"), and the call succeeds.
func (f *SQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	const op = "SendMessageBatch"
	ids, payload := make([]*string, len(in.Entries)), 0
	for i, e := range in.Entries {
		ids[i] = e.Id
		payload += len(aws.ToString(e.MessageBody)) + attributesSize(e.MessageAttributes)
	}
	q, err := f.batch(ctx, op, in.QueueUrl, ids)
	if err == nil && payload > MaxBatchPayload {
		err = &types.BatchRequestTooLong{Message: aws.String("the batch's messages together exceed 1 MiB")}
	}
	if err != nil {
		return nil, opError(op, err)
	}
	out := &sqs.SendMessageBatchOutput{Successful: []types.SendMessageBatchResultEntry{}, Failed: []types.BatchResultErrorEntry{}}
	for _, e := range in.Entries {
		m, err := f.entry(op, e.Id, func() (*message, error) { return f.send(q, e) })
		if err != nil {
			out.Failed = append(out.Failed, entryError(e.Id, err))
			continue
		}
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String(m.id),
			MD5OfMessageBody: aws.String(m.md5), MD5OfMessageAttributes: md5OfAttributes(m.attrs), SequenceNumber: nonEmpty(m.seqNumber)})
	}
	return out, nil
}

// DeleteMessageBatch deletes up to ten messages; each entry is answered as
// DeleteMessage would answer it (or as the Fault says for
// "DeleteMessageBatchEntry").
func (f *SQS) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	ids := make([]*string, len(in.Entries))
	for i, e := range in.Entries {
		ids[i] = e.Id
	}
	ok, failed, err := f.receiptBatch(ctx, "DeleteMessageBatch", in.QueueUrl, ids, func(q *fakeQueue, i int) error {
		return f.delete(q, aws.ToString(in.Entries[i].ReceiptHandle))
	})
	if err != nil {
		return nil, err
	}
	out := &sqs.DeleteMessageBatchOutput{Successful: []types.DeleteMessageBatchResultEntry{}, Failed: failed}
	for _, id := range ok {
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: id})
	}
	return out, err
}

// ChangeMessageVisibilityBatch changes the visibility of up to ten
// messages; each entry is answered as ChangeMessageVisibility would answer
// it (or as the Fault says for "ChangeMessageVisibilityBatchEntry").
func (f *SQS) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	ids := make([]*string, len(in.Entries))
	for i, e := range in.Entries {
		ids[i] = e.Id
	}
	ok, failed, err := f.receiptBatch(ctx, "ChangeMessageVisibilityBatch", in.QueueUrl, ids, func(q *fakeQueue, i int) error {
		return f.changeVisibility(q, aws.ToString(in.Entries[i].ReceiptHandle), in.Entries[i].VisibilityTimeout)
	})
	if err != nil {
		return nil, err
	}
	out := &sqs.ChangeMessageVisibilityBatchOutput{Successful: []types.ChangeMessageVisibilityBatchResultEntry{}, Failed: failed}
	for _, id := range ok {
		out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: id})
	}
	return out, err
}

// receiptBatch runs do on each entry of a batch addressed by receipt
// handles and returns the ids that succeeded and the failed entries.
func (f *SQS) receiptBatch(ctx context.Context, op string, url *string, ids []*string, do func(q *fakeQueue, i int) error) ([]*string, []types.BatchResultErrorEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.batch(ctx, op, url, ids)
	if err != nil {
		return nil, nil, opError(op, err)
	}
	var ok []*string
	failed := []types.BatchResultErrorEntry{}
	for i, id := range ids {
		if _, err := f.entry(op, id, func() (*message, error) { return nil, do(q, i) }); err != nil {
			failed = append(failed, entryError(id, err))
			continue
		}
		ok = append(ok, id)
	}
	return ok, failed, nil
}

// batch looks the queue up and applies the rules on a batch's entry ids.
// Callers hold f.mu.
func (f *SQS) batch(ctx context.Context, op string, url *string, ids []*string) (*fakeQueue, error) {
	q, err := f.lookup(ctx, op, url)
	if err != nil {
		return nil, err
	}
	switch {
	case len(ids) == 0:
		return nil, &types.EmptyBatchRequest{Message: aws.String("the batch has no entries")}
	case len(ids) > MaxBatchEntries:
		return nil, &types.TooManyEntriesInBatchRequest{Message: aws.String("a batch has at most 10 entries")}
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !validEntryID(aws.ToString(id)) {
			return nil, &types.InvalidBatchEntryId{Message: aws.String("a batch entry id is 1..80 letters, digits, '-' or '_': " + aws.ToString(id))}
		}
		if seen[*id] {
			return nil, &types.BatchEntryIdsNotDistinct{Message: aws.String("two batch entries have the id " + *id)}
		}
		seen[*id] = true
	}
	return q, nil
}

// entry runs one batch entry after asking the Fault about it.
func (f *SQS) entry(op string, id *string, do func() (*message, error)) (*message, error) {
	if f.fault != nil {
		if err := f.fault(op+"Entry", aws.ToString(id)); err != nil {
			return nil, err
		}
	}
	return do()
}

func validEntryID(id string) bool {
	if id == "" || len(id) > 80 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// entryError is err as a failed batch entry, with its SQS code.
func entryError(id *string, err error) types.BatchResultErrorEntry {
	code, fault := "InternalError", smithy.FaultServer
	var api smithy.APIError
	if errors.As(err, &api) {
		code, fault = api.ErrorCode(), api.ErrorFault()
	}
	return types.BatchResultErrorEntry{Id: id, Code: aws.String(code), Message: aws.String(err.Error()), SenderFault: fault == smithy.FaultClient}
}
