package localaws

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// The event source mapping: how Lambda hands a queue's messages to a
// consumer and settles the batch.

// Receive is one poll of an event source mapping: up to size messages of
// queueURL as the events.SQSEvent Lambda hands the function (no records
// when none is visible).
func (s *SQS) Receive(ctx context.Context, queueURL, sourceARN string, size int) (events.SQSEvent, error) {
	out, err := s.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &queueURL, MaxNumberOfMessages: int32(size),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}, MessageAttributeNames: []string{"All"}})
	var ev events.SQSEvent
	if err != nil {
		return ev, err
	}
	for _, m := range out.Messages {
		ev.Records = append(ev.Records, EventRecord(m, sourceARN, s.region))
	}
	return ev, nil
}

// Settle deletes what a successful invocation processed: every record of
// ev but those resp lists in batchItemFailures when the mapping reports
// them (FunctionResponseTypes ReportBatchItemFailures), the whole batch
// otherwise. A failed delete does not stop the others; the errors are
// joined.
func (s *SQS) Settle(ctx context.Context, queueURL string, ev events.SQSEvent, resp events.SQSEventResponse, reportFailures bool) error {
	failed := map[string]bool{}
	if reportFailures {
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
	}
	var errs []error
	for _, r := range ev.Records {
		if !failed[r.MessageId] {
			_, err := s.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &queueURL, ReceiptHandle: &r.ReceiptHandle})
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// EventRecord is m as Lambda's SQS event source mapping delivers it from
// the queue queueARN in region (m received with every attribute).
func EventRecord(m types.Message, queueARN, region string) events.SQSMessage {
	rec := events.SQSMessage{
		MessageId:      aws.ToString(m.MessageId),
		ReceiptHandle:  aws.ToString(m.ReceiptHandle),
		Body:           aws.ToString(m.Body),
		Md5OfBody:      aws.ToString(m.MD5OfBody),
		Attributes:     maps.Clone(m.Attributes),
		EventSourceARN: queueARN,
		EventSource:    "aws:sqs",
		AWSRegion:      region,
	}
	if rec.Attributes == nil {
		rec.Attributes = map[string]string{}
	}
	for k, a := range m.MessageAttributes {
		if rec.MessageAttributes == nil {
			rec.MessageAttributes = map[string]events.SQSMessageAttribute{}
		}
		ea := events.SQSMessageAttribute{DataType: aws.ToString(a.DataType)}
		if strings.HasPrefix(ea.DataType, "Binary") {
			ea.BinaryValue = slices.Clone(a.BinaryValue)
		} else {
			ea.StringValue = aws.String(aws.ToString(a.StringValue))
		}
		rec.MessageAttributes[k] = ea
	}
	return rec
}
