// Package queue is the small SQS interface the MercadoFresco Go code uses.
//
// Consumers, operator tools (the DLQ runbook) and the batch library depend on
// the narrow interfaces here (Sender, Receiver, ...) rather than on the AWS
// SDK client, so that tests run against sqsfake, an in-memory SQS with the
// semantics that matter for reliability: visibility timeouts, receive counts,
// redrive to a dead-letter queue and FIFO message groups. New wraps the real
// aws-sdk-go-v2 client.
//
// Durations are time.Duration; the adapter converts them to the whole seconds
// SQS expects, rounding up so that a visibility timeout is never shortened.
package queue

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// Sentinel errors. Implementations wrap them (check with errors.Is) so callers
// can tell an answer from SQS ("that receipt handle is stale") from a transient
// transport failure.
var (
	// ErrQueueNotFound means the queue URL does not name an existing queue.
	ErrQueueNotFound = errors.New("queue: queue does not exist")
	// ErrReceiptHandleInvalid means the receipt handle is unknown or no longer valid.
	ErrReceiptHandleInvalid = errors.New("queue: receipt handle is invalid")
	// ErrMessageNotInflight means ChangeMessageVisibility was called for a message
	// that is not currently in flight (its visibility timeout already expired or it
	// was never received with that handle).
	ErrMessageNotInflight = errors.New("queue: message is not in flight")
	// ErrInvalidParameter means the request broke an SQS rule (too many message
	// attributes, a FIFO send without MessageGroupId, a body that is too large...).
	// Retrying the same request cannot succeed.
	ErrInvalidParameter = errors.New("queue: invalid parameter")
)

// System attribute names returned in Message.Attributes (the SQS names).
const (
	AttrApproximateReceiveCount          = "ApproximateReceiveCount"
	AttrApproximateFirstReceiveTimestamp = "ApproximateFirstReceiveTimestamp"
	AttrSentTimestamp                    = "SentTimestamp"
	AttrSenderID                         = "SenderId"
	AttrMessageGroupID                   = "MessageGroupId"
	AttrMessageDeduplicationID           = "MessageDeduplicationId"
	AttrSequenceNumber                   = "SequenceNumber"
	AttrDeadLetterQueueSourceArn         = "DeadLetterQueueSourceArn"
)

// Queue attribute names for GetQueueAttributes (the SQS names).
const (
	QueueAttrApproximateNumberOfMessages           = "ApproximateNumberOfMessages"
	QueueAttrApproximateNumberOfMessagesNotVisible = "ApproximateNumberOfMessagesNotVisible"
	QueueAttrApproximateNumberOfMessagesDelayed    = "ApproximateNumberOfMessagesDelayed"
	QueueAttrVisibilityTimeout                     = "VisibilityTimeout"
	QueueAttrRedrivePolicy                         = "RedrivePolicy"
	QueueAttrQueueArn                              = "QueueArn"
	QueueAttrFifoQueue                             = "FifoQueue"
	QueueAttrMessageRetentionPeriod                = "MessageRetentionPeriod"
	QueueAttrAll                                   = "All"
)

// Attribute is one message attribute. DataType is "String", "Number" or
// "Binary", optionally followed by a custom suffix ("String.pedido").
// StringValue is used for String and Number, BinaryValue for Binary.
type Attribute struct {
	DataType    string
	StringValue string
	BinaryValue []byte
}

// StringAttribute returns a String attribute holding v.
func StringAttribute(v string) Attribute { return Attribute{DataType: "String", StringValue: v} }

// NumberAttribute returns a Number attribute holding n.
func NumberAttribute(n int64) Attribute {
	return Attribute{DataType: "Number", StringValue: strconv.FormatInt(n, 10)}
}

// Message is one received message.
type Message struct {
	MessageID     string
	ReceiptHandle string
	Body          string
	MD5OfBody     string
	// Attributes holds the system attributes (ApproximateReceiveCount,
	// SentTimestamp, MessageGroupId, ...). Receivers always ask for all of them.
	Attributes map[string]string
	// MessageAttributes holds the sender's attributes. Receivers always ask for all.
	MessageAttributes map[string]Attribute
}

// Time returns a timestamp attribute (SentTimestamp,
// ApproximateFirstReceiveTimestamp: epoch milliseconds) in UTC, or the zero
// time when absent or not a positive number.
func (m Message) Time(attr string) time.Time {
	n, err := strconv.ParseInt(m.Attributes[attr], 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}

// ReceiveCount returns ApproximateReceiveCount, or 0 when absent or unparsable.
func (m Message) ReceiveCount() int {
	n, err := strconv.Atoi(m.Attributes[AttrApproximateReceiveCount])
	if err != nil {
		return 0
	}
	return n
}

// SendMessageInput is the request of Sender.SendMessage.
type SendMessageInput struct {
	QueueURL          string
	Body              string
	MessageAttributes map[string]Attribute
	// MessageGroupID is required for FIFO queues and refused by standard ones.
	MessageGroupID string
	// MessageDeduplicationID is required for FIFO queues without content-based
	// deduplication. Sends with the same id within 5 minutes are accepted but
	// enqueued only once.
	MessageDeduplicationID string
	// Delay postpones delivery (standard queues only; at most 15 minutes).
	Delay time.Duration
}

// SendMessageOutput is the answer of Sender.SendMessage.
type SendMessageOutput struct {
	MessageID string
	// SequenceNumber is set for FIFO queues.
	SequenceNumber string
}

// ReceiveMessageInput is the request of Receiver.ReceiveMessage.
type ReceiveMessageInput struct {
	QueueURL string
	// MaxMessages is 1..10; zero means 1, as in SQS.
	MaxMessages int
	// VisibilityTimeout overrides the queue's for the received messages; zero
	// keeps the queue default (to make a message visible at once, use
	// ChangeMessageVisibility with 0). The DLQ runbook inspects with 5 s so an
	// interrupted inspection loses nothing.
	VisibilityTimeout time.Duration
	// WaitTime enables long polling (at most 20 s).
	WaitTime time.Duration
}

// Sender sends one message.
type Sender interface {
	SendMessage(ctx context.Context, in *SendMessageInput) (*SendMessageOutput, error)
}

// Receiver receives up to ten messages. Receiving hides the messages for the
// visibility timeout and increments their receive count: SQS has no peek.
type Receiver interface {
	ReceiveMessage(ctx context.Context, in *ReceiveMessageInput) ([]Message, error)
}

// Deleter deletes (acknowledges) a received message.
type Deleter interface {
	DeleteMessage(ctx context.Context, queueURL, receiptHandle string) error
}

// VisibilityChanger changes the visibility timeout of an in-flight message,
// counted from now. Zero makes it visible again at once.
type VisibilityChanger interface {
	ChangeMessageVisibility(ctx context.Context, queueURL, receiptHandle string, timeout time.Duration) error
}

// AttributeGetter reads queue attributes; no names means "All".
type AttributeGetter interface {
	GetQueueAttributes(ctx context.Context, queueURL string, names ...string) (map[string]string, error)
}

// API is everything the project's Go code needs from SQS. Both *Client (the
// SDK adapter) and *sqsfake.Fake implement it.
type API interface {
	Sender
	Receiver
	Deleter
	VisibilityChanger
	AttributeGetter
}
