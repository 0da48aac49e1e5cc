package queue

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors of the operator operations (AdminAPI).
var (
	// ErrAccessDenied means the caller's IAM identity may not perform the
	// action. Implementations name the action in the error text.
	ErrAccessDenied = errors.New("queue: access denied")
	// ErrMoveTaskRunning means StartMessageMoveTask was refused because the
	// source queue already has an active message move task (SQS allows one).
	ErrMoveTaskRunning = errors.New("queue: a message move task is already running for this queue")
	// ErrNotDeadLetterQueue means StartMessageMoveTask was given a source
	// that no SQS queue uses as its dead-letter queue.
	ErrNotDeadLetterQueue = errors.New("queue: the queue is not the dead-letter queue of any SQS queue")
	// ErrTaskNotFound means a move task handle is unknown or the task is no
	// longer running.
	ErrTaskNotFound = errors.New("queue: message move task not found or not running")
)

// Message move task statuses (the SQS values).
const (
	MoveTaskRunning    = "RUNNING"
	MoveTaskCompleted  = "COMPLETED"
	MoveTaskCancelling = "CANCELLING"
	MoveTaskCancelled  = "CANCELLED"
	MoveTaskFailed     = "FAILED"
)

// MaxMoveRate is the highest MaxNumberOfMessagesPerSecond SQS accepts.
const MaxMoveRate = 500

// StartMoveTaskInput is the request of MoveTasker.StartMessageMoveTask.
type StartMoveTaskInput struct {
	// SourceARN is the dead-letter queue's ARN.
	SourceARN string
	// DestinationARN is where the messages go; empty sends each message back
	// to the queue its DeadLetterQueueSourceArn names.
	DestinationARN string
	// MaxPerSecond caps the rate (1..MaxMoveRate); zero lets SQS choose.
	MaxPerSecond int
}

// MoveTask is one message move task as ListMessageMoveTasks reports it.
type MoveTask struct {
	// TaskHandle is set only while the task is RUNNING.
	TaskHandle     string
	Status         string
	SourceARN      string
	DestinationARN string // empty when the task redrives to the original sources
	MaxPerSecond   int    // zero when SQS chooses the rate
	Moved          int64  // ApproximateNumberOfMessagesMoved
	ToMove         int64  // ApproximateNumberOfMessagesToMove; -1 when unknown
	FailureReason  string
	Started        time.Time
}

// Active reports whether the task still holds the queue's one task slot.
func (t MoveTask) Active() bool {
	return t.Status == MoveTaskRunning || t.Status == MoveTaskCancelling
}

// MoveTasker drives SQS message move tasks (the service-side DLQ redrive).
type MoveTasker interface {
	// StartMessageMoveTask starts a task and returns its handle.
	StartMessageMoveTask(ctx context.Context, in *StartMoveTaskInput) (string, error)
	// ListMessageMoveTasks returns the most recent tasks of a source queue,
	// newest first (at most max, 1..10; zero means 1, as in SQS).
	ListMessageMoveTasks(ctx context.Context, sourceARN string, max int) ([]MoveTask, error)
	// CancelMessageMoveTask cancels a RUNNING task and returns how many
	// messages it had moved. Moved messages stay moved.
	CancelMessageMoveTask(ctx context.Context, taskHandle string) (int64, error)
}

// Locator finds queues.
type Locator interface {
	// GetQueueURL returns the URL of the queue with this name in the
	// caller's account and region (ErrQueueNotFound if none).
	GetQueueURL(ctx context.Context, name string) (string, error)
	// ListDeadLetterSourceQueues returns the URLs of the queues whose
	// redrive policy names the queue at dlqURL as their DLQ.
	ListDeadLetterSourceQueues(ctx context.Context, dlqURL string) ([]string, error)
}

// AdminAPI is what operator tools (cmd/mf-dlq) need: the consumer API plus
// queue lookup and message move tasks. *AdminClient (the SDK adapter) and
// *sqsfake.Fake implement it.
type AdminAPI interface {
	API
	Locator
	MoveTasker
}
