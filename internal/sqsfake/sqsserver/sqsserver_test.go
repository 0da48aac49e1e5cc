package sqsserver_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mercadofresco/integration/internal/sqsfake"
	"github.com/mercadofresco/integration/internal/sqsfake/sqsserver"
	"github.com/mercadofresco/integration/lambdas/queue"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// TestSDKRoundTrip drives the real SDK client, through the adapter, against
// the served fake: every operation of queue.AdminAPI and its errors.
func TestSDKRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clk := retry.NewVirtualClock(time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC))
	f := sqsfake.New(sqsfake.WithClock(clk.Now))
	dlq, _ := f.CreateQueue("fallidos", sqsfake.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour})
	src, _ := f.CreateQueue("cola", sqsfake.QueueConfig{Redrive: &sqsfake.RedrivePolicy{DeadLetterTargetARN: f.ARN(dlq), MaxReceiveCount: 1}})
	srv := httptest.NewServer(sqsserver.Handler(f))
	defer srv.Close()
	c := queue.NewAdmin(sqs.New(sqs.Options{
		Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: aws.AnonymousCredentials{}, RetryMaxAttempts: 1,
	}))

	if got, err := c.GetQueueURL(ctx, "cola"); err != nil || got != src {
		t.Fatalf("GetQueueURL = %q, %v", got, err)
	}
	if _, err := c.GetQueueURL(ctx, "nope"); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Fatalf("GetQueueURL(nope) = %v, want ErrQueueNotFound", err)
	}
	if _, err := c.SendMessage(ctx, &queue.SendMessageInput{QueueURL: src, Body: `{"version":1}`,
		MessageAttributes: map[string]queue.Attribute{"tipo": queue.StringAttribute("X"), "bin": {DataType: "Binary", BinaryValue: []byte{0, 1}}}}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	msgs, err := c.ReceiveMessage(ctx, &queue.ReceiveMessageInput{QueueURL: src, MaxMessages: 10, VisibilityTimeout: 5 * time.Second})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("ReceiveMessage = %v, %v", msgs, err)
	}
	m := msgs[0]
	if m.ReceiveCount() != 1 || m.MessageAttributes["tipo"].StringValue != "X" || string(m.MessageAttributes["bin"].BinaryValue) != "\x00\x01" {
		t.Errorf("message = %+v", m)
	}
	if err := c.ChangeMessageVisibility(ctx, src, m.ReceiptHandle, 0); err != nil {
		t.Fatalf("ChangeMessageVisibility: %v", err)
	}
	if err := c.ChangeMessageVisibility(ctx, src, "bogus", 0); !errors.Is(err, queue.ErrReceiptHandleInvalid) {
		t.Errorf("bogus handle: %v", err)
	}
	// The second receive attempt moves it to the DLQ (maxReceiveCount 1).
	if msgs, err := c.ReceiveMessage(ctx, &queue.ReceiveMessageInput{QueueURL: src, MaxMessages: 10}); err != nil || len(msgs) != 0 {
		t.Fatalf("receive after redrive = %v, %v", msgs, err)
	}
	attrs, err := c.GetQueueAttributes(ctx, dlq, queue.QueueAttrApproximateNumberOfMessages, queue.QueueAttrQueueArn)
	if err != nil || attrs[queue.QueueAttrApproximateNumberOfMessages] != "1" || attrs[queue.QueueAttrQueueArn] != f.ARN(dlq) {
		t.Fatalf("GetQueueAttributes = %v, %v", attrs, err)
	}
	if got, err := c.ListDeadLetterSourceQueues(ctx, dlq); err != nil || len(got) != 1 || got[0] != src {
		t.Fatalf("ListDeadLetterSourceQueues = %v, %v", got, err)
	}
	if _, err := c.StartMessageMoveTask(ctx, &queue.StartMoveTaskInput{SourceARN: f.ARN(src)}); !errors.Is(err, queue.ErrNotDeadLetterQueue) {
		t.Errorf("move from a non-DLQ: %v", err)
	}
	h, err := c.StartMessageMoveTask(ctx, &queue.StartMoveTaskInput{SourceARN: f.ARN(dlq), MaxPerSecond: 1})
	if err != nil {
		t.Fatalf("StartMessageMoveTask: %v", err)
	}
	if _, err := c.StartMessageMoveTask(ctx, &queue.StartMoveTaskInput{SourceARN: f.ARN(dlq)}); !errors.Is(err, queue.ErrMoveTaskRunning) {
		t.Errorf("second task: %v, want ErrMoveTaskRunning", err)
	}
	tasks, err := c.ListMessageMoveTasks(ctx, f.ARN(dlq), 10)
	if err != nil || len(tasks) != 1 || tasks[0].TaskHandle != h || tasks[0].Status != queue.MoveTaskRunning || tasks[0].ToMove != 1 || tasks[0].MaxPerSecond != 1 {
		t.Fatalf("ListMessageMoveTasks = %+v, %v", tasks, err)
	}
	if moved, err := c.CancelMessageMoveTask(ctx, h); err != nil || moved != 0 {
		t.Fatalf("CancelMessageMoveTask = %d, %v", moved, err)
	}
	if _, err := c.CancelMessageMoveTask(ctx, h); !errors.Is(err, queue.ErrTaskNotFound) {
		t.Errorf("second cancel: %v", err)
	}
	msgs, err = c.ReceiveMessage(ctx, &queue.ReceiveMessageInput{QueueURL: dlq, MaxMessages: 10})
	if err != nil || len(msgs) != 1 || msgs[0].Attributes[queue.AttrDeadLetterQueueSourceArn] != f.ARN(src) {
		t.Fatalf("DLQ receive = %+v, %v", msgs, err)
	}
	if err := c.DeleteMessage(ctx, dlq, msgs[0].ReceiptHandle); err != nil {
		t.Fatalf("DeleteMessage: %v", err)
	}
	f.SetFault(func(op, _ string) error {
		if op == "SendMessage" {
			return sqsserver.ErrAccessDenied
		}
		return nil
	})
	_, err = c.SendMessage(ctx, &queue.SendMessageInput{QueueURL: src, Body: "x"})
	if !errors.Is(err, queue.ErrAccessDenied) {
		t.Errorf("denied send: %v, want ErrAccessDenied", err)
	}
}
