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
// own, with the answer SendMessage would give it (or the Fault's for op
// "SendMessageBatchEntry" and the entry's Id), and the call succeeds.
func (f *SQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	const op = "SendMessageBatch"
	q, err := f.lookup(ctx, op, in.QueueUrl)
	if err == nil {
		err = validateBatch(in.Entries)
	}
	if err != nil {
		return nil, opError(op, err)
	}
	out := &sqs.SendMessageBatchOutput{Successful: []types.SendMessageBatchResultEntry{}, Failed: []types.BatchResultErrorEntry{}}
	for _, e := range in.Entries {
		var m *message
		var err error
		if f.fault != nil {
			err = f.fault(op+"Entry", aws.ToString(e.Id))
		}
		if err == nil {
			m, err = f.send(q, e)
		}
		if err != nil {
			out.Failed = append(out.Failed, entryError(e.Id, err))
			continue
		}
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String(m.id),
			MD5OfMessageBody: aws.String(m.md5), MD5OfMessageAttributes: md5OfAttributes(m.attrs), SequenceNumber: nonEmpty(m.seqNumber)})
	}
	return out, nil
}

// validateBatch applies the rules on a batch as a whole: its size, its
// entry ids and its payload.
func validateBatch(entries []types.SendMessageBatchRequestEntry) error {
	switch {
	case len(entries) == 0:
		return &types.EmptyBatchRequest{Message: aws.String("the batch has no entries")}
	case len(entries) > MaxBatchEntries:
		return &types.TooManyEntriesInBatchRequest{Message: aws.String("a batch has at most 10 entries")}
	}
	seen, payload := map[string]bool{}, 0
	for _, e := range entries {
		id := aws.ToString(e.Id)
		if !batchEntryID.MatchString(id) {
			return &types.InvalidBatchEntryId{Message: aws.String("a batch entry id is 1..80 letters, digits, '-' or '_': " + id)}
		}
		if seen[id] {
			return &types.BatchEntryIdsNotDistinct{Message: aws.String("two batch entries have the id " + id)}
		}
		seen[id] = true
		payload += len(aws.ToString(e.MessageBody)) + attributesSize(e.MessageAttributes)
	}
	if payload > MaxBatchPayload {
		return &types.BatchRequestTooLong{Message: aws.String("the batch's messages together exceed 1 MiB")}
	}
	return nil
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
