package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/mercadofresco/integration/lambdas/queue"
)

// recordingSDK captures requests and returns canned answers.
type recordingSDK struct {
	send    *sqs.SendMessageInput
	recv    *sqs.ReceiveMessageInput
	chg     *sqs.ChangeMessageVisibilityInput
	err     error
	recvOut *sqs.ReceiveMessageOutput
}

func (r *recordingSDK) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	r.send = in
	if r.err != nil {
		return nil, r.err
	}
	return &sqs.SendMessageOutput{MessageId: aws.String("m-1"), SequenceNumber: aws.String("7")}, nil
}

func (r *recordingSDK) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	r.recv = in
	return r.recvOut, r.err
}

func (r *recordingSDK) DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	return &sqs.DeleteMessageOutput{}, r.err
}

func (r *recordingSDK) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	r.chg = in
	return &sqs.ChangeMessageVisibilityOutput{}, r.err
}

func (r *recordingSDK) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"VisibilityTimeout": "400"}}, r.err
}

func TestClientTranslatesRequests(t *testing.T) {
	ctx := context.Background()
	sdk := &recordingSDK{recvOut: &sqs.ReceiveMessageOutput{Messages: []types.Message{{
		MessageId: aws.String("m-1"), ReceiptHandle: aws.String("rh"), Body: aws.String("{}"),
		Attributes:        map[string]string{"ApproximateReceiveCount": "3"},
		MessageAttributes: map[string]types.MessageAttributeValue{"tipo": {DataType: aws.String("String"), StringValue: aws.String("X")}},
	}}}}
	c := queue.New(sdk)
	out, err := c.SendMessage(ctx, &queue.SendMessageInput{
		QueueURL: "u", Body: "b", MessageGroupID: "g", MessageDeduplicationID: "d",
		Delay:             1500 * time.Millisecond,
		MessageAttributes: map[string]queue.Attribute{"n": queue.NumberAttribute(4), "bin": {DataType: "Binary", BinaryValue: []byte{1}}},
	})
	if err != nil || out.MessageID != "m-1" || out.SequenceNumber != "7" {
		t.Fatalf("SendMessage = %+v, %v", out, err)
	}
	if sdk.send.DelaySeconds != 2 || aws.ToString(sdk.send.MessageGroupId) != "g" || aws.ToString(sdk.send.MessageDeduplicationId) != "d" {
		t.Errorf("send request = %+v (delay must round up to 2 s)", sdk.send)
	}
	if a := sdk.send.MessageAttributes["n"]; aws.ToString(a.DataType) != "Number" || aws.ToString(a.StringValue) != "4" {
		t.Errorf("number attribute = %+v", a)
	}
	if a := sdk.send.MessageAttributes["bin"]; a.StringValue != nil || len(a.BinaryValue) != 1 {
		t.Errorf("binary attribute = %+v", a)
	}
	msgs, err := c.ReceiveMessage(ctx, &queue.ReceiveMessageInput{QueueURL: "u", MaxMessages: 10, VisibilityTimeout: 5 * time.Second, WaitTime: 20 * time.Second})
	if err != nil || len(msgs) != 1 || msgs[0].ReceiveCount() != 3 || msgs[0].MessageAttributes["tipo"].StringValue != "X" {
		t.Fatalf("ReceiveMessage = %+v, %v", msgs, err)
	}
	if sdk.recv.VisibilityTimeout != 5 || sdk.recv.WaitTimeSeconds != 20 || sdk.recv.MaxNumberOfMessages != 10 ||
		len(sdk.recv.MessageAttributeNames) != 1 || len(sdk.recv.MessageSystemAttributeNames) != 1 {
		t.Errorf("receive request = %+v", sdk.recv)
	}
	if _, err := c.ReceiveMessage(ctx, &queue.ReceiveMessageInput{QueueURL: "u", MaxMessages: 11}); !errors.Is(err, queue.ErrInvalidParameter) {
		t.Errorf("MaxMessages 11 err = %v", err)
	}
	if err := c.ChangeMessageVisibility(ctx, "u", "rh", 300*time.Second); err != nil || sdk.chg.VisibilityTimeout != 300 {
		t.Errorf("ChangeMessageVisibility: %v %+v", err, sdk.chg)
	}
	if a, err := c.GetQueueAttributes(ctx, "u"); err != nil || a["VisibilityTimeout"] != "400" {
		t.Errorf("GetQueueAttributes = %v %v", a, err)
	}
}

func TestClientMapsErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"queue missing", &types.QueueDoesNotExist{Message: aws.String("x")}, queue.ErrQueueNotFound},
		{"bad handle", &types.ReceiptHandleIsInvalid{Message: aws.String("x")}, queue.ErrReceiptHandleInvalid},
		{"not in flight", &types.MessageNotInflight{Message: aws.String("x")}, queue.ErrMessageNotInflight},
		{"invalid parameter", &smithy.GenericAPIError{Code: "InvalidParameterValue"}, queue.ErrInvalidParameter},
		{"prefixed missing parameter", &smithy.GenericAPIError{Code: "AWS.SimpleQueueService.MissingParameter"}, queue.ErrInvalidParameter},
		{"prefixed queue missing", &smithy.GenericAPIError{Code: "AWS.SimpleQueueService.NonExistentQueue"}, queue.ErrQueueNotFound},
		{"throttled stays unclassified", &smithy.GenericAPIError{Code: "RequestThrottled"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := queue.New(&recordingSDK{err: tt.err})
			err := c.DeleteMessage(context.Background(), "u", "rh")
			if err == nil {
				t.Fatal("error lost")
			}
			for _, s := range []error{queue.ErrQueueNotFound, queue.ErrReceiptHandleInvalid, queue.ErrMessageNotInflight, queue.ErrInvalidParameter} {
				if errors.Is(err, s) != (s == tt.want) {
					t.Errorf("errors.Is(%v, %v) = %v", err, s, errors.Is(err, s))
				}
			}
			if !errors.Is(err, tt.err) {
				t.Error("the SDK error must stay in the chain")
			}
		})
	}
}

func TestARN(t *testing.T) {
	a, err := queue.ParseARN("arn:aws:sqs:eu-west-1:123456789012:movimientos-stock.fifo")
	if err != nil {
		t.Fatal(err)
	}
	if a.URL() != "https://sqs.eu-west-1.amazonaws.com/123456789012/movimientos-stock.fifo" || !a.IsFIFO() {
		t.Errorf("ARN = %+v url %s", a, a.URL())
	}
	for _, bad := range []string{"", "arn:aws:sns:eu-west-1:1:t", "arn:aws:sqs:eu-west-1:1"} {
		if _, err := queue.ParseARN(bad); !errors.Is(err, queue.ErrInvalidParameter) {
			t.Errorf("ParseARN(%q) err = %v", bad, err)
		}
	}
}

func TestEventRecordRoundTrip(t *testing.T) {
	m := queue.Message{
		MessageID: "m-1", ReceiptHandle: "rh", Body: `{"version":1}`, MD5OfBody: "x",
		Attributes: map[string]string{"ApproximateReceiveCount": "2", "MessageGroupId": "SKU-1"},
		MessageAttributes: map[string]queue.Attribute{
			"tipo": queue.StringAttribute("PedidoConfirmado"),
			"n":    queue.NumberAttribute(-3),
			"bin":  {DataType: "Binary.gzip", BinaryValue: []byte{1, 2}},
		},
	}
	arn := "arn:aws:sqs:eu-west-1:123456789012:movimientos-stock.fifo"
	rec := m.EventRecord(arn, "eu-west-1")
	if rec.MessageId != "m-1" || rec.ReceiptHandle != "rh" || rec.Body != m.Body || rec.EventSourceARN != arn ||
		rec.EventSource != "aws:sqs" || rec.AWSRegion != "eu-west-1" || rec.Attributes["MessageGroupId"] != "SKU-1" {
		t.Fatalf("record = %+v", rec)
	}
	m.Attributes["ApproximateReceiveCount"] = "9"
	if rec.Attributes["ApproximateReceiveCount"] != "2" {
		t.Error("the record must not share the message's attribute map")
	}
	for name, want := range m.MessageAttributes {
		got := queue.AttributeFromEvent(rec.MessageAttributes[name])
		if got.DataType != want.DataType || got.StringValue != want.StringValue || string(got.BinaryValue) != string(want.BinaryValue) {
			t.Errorf("%s: %+v -> %+v", name, want, got)
		}
	}
	if rec.MessageAttributes["bin"].StringValue != nil {
		t.Error("a binary attribute must not carry a string value")
	}
	a, _ := queue.ParseARN(arn)
	if a.String() != arn {
		t.Errorf("ARN round trip = %s", a)
	}
	if cn, _ := queue.ParseARN("arn:aws-cn:sqs:cn-north-1:1:q"); cn.URL() != "https://sqs.cn-north-1.amazonaws.com.cn/1/q" {
		t.Errorf("China URL = %s", cn.URL())
	}
}

func TestMessageTime(t *testing.T) {
	tests := []struct {
		value string
		want  time.Time
	}{
		{"1764457200123", time.Date(2025, 11, 29, 23, 0, 0, 123e6, time.UTC)},
		{"", time.Time{}},
		{"0", time.Time{}},
		{"-5", time.Time{}},
		{"soon", time.Time{}},
	}
	for _, tc := range tests {
		m := queue.Message{Attributes: map[string]string{queue.AttrSentTimestamp: tc.value}}
		if got := m.Time(queue.AttrSentTimestamp); !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("%q: %v, want %v in UTC", tc.value, got, tc.want)
		}
	}
}
