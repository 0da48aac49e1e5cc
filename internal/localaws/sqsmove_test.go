package localaws_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// redriveTopology creates a source with maxReceiveCount 1 and its DLQ, and
// drives n messages into the DLQ through the redrive policy.
func redriveTopology(t *testing.T, n int) (*localaws.SQS, *retry.VirtualClock, string, string) {
	t.Helper()
	f, clk := newFake(t)
	dlq := mustCreate(t, f, "dlq", localaws.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour})
	src := mustCreate(t, f, "src", localaws.QueueConfig{Redrive: &localaws.RedrivePolicy{DeadLetterTargetARN: f.ARN(dlq), MaxReceiveCount: 1}})
	for i := range n {
		send(t, f, sqs.SendMessageInput{QueueUrl: &src, MessageBody: aws.String(fmt.Sprintf(`{"n":%d}`, i))})
	}
	for len(receive(t, f, src, 10)) > 0 {
	}
	clk.Advance(30 * time.Second)
	receive(t, f, src, 10) // the second receive attempt moves everything to the DLQ
	if s := f.Stats(src); s.MovedToDLQ != n {
		t.Fatalf("setup: %d moved to the DLQ, want %d", s.MovedToDLQ, n)
	}
	return f, clk, src, dlq
}

func visible(t *testing.T, f *localaws.SQS, url string) int {
	t.Helper()
	states, err := f.Inspect(url)
	if err != nil {
		t.Fatal(err)
	}
	return len(states)
}

func startTask(ctx context.Context, f *localaws.SQS, source, dest string, rate int32) (string, error) {
	in := &sqs.StartMessageMoveTaskInput{SourceArn: &source}
	if dest != "" {
		in.DestinationArn = &dest
	}
	if rate != 0 {
		in.MaxNumberOfMessagesPerSecond = &rate
	}
	out, err := f.StartMessageMoveTask(ctx, in)
	if err != nil {
		return "", err
	}
	return *out.TaskHandle, nil
}

func listTasks(t *testing.T, f *localaws.SQS, source string, max int32) []types.ListMessageMoveTasksResultEntry {
	t.Helper()
	out, err := f.ListMessageMoveTasks(context.Background(), &sqs.ListMessageMoveTasksInput{SourceArn: &source, MaxResults: &max})
	if err != nil {
		t.Fatal(err)
	}
	return out.Results
}

func TestMoveTaskRate(t *testing.T) {
	ctx := context.Background()
	f, clk, src, dlq := redriveTopology(t, 25)
	h, err := startTask(ctx, f, f.ARN(dlq), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := startTask(ctx, f, f.ARN(dlq), "", 0); errorCode(err) != "InvalidParameterValue" {
		t.Fatalf("second task: %v, want InvalidParameterValue (a task is running)", err)
	}
	for _, step := range []struct {
		advance time.Duration
		moved   int
	}{{0, 0}, {999 * time.Millisecond, 9}, {time.Millisecond, 10}, {500 * time.Millisecond, 15}, {time.Second, 25}} {
		clk.Advance(step.advance)
		tasks := listTasks(t, f, f.ARN(dlq), 10)
		if len(tasks) != 1 {
			t.Fatalf("list: %v", tasks)
		}
		tk := tasks[0]
		if int(tk.ApproximateNumberOfMessagesMoved) != step.moved || visible(t, f, src) != step.moved || visible(t, f, dlq) != 25-step.moved {
			t.Fatalf("after +%s: task moved %d, source %d, DLQ %d; want %d moved", step.advance, tk.ApproximateNumberOfMessagesMoved, visible(t, f, src), visible(t, f, dlq), step.moved)
		}
		wantStatus := "RUNNING"
		if step.moved == 25 {
			wantStatus = "COMPLETED"
		}
		if aws.ToString(tk.Status) != wantStatus || aws.ToInt64(tk.ApproximateNumberOfMessagesToMove) != 25 || aws.ToInt32(tk.MaxNumberOfMessagesPerSecond) != 10 {
			t.Fatalf("task = %+v", tk)
		}
		if (aws.ToString(tk.TaskHandle) == h) != (wantStatus == "RUNNING") {
			t.Errorf("handle listed = %q while %s (SQS lists it only while RUNNING)", aws.ToString(tk.TaskHandle), wantStatus)
		}
	}
	got := receive(t, f, src, 1)
	if receiveCount(got[0]) != 1 || got[0].Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)] != "" {
		t.Errorf("a redriven message starts afresh in its source: %+v", got[0])
	}
	if s := f.Stats(src); s.Sent != 25+25 {
		t.Errorf("source stats %+v: want its 25 sends and the 25 moved back", s)
	}
}

func TestMoveTaskValidation(t *testing.T) {
	ctx := context.Background()
	f, clk, src, dlq := redriveTopology(t, 5)
	other := mustCreate(t, f, "other", localaws.QueueConfig{})
	nope := "arn:aws:sqs:eu-west-1:000000000000:nope"
	tests := []struct {
		source, dest string
		rate         int32
		want         string
	}{
		{f.ARN(other), "", 0, "InvalidParameterValue"}, // not a DLQ
		{nope, "", 0, "ResourceNotFoundException"},
		{f.ARN(dlq), nope, 0, "ResourceNotFoundException"},
		{f.ARN(dlq), "", 501, "InvalidParameterValue"},
	}
	for _, tt := range tests {
		if _, err := startTask(ctx, f, tt.source, tt.dest, tt.rate); errorCode(err) != tt.want {
			t.Errorf("%+v: %v, want %s", tt, err, tt.want)
		}
	}
	if _, err := startTask(ctx, f, f.ARN(dlq), f.ARN(other), 2); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if tk := listTasks(t, f, f.ARN(dlq), 1)[0]; aws.ToString(tk.Status) != "RUNNING" || tk.ApproximateNumberOfMessagesMoved != 2 {
		t.Fatalf("after a second at 2/s: %+v", tk)
	}
	clk.Advance(2 * time.Second)
	if tk := listTasks(t, f, f.ARN(dlq), 1)[0]; aws.ToString(tk.Status) != "COMPLETED" || tk.ApproximateNumberOfMessagesMoved != 5 {
		t.Fatalf("after three seconds: %+v", tk)
	}
	if visible(t, f, other) != 5 || visible(t, f, dlq) != 0 || visible(t, f, src) != 0 {
		t.Errorf("a task with a destination moves everything there")
	}
	// A new task may start once the old one is over.
	if _, err := startTask(ctx, f, f.ARN(dlq), "", 0); err != nil {
		t.Fatalf("restart: %v", err)
	}
}

// TestMoveTaskMessageWithoutSource: a message a consumer sent to the DLQ has
// no DeadLetterQueueSourceArn; a task without destination fails on it and
// the message stays.
func TestMoveTaskMessageWithoutSource(t *testing.T) {
	ctx := context.Background()
	f, _, src, dlq := redriveTopology(t, 1)
	send(t, f, sqs.SendMessageInput{QueueUrl: &dlq, MessageBody: aws.String(`{"version":2}`)})
	if _, err := startTask(ctx, f, f.ARN(dlq), "", 0); err != nil {
		t.Fatal(err)
	}
	if tk := listTasks(t, f, f.ARN(dlq), 10)[0]; aws.ToString(tk.Status) != "FAILED" || tk.FailureReason == nil || tk.ApproximateNumberOfMessagesMoved != 1 {
		t.Fatalf("task = %+v", tk)
	}
	if visible(t, f, dlq) != 1 || visible(t, f, src) != 1 {
		t.Errorf("DLQ %d, source %d: nothing may be lost", visible(t, f, dlq), visible(t, f, src))
	}
}

func TestLocator(t *testing.T) {
	ctx := context.Background()
	f, _, src, dlq := redriveTopology(t, 0)
	if got, err := f.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("src")}); err != nil || *got.QueueUrl != src {
		t.Errorf("GetQueueUrl = %v %v", got, err)
	}
	if _, err := f.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("nope")}); errorCode(err) != "QueueDoesNotExist" {
		t.Errorf("GetQueueUrl(nope) = %v", err)
	}
	for url, want := range map[string][]string{dlq: {src}, src: {}} {
		got, err := f.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: &url})
		if err != nil || fmt.Sprint(got.QueueUrls) != fmt.Sprint(want) {
			t.Errorf("ListDeadLetterSourceQueues(%s) = %v %v, want %v", url, got, err, want)
		}
	}
	denied := errors.New("AccessDenied")
	f.SetFault(func(op, target string) error {
		if op == "StartMessageMoveTask" {
			return denied
		}
		return nil
	})
	if _, err := startTask(ctx, f, f.ARN(dlq), "", 0); !errors.Is(err, denied) {
		t.Errorf("fault not applied: %v", err)
	}
}
