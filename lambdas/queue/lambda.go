package queue

import (
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// EventRecord converts a received message into the record Lambda's SQS event
// source mapping would deliver for it. Tests and operator tools use it to run
// a consumer's batch handler on messages received with a Receiver (for
// example to replay a dead-lettered message locally).
func (m Message) EventRecord(queueARN, region string) events.SQSMessage {
	rec := events.SQSMessage{
		MessageId:      m.MessageID,
		ReceiptHandle:  m.ReceiptHandle,
		Body:           m.Body,
		Md5OfBody:      m.MD5OfBody,
		Attributes:     make(map[string]string, len(m.Attributes)),
		EventSourceARN: queueARN,
		EventSource:    "aws:sqs",
		AWSRegion:      region,
	}
	for k, v := range m.Attributes {
		rec.Attributes[k] = v
	}
	if len(m.MessageAttributes) > 0 {
		rec.MessageAttributes = make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes))
		for k, a := range m.MessageAttributes {
			rec.MessageAttributes[k] = a.EventAttribute()
		}
	}
	return rec
}

// EventAttribute converts a to the aws-lambda-go representation.
func (a Attribute) EventAttribute() events.SQSMessageAttribute {
	ea := events.SQSMessageAttribute{DataType: a.DataType}
	if strings.HasPrefix(a.DataType, "Binary") {
		ea.BinaryValue = append([]byte(nil), a.BinaryValue...)
	} else {
		s := a.StringValue
		ea.StringValue = &s
	}
	return ea
}

// AttributeFromEvent converts a Lambda event message attribute to an
// Attribute. List values are not supported by SQS (reserved for future use)
// and are dropped.
func AttributeFromEvent(ea events.SQSMessageAttribute) Attribute {
	a := Attribute{DataType: ea.DataType}
	if ea.StringValue != nil {
		a.StringValue = *ea.StringValue
	}
	if ea.BinaryValue != nil {
		a.BinaryValue = append([]byte(nil), ea.BinaryValue...)
	}
	return a
}

// ARN is a parsed SQS queue ARN (arn:partition:sqs:region:account:name).
type ARN struct {
	Partition, Region, Account, Name string
}

// ParseARN parses an SQS queue ARN such as a record's EventSourceARN.
func ParseARN(s string) (ARN, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "sqs" || parts[3] == "" || parts[4] == "" || parts[5] == "" {
		return ARN{}, fmt.Errorf("%w: %q is not an SQS queue ARN", ErrInvalidParameter, s)
	}
	return ARN{Partition: parts[1], Region: parts[3], Account: parts[4], Name: parts[5]}, nil
}

// String returns the ARN text.
func (a ARN) String() string {
	return "arn:" + a.Partition + ":sqs:" + a.Region + ":" + a.Account + ":" + a.Name
}

// URL returns the queue URL for the ARN, as SQS forms it.
func (a ARN) URL() string {
	domain := "amazonaws.com"
	if a.Partition == "aws-cn" {
		domain = "amazonaws.com.cn"
	}
	return "https://sqs." + a.Region + "." + domain + "/" + a.Account + "/" + a.Name
}

// IsFIFO reports whether the queue is a FIFO queue (its name ends in .fifo).
func (a ARN) IsFIFO() bool { return strings.HasSuffix(a.Name, ".fifo") }
