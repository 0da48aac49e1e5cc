package sqsfake_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mercadofresco/integration/internal/sqsfake"
	"github.com/mercadofresco/integration/lambdas/queue"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// redriveTopology creates a source with maxReceiveCount 1 and its DLQ, and
// drives n messages into the DLQ through the redrive policy.
func redriveTopology(t *testing.T, n int) (*sqsfake.Fake, *retry.VirtualClock, string, string) {
	t.Helper()
	f, clk := newFake(t)
	dlq := mustCreate(t, f, "dlq", sqsfake.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour})
	src := mustCreate(t, f, "src", sqsfake.QueueConfig{Redrive: &sqsfake.RedrivePolicy{DeadLetterTargetARN: f.ARN(dlq), MaxReceiveCount: 1}})
	for i := range n {
		send(t, f, queue.SendMessageInput{QueueURL: src, Body: fmt.Sprintf(`{"n":%d}`, i)})
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

func visible(t *testing.T, f *sqsfake.Fake, url string) int {
	t.Helper()
	states, err := f.Inspect(url)
	if err != nil {
		t.Fatal(err)
	}
	return len(states)
}

func TestMoveTaskRate(t *testing.T) {
	ctx := context.Background()
	f, clk, src, dlq := redriveTopology(t, 25)
	h, err := f.StartMessageMoveTask(ctx, &queue.StartMoveTaskInput{SourceARN: f.ARN(dlq), MaxPerSecond: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.StartMessageMoveTask(ctx, &queue.StartMoveTaskInput{SourceARN: f.ARN(dlq)}); !errors.Is(err, queue.ErrMoveTaskRunning) {
		t.Fatalf("second task: %v, want ErrMoveTaskRunning", err)
	}
	for _, step := range []struct {
		advance time.Duration
		moved   int
	}{{0, 0}, {999 * time.Millisecond, 9}, {time.Millisecond, 10}, {500 * time.Millisecond, 15}, {time.Second, 25}} {
		clk.Advance(step.advance)
		tasks, err := f.ListMessageMoveTasks(ctx, f.ARN(dlq), 10)
		if err != nil || len(tasks) != 1 {
			t.Fatalf("list: %v %v", tasks, err)
		}
		if int(tasks[0].Moved) != step.moved || visible(t, f, src) != step.moved || visible(t, f, dlq) != 25-step.moved {
			t.Fatalf("after +%s: task moved %d, source %d, DLQ %d; want %d moved", step.advance, tasks[0].Moved, visible(t, f, src), visible(t, f, dlq), step.moved)
		}
		wantStatus := queue.MoveTaskRunning
		if step.moved == 25 {
			wantStatus = queue.MoveTaskCompleted
		}
		if tasks[0].Status != wantStatus || tasks[0].ToMove != 25 || tasks[0].MaxPerSecond != 10 {
			t.Fatalf("task = %+v", tasks[0])
		}
		if (tasks[0].TaskHandle == h) != (wantStatus == queue.MoveTaskRunning) {
			t.Errorf("handle listed = %q while %s (SQS lists it only while RUNNING)", tasks[0].TaskHandle, wantStatus)
		}
	}
	got := receive(t, f, src, 1)
	if got[0].ReceiveCount() != 1 || got[0].Attributes[queue.AttrDeadLetterQueueSourceArn] != "" {
		t.Errorf("a redriven message starts afresh in its source: %+v", got[0])
	}
	if s := f.Stats(dlq); s.MovedByTask != 25 {
		t.Errorf("DLQ stats %+v", s)
	}
}

func TestMoveTaskValidationAndCancel(t *testing.T) {
	ctx := context.Background()
	f, clk, src, dlq := redriveTopology(t, 5)
	other := mustCreate(t, f, "other", sqsfake.QueueConfig{})
	tests := []struct {
		in   queue.StartMoveTaskInput
		want error
	}{
		{queue.StartMoveTaskInput{SourceARN: f.ARN(other)}, queue.ErrNotDeadLetterQueue},
		{queue.StartMoveTaskInput{SourceARN: "arn:aws:sqs:eu-west-1:000000000000:nope"}, queue.ErrQueueNotFound},
		{queue.StartMoveTaskInput{SourceARN: f.ARN(dlq), DestinationARN: "arn:aws:sqs:eu-west-1:000000000000:nope"}, queue.ErrQueueNotFound},
		{queue.StartMoveTaskInput{SourceARN: f.ARN(dlq), MaxPerSecond: 501}, queue.ErrInvalidParameter},
	}
	for _, tt := range tests {
		if _, err := f.StartMessageMoveTask(ctx, &tt.in); !errors.Is(err, tt.want) {
			t.Errorf("%+v: %v, want %v", tt.in, err, tt.want)
		}
	}
	h, err := f.StartMessageMoveTask(ctx, &queue.StartMoveTaskInput{SourceARN: f.ARN(dlq), DestinationARN: f.ARN(other), MaxPerSecond: 2})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	moved, err := f.CancelMessageMoveTask(ctx, h)
	if err != nil || moved != 2 {
		t.Fatalf("cancel: %d %v", moved, err)
	}
	if _, err := f.CancelMessageMoveTask(ctx, h); !errors.Is(err, queue.ErrTaskNotFound) {
		t.Errorf("second cancel: %v", err)
	}
	clk.Advance(time.Hour)
	tasks, _ := f.ListMessageMoveTasks(ctx, f.ARN(dlq), 1)
	if tasks[0].Status != queue.MoveTaskCancelled || tasks[0].Moved != 2 {
		t.Fatalf("after cancel: %+v", tasks[0])
	}
	if visible(t, f, other) != 2 || visible(t, f, dlq) != 3 || visible(t, f, src) != 0 {
		t.Errorf("cancel must keep moved messages moved and stop the rest")
	}
	// A new task may start once the old one is over.
	if _, err := f.StartMessageMoveTask(ctx, &queue.StartMoveTaskInput{SourceARN: f.ARN(dlq)}); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if visible(t, f, src) != 3 {
		t.Errorf("an unthrottled task moves everything back to the source at once")
	}
}

// TestMoveTaskMessageWithoutSource: a message a consumer sent to the DLQ has
// no DeadLetterQueueSourceArn; a task without destination fails on it and
// the message stays.
func TestMoveTaskMessageWithoutSource(t *testing.T) {
	ctx := context.Background()
	f, _, src, dlq := redriveTopology(t, 1)
	send(t, f, queue.SendMessageInput{QueueURL: dlq, Body: `{"version":2}`})
	if _, err := f.StartMessageMoveTask(ctx, &queue.StartMoveTaskInput{SourceARN: f.ARN(dlq)}); err != nil {
		t.Fatal(err)
	}
	tasks, _ := f.ListMessageMoveTasks(ctx, f.ARN(dlq), 10)
	if tasks[0].Status != queue.MoveTaskFailed || tasks[0].FailureReason == "" || tasks[0].Moved != 1 {
		t.Fatalf("task = %+v", tasks[0])
	}
	if visible(t, f, dlq) != 1 || visible(t, f, src) != 1 {
		t.Errorf("DLQ %d, source %d: nothing may be lost", visible(t, f, dlq), visible(t, f, src))
	}
}

func TestLocator(t *testing.T) {
	ctx := context.Background()
	f, _, src, dlq := redriveTopology(t, 0)
	if got, err := f.GetQueueURL(ctx, "src"); err != nil || got != src {
		t.Errorf("GetQueueURL = %q %v", got, err)
	}
	if _, err := f.GetQueueURL(ctx, "nope"); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Errorf("GetQueueURL(nope) = %v", err)
	}
	if got, err := f.ListDeadLetterSourceQueues(ctx, dlq); err != nil || len(got) != 1 || got[0] != src {
		t.Errorf("ListDeadLetterSourceQueues = %v %v", got, err)
	}
	if got, err := f.ListDeadLetterSourceQueues(ctx, src); err != nil || len(got) != 0 {
		t.Errorf("sources of a non-DLQ = %v %v", got, err)
	}
	denied := errors.New("AccessDenied")
	f.SetFault(func(op, target string) error {
		if op == "StartMessageMoveTask" {
			return denied
		}
		return nil
	})
	if _, err := f.StartMessageMoveTask(ctx, &queue.StartMoveTaskInput{SourceARN: f.ARN(dlq)}); !errors.Is(err, denied) {
		t.Errorf("fault not applied: %v", err)
	}
}
