package localaws

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"
)

// MaxMoveRate is the highest MaxNumberOfMessagesPerSecond SQS accepts.
const MaxMoveRate = 500

// Message move task statuses (the SQS values).
const (
	moveTaskRunning   = "RUNNING"
	moveTaskCompleted = "COMPLETED"
	moveTaskFailed    = "FAILED"
)

// moveTask is one message move task (SQS's service-side DLQ redrive).
type moveTask struct {
	handle  string
	status  string
	src     *fakeQueue
	destARN string // "" = each message's DeadLetterQueueSourceArn
	rate    int32  // messages per second; 0 = as fast as possible
	started time.Time
	toMove  int64
	moved   int64
	failure string
}

// GetQueueUrl returns the URL of the queue with this name.
func (f *SQS) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := aws.ToString(in.QueueName)
	if err := f.check(ctx, "GetQueueUrl", name); err != nil {
		return nil, opError("GetQueueUrl", err)
	}
	for _, q := range f.byURL {
		if q.name == name {
			return &sqs.GetQueueUrlOutput{QueueUrl: aws.String(q.url)}, nil
		}
	}
	return nil, opError("GetQueueUrl", noQueue(name))
}

// ListDeadLetterSourceQueues returns the URLs of the queues whose redrive
// policy names the queue at QueueUrl as their DLQ (one page).
func (f *SQS) ListDeadLetterSourceQueues(ctx context.Context, in *sqs.ListDeadLetterSourceQueuesInput, _ ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	dlq, err := f.lookup(ctx, "ListDeadLetterSourceQueues", in.QueueUrl)
	if err != nil {
		return nil, opError("ListDeadLetterSourceQueues", err)
	}
	return &sqs.ListDeadLetterSourceQueuesOutput{QueueUrls: f.sourcesOf(dlq)}, nil
}

func (f *SQS) sourcesOf(dlq *fakeQueue) []string {
	urls := []string{}
	for _, q := range f.byURL {
		if q.dlq == dlq {
			urls = append(urls, q.url)
		}
	}
	sort.Strings(urls)
	return urls
}

// StartMessageMoveTask starts a message move task. As in SQS: the source
// must be the DLQ of at least one queue, the destination (if given) must
// exist, the rate is 1..500 (unset lets the service choose), and a source has
// at most one active task. The task counts the source's visible messages
// when it starts (ApproximateNumberOfMessagesToMove) and moves that many.
func (f *SQS) StartMessageMoveTask(ctx context.Context, in *sqs.StartMessageMoveTaskInput, _ ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	handle, err := f.startMoveTask(ctx, in)
	if err != nil {
		return nil, opError("StartMessageMoveTask", err)
	}
	return &sqs.StartMessageMoveTaskOutput{TaskHandle: aws.String(handle)}, nil
}

func (f *SQS) startMoveTask(ctx context.Context, in *sqs.StartMessageMoveTaskInput) (string, error) {
	sourceARN, destARN, rate := aws.ToString(in.SourceArn), aws.ToString(in.DestinationArn), aws.ToInt32(in.MaxNumberOfMessagesPerSecond)
	if err := f.check(ctx, "StartMessageMoveTask", sourceARN); err != nil {
		return "", err
	}
	now := f.now()
	f.advanceTasks(now)
	src, ok := f.byARN[sourceARN]
	if !ok {
		return "", &types.ResourceNotFoundException{Message: aws.String("source queue " + sourceARN)}
	}
	if len(f.sourcesOf(src)) == 0 {
		return "", invalid("Source queue must be configured as a Dead Letter Queue.")
	}
	if _, ok := f.byARN[destARN]; destARN != "" && !ok {
		return "", &types.ResourceNotFoundException{Message: aws.String("destination queue " + destARN)}
	}
	if in.MaxNumberOfMessagesPerSecond != nil && (rate < 1 || rate > MaxMoveRate) {
		return "", invalid("MaxNumberOfMessagesPerSecond %d not in 1..%d", rate, MaxMoveRate)
	}
	for _, t := range f.tasks {
		if t.src == src && t.status == moveTaskRunning {
			return "", invalid("There is already a task running. Only one active task is allowed for a source queue arn at a given time (task started %s).", t.started.UTC().Format(time.RFC3339))
		}
	}
	f.expire(src, now)
	var visible int64
	for _, m := range src.msgs {
		if m.visible(now) {
			visible++
		}
	}
	f.nTask++
	t := &moveTask{
		handle:  fmt.Sprintf("qf-task-%d-%s", f.nTask, src.name),
		status:  moveTaskRunning,
		src:     src,
		destARN: destARN,
		rate:    rate,
		started: now,
		toMove:  visible,
	}
	f.tasks = append(f.tasks, t)
	f.advanceTask(t, now)
	return t.handle, nil
}

// ListMessageMoveTasks returns the most recent tasks of a source queue,
// newest first (at most MaxResults, 1..10; unset means 1, as in SQS).
func (f *SQS) ListMessageMoveTasks(ctx context.Context, in *sqs.ListMessageMoveTasksInput, _ ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sourceARN, max := aws.ToString(in.SourceArn), cmp.Or(aws.ToInt32(in.MaxResults), 1)
	if err := f.check(ctx, "ListMessageMoveTasks", sourceARN); err != nil {
		return nil, opError("ListMessageMoveTasks", err)
	}
	if max < 1 || max > 10 {
		return nil, opError("ListMessageMoveTasks", invalid("MaxResults %d not in 1..10", max))
	}
	src, ok := f.byARN[sourceARN]
	if !ok {
		return nil, opError("ListMessageMoveTasks", &types.ResourceNotFoundException{Message: aws.String(sourceARN)})
	}
	f.advanceTasks(f.now())
	out := &sqs.ListMessageMoveTasksOutput{}
	for i := len(f.tasks) - 1; i >= 0 && len(out.Results) < int(max); i-- {
		t := f.tasks[i]
		if t.src != src {
			continue
		}
		e := types.ListMessageMoveTasksResultEntry{
			Status:                            aws.String(t.status),
			SourceArn:                         aws.String(t.src.arn),
			DestinationArn:                    nonEmpty(t.destARN),
			ApproximateNumberOfMessagesMoved:  t.moved,
			ApproximateNumberOfMessagesToMove: aws.Int64(t.toMove),
			FailureReason:                     nonEmpty(t.failure),
			StartedTimestamp:                  t.started.UnixMilli(),
		}
		if t.rate > 0 {
			e.MaxNumberOfMessagesPerSecond = aws.Int32(t.rate)
		}
		if t.status == moveTaskRunning {
			e.TaskHandle = aws.String(t.handle)
		}
		out.Results = append(out.Results, e)
	}
	return out, nil
}

// advanceTasks brings every active task up to now. Callers hold f.mu.
func (f *SQS) advanceTasks(now time.Time) {
	for _, t := range f.tasks {
		f.advanceTask(t, now)
	}
}

func (f *SQS) advanceTask(t *moveTask, now time.Time) {
	if t.status != moveTaskRunning {
		return
	}
	allowed := t.toMove
	if t.rate > 0 {
		elapsed := now.Sub(t.started).Seconds()
		allowed = min(t.toMove, int64(math.Floor(elapsed*float64(t.rate))))
	}
	f.expire(t.src, now)
	for t.moved < allowed {
		m := nextVisible(t.src, now)
		if m == nil {
			break
		}
		destARN := cmp.Or(t.destARN, m.dlqSource)
		if destARN == "" {
			t.status, t.failure = moveTaskFailed, fmt.Sprintf("message %s has no DeadLetterQueueSourceArn (it was sent to the DLQ, not moved there by a redrive policy) and the task has no destination", m.id)
			return
		}
		dest, ok := f.byARN[destARN]
		if !ok {
			t.status, t.failure = moveTaskFailed, "AWS.SimpleQueueService.NonExistentQueue: "+destARN
			return
		}
		f.moveMessage(t.src, dest, m, now)
		t.moved++
	}
	if t.moved >= t.toMove || len(t.src.msgs) == 0 {
		t.status = moveTaskCompleted
	}
}

// nextVisible returns the first visible message of q, or nil.
func nextVisible(q *fakeQueue, now time.Time) *message {
	for _, m := range q.msgs {
		if m.visible(now) {
			return m
		}
	}
	return nil
}

// moveMessage removes m from src and enqueues a copy in dest: same body,
// attributes and group, a new message id, receive count 0, sent now.
func (f *SQS) moveMessage(src, dest *fakeQueue, m *message, now time.Time) {
	nm := &message{
		q:         dest,
		id:        uuid.NewString(),
		body:      m.body,
		md5:       m.md5,
		attrs:     copyAttrs(m.attrs),
		groupID:   m.groupID,
		sentAt:    now,
		visibleAt: now,
	}
	if dest.fifo {
		dest.seq++
		nm.seqNumber = fmt.Sprintf("%020d", dest.seq)
		nm.groupID = cmp.Or(nm.groupID, m.id)
		nm.dedupID = cmp.Or(m.dedupID, m.id)
	}
	dest.msgs = append(dest.msgs, nm)
	dest.stats.Sent++
	src.remove(m)
}
