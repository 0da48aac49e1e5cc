package localaws_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/retry"
)

func code(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// TestSDKRoundTrip drives the SDK's client against the served fake: every
// served operation, its typed errors, and a batch with failed entries.
func TestSDKRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clk := retry.NewVirtualClock(time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC))
	f := localaws.NewSQS(localaws.SQSConfig{Now: clk.Now})
	dlq, _ := f.CreateQueue("fallidos", localaws.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour})
	src, _ := f.CreateQueue("cola", localaws.QueueConfig{Redrive: &localaws.RedrivePolicy{DeadLetterTargetARN: f.ARN(dlq), MaxReceiveCount: 1}})
	srv := httptest.NewServer(f.Handler())
	defer srv.Close()
	c := sqs.New(sqs.Options{Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL), Credentials: aws.AnonymousCredentials{}, RetryMaxAttempts: 1})

	if got, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("cola")}); err != nil || *got.QueueUrl != src {
		t.Fatalf("GetQueueUrl = %v, %v", got, err)
	}
	var notFound *types.QueueDoesNotExist
	if _, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("nope")}); !errors.As(err, &notFound) {
		t.Fatalf("GetQueueUrl(nope) = %v, want QueueDoesNotExist", err)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &src, MessageBody: aws.String(`{"version":1}`),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"tipo": {DataType: aws.String("String"), StringValue: aws.String("X")},
			"bin":  {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1}},
		}}); err != nil {
		t.Fatalf("SendMessage: %v", err) // the client checks both MD5 digests
	}
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &src, MaxNumberOfMessages: 10, VisibilityTimeout: 5,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
		MessageAttributeNames:       []string{"All"}})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("ReceiveMessage = %v, %v", out, err)
	}
	m := out.Messages[0]
	if m.Attributes["ApproximateReceiveCount"] != "1" || len(m.Attributes) != 1 || *m.MessageAttributes["tipo"].StringValue != "X" || string(m.MessageAttributes["bin"].BinaryValue) != "\x00\x01" {
		t.Errorf("message = %+v (only the attributes asked for)", m)
	}
	if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &src, ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatalf("ChangeMessageVisibility: %v", err)
	}
	var badHandle *types.ReceiptHandleIsInvalid
	if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &src, ReceiptHandle: aws.String("bogus")}); !errors.As(err, &badHandle) {
		t.Errorf("bogus handle: %v", err)
	}
	// The second receive attempt moves it to the DLQ (maxReceiveCount 1).
	if out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &src, MaxNumberOfMessages: 10}); err != nil || len(out.Messages) != 0 {
		t.Fatalf("receive after redrive = %v, %v", out, err)
	}
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &dlq,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameQueueArn}})
	if err != nil || attrs.Attributes["ApproximateNumberOfMessages"] != "1" || attrs.Attributes["QueueArn"] != f.ARN(dlq) {
		t.Fatalf("GetQueueAttributes = %v, %v", attrs, err)
	}
	if got, err := c.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: &dlq}); err != nil || len(got.QueueUrls) != 1 || got.QueueUrls[0] != src {
		t.Fatalf("ListDeadLetterSourceQueues = %v, %v", got, err)
	}
	if _, err := c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(f.ARN(src))}); code(err) != "InvalidParameterValue" {
		t.Errorf("move from a non-DLQ: %v", err)
	}
	h, err := c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(f.ARN(dlq)), MaxNumberOfMessagesPerSecond: aws.Int32(1)})
	if err != nil {
		t.Fatalf("StartMessageMoveTask: %v", err)
	}
	tasks, err := c.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(f.ARN(dlq)), MaxResults: aws.Int32(10)})
	if err != nil || len(tasks.Results) != 1 || *tasks.Results[0].TaskHandle != *h.TaskHandle || *tasks.Results[0].Status != "RUNNING" ||
		*tasks.Results[0].ApproximateNumberOfMessagesToMove != 1 || *tasks.Results[0].MaxNumberOfMessagesPerSecond != 1 {
		t.Fatalf("ListMessageMoveTasks = %+v, %v", tasks, err)
	}
	out, err = c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &dlq, MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
	if err != nil || len(out.Messages) != 1 || out.Messages[0].Attributes["DeadLetterQueueSourceArn"] != f.ARN(src) {
		t.Fatalf("DLQ receive = %+v, %v", out, err)
	}
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &dlq, ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
		t.Fatalf("DeleteMessage: %v", err)
	}

	// Chosen entries of a batch fail alone; the call succeeds, as in SQS.
	f.SetFault(func(op, target string) error {
		switch {
		case op == "SendMessageBatchEntry" && target == "b":
			return &smithy.GenericAPIError{Code: "KmsThrottled", Message: "injected", Fault: smithy.FaultServer}
		case op == "SendMessage":
			return &smithy.GenericAPIError{Code: "AccessDenied", Message: "the caller lacks sqs:SendMessage", Fault: smithy.FaultClient}
		}
		return nil
	})
	batch, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &src, Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String("uno")}, {Id: aws.String("b"), MessageBody: aws.String("dos")}, {Id: aws.String("c"), MessageBody: aws.String("")},
	}})
	if err != nil || len(batch.Successful) != 1 || *batch.Successful[0].Id != "a" || len(batch.Failed) != 2 ||
		*batch.Failed[0].Code != "KmsThrottled" || batch.Failed[0].SenderFault || *batch.Failed[1].Code != "InvalidParameterValue" || !batch.Failed[1].SenderFault {
		t.Fatalf("SendMessageBatch = %+v, %v", batch, err)
	}
	if _, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &src, Entries: []types.SendMessageBatchRequestEntry{}}); !errors.As(err, new(*types.EmptyBatchRequest)) {
		t.Errorf("empty batch: %v", err)
	}
	if _, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &src, MessageBody: aws.String("x")}); code(err) != "AccessDenied" {
		t.Errorf("denied send: %v, want AccessDenied", err)
	}
}
