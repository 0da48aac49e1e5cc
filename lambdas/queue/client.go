package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// SDK is the subset of *sqs.Client that Client uses; tests substitute it.
type SDK interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// Client implements API over the aws-sdk-go-v2 SQS client. Retries are the
// SDK client's (configure RetryMaxAttempts on the client: the project uses
// lambdaapi.SDKMaxAttempts, docs/design.md#retry-layers).
type Client struct {
	sdk SDK
}

var _ API = (*Client)(nil)

// New returns a Client over sdk (normally *sqs.Client).
func New(sdk SDK) *Client { return &Client{sdk: sdk} }

// seconds converts d to whole seconds for SQS, rounding up (never shortens a
// visibility timeout) and saturating.
func seconds(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	s := math.Ceil(d.Seconds())
	if s > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(s)
}

// SendMessage implements Sender.
func (c *Client) SendMessage(ctx context.Context, in *SendMessageInput) (*SendMessageOutput, error) {
	req := &sqs.SendMessageInput{
		QueueUrl:     aws.String(in.QueueURL),
		MessageBody:  aws.String(in.Body),
		DelaySeconds: seconds(in.Delay),
	}
	if in.MessageGroupID != "" {
		req.MessageGroupId = aws.String(in.MessageGroupID)
	}
	if in.MessageDeduplicationID != "" {
		req.MessageDeduplicationId = aws.String(in.MessageDeduplicationID)
	}
	if len(in.MessageAttributes) > 0 {
		req.MessageAttributes = make(map[string]types.MessageAttributeValue, len(in.MessageAttributes))
		for k, a := range in.MessageAttributes {
			v := types.MessageAttributeValue{DataType: aws.String(a.DataType)}
			if a.BinaryValue != nil {
				v.BinaryValue = a.BinaryValue
			} else {
				v.StringValue = aws.String(a.StringValue)
			}
			req.MessageAttributes[k] = v
		}
	}
	out, err := c.sdk.SendMessage(ctx, req)
	if err != nil {
		return nil, mapError("SendMessage", err)
	}
	return &SendMessageOutput{MessageID: aws.ToString(out.MessageId), SequenceNumber: aws.ToString(out.SequenceNumber)}, nil
}

// ReceiveMessage implements Receiver. It always asks for every system and
// message attribute: consumers need the receive count and the DLQ tools need
// everything.
func (c *Client) ReceiveMessage(ctx context.Context, in *ReceiveMessageInput) ([]Message, error) {
	max := cmp.Or(in.MaxMessages, 1)
	if max < 1 || max > 10 {
		return nil, fmt.Errorf("%w: MaxMessages %d not in 1..10", ErrInvalidParameter, in.MaxMessages)
	}
	req := &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(in.QueueURL),
		MaxNumberOfMessages:         int32(max),
		VisibilityTimeout:           seconds(in.VisibilityTimeout),
		WaitTimeSeconds:             seconds(in.WaitTime),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	}
	out, err := c.sdk.ReceiveMessage(ctx, req)
	if err != nil {
		return nil, mapError("ReceiveMessage", err)
	}
	msgs := make([]Message, 0, len(out.Messages))
	for _, m := range out.Messages {
		msg := Message{
			MessageID:     aws.ToString(m.MessageId),
			ReceiptHandle: aws.ToString(m.ReceiptHandle),
			Body:          aws.ToString(m.Body),
			MD5OfBody:     aws.ToString(m.MD5OfBody),
			Attributes:    make(map[string]string, len(m.Attributes)),
		}
		maps.Copy(msg.Attributes, m.Attributes)
		if len(m.MessageAttributes) > 0 {
			msg.MessageAttributes = make(map[string]Attribute, len(m.MessageAttributes))
			for k, v := range m.MessageAttributes {
				msg.MessageAttributes[k] = Attribute{
					DataType:    aws.ToString(v.DataType),
					StringValue: aws.ToString(v.StringValue),
					BinaryValue: v.BinaryValue,
				}
			}
		}
		msgs = append(msgs, msg)
	}
	return msgs, nil
}

// DeleteMessage implements Deleter.
func (c *Client) DeleteMessage(ctx context.Context, queueURL, receiptHandle string) error {
	_, err := c.sdk.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: aws.String(receiptHandle)})
	return mapError("DeleteMessage", err)
}

// ChangeMessageVisibility implements VisibilityChanger.
func (c *Client) ChangeMessageVisibility(ctx context.Context, queueURL, receiptHandle string, timeout time.Duration) error {
	if timeout < 0 || timeout > 12*time.Hour {
		return fmt.Errorf("%w: visibility timeout %s not in 0..12h", ErrInvalidParameter, timeout)
	}
	_, err := c.sdk.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(queueURL), ReceiptHandle: aws.String(receiptHandle), VisibilityTimeout: seconds(timeout),
	})
	return mapError("ChangeMessageVisibility", err)
}

// GetQueueAttributes implements AttributeGetter.
func (c *Client) GetQueueAttributes(ctx context.Context, queueURL string, names ...string) (map[string]string, error) {
	if len(names) == 0 {
		names = []string{QueueAttrAll}
	}
	req := &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL)}
	for _, n := range names {
		req.AttributeNames = append(req.AttributeNames, types.QueueAttributeName(n))
	}
	out, err := c.sdk.GetQueueAttributes(ctx, req)
	if err != nil {
		return nil, mapError("GetQueueAttributes", err)
	}
	return out.Attributes, nil
}

// mapError wraps SDK errors with the package's sentinels, keeping the
// original in the chain (errors.As still finds the SDK types).
func mapError(op string, err error) error {
	if err == nil {
		return nil
	}
	var sentinel error
	var (
		notFound    *types.QueueDoesNotExist
		badHandle   *types.ReceiptHandleIsInvalid
		notInflight *types.MessageNotInflight
		badContents *types.InvalidMessageContents
		badAttrName *types.InvalidAttributeName
		badAttrVal  *types.InvalidAttributeValue
		api         smithy.APIError
	)
	switch {
	case errors.As(err, &notFound):
		sentinel = ErrQueueNotFound
	case errors.As(err, &badHandle):
		sentinel = ErrReceiptHandleInvalid
	case errors.As(err, &notInflight):
		sentinel = ErrMessageNotInflight
	case errors.As(err, &badContents), errors.As(err, &badAttrName), errors.As(err, &badAttrVal):
		sentinel = ErrInvalidParameter
	case errors.As(err, &api):
		// The query protocol prefixes some codes with the service name and
		// the JSON protocol does not; both spellings mean the same error.
		switch strings.TrimPrefix(api.ErrorCode(), "AWS.SimpleQueueService.") {
		case "AccessDenied", "AccessDeniedException":
			// The action is named so an operator knows what to ask for.
			return fmt.Errorf("queue: %s: %w: the caller lacks sqs:%s: %w", op, ErrAccessDenied, op, err)
		case "InvalidParameterValue", "MissingParameter", "InvalidParameterCombination":
			sentinel = ErrInvalidParameter
		case "NonExistentQueue":
			sentinel = ErrQueueNotFound
		}
	}
	if sentinel != nil {
		return fmt.Errorf("queue: %s: %w: %w", op, sentinel, err)
	}
	return fmt.Errorf("queue: %s: %w", op, err)
}
