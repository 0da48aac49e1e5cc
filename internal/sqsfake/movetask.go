package sqsfake

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/mercadofresco/integration/lambdas/queue"
)

var _ queue.AdminAPI = (*Fake)(nil)

// moveTask is one message move task (SQS's service-side DLQ redrive).
type moveTask struct {
	handle  string
	status  string
	src     *fakeQueue
	destARN string // "" = each message's DeadLetterQueueSourceArn
	rate    int    // messages per second; 0 = as fast as possible
	started time.Time
	toMove  int64
	moved   int64
	failure string
}

func (t *moveTask) active() bool {
	return t.status == queue.MoveTaskRunning || t.status == queue.MoveTaskCancelling
}

// GetQueueURL implements queue.Locator.
func (f *Fake) GetQueueURL(ctx context.Context, name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(ctx, "GetQueueUrl", name); err != nil {
		return "", err
	}
	for _, q := range f.byURL {
		if q.name == name {
			return q.url, nil
		}
	}
	return "", fmt.Errorf("sqsfake: GetQueueUrl: %w: %s", queue.ErrQueueNotFound, name)
}

// ListDeadLetterSourceQueues implements queue.Locator.
func (f *Fake) ListDeadLetterSourceQueues(ctx context.Context, dlqURL string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	dlq, err := f.lookup(ctx, "ListDeadLetterSourceQueues", dlqURL)
	if err != nil {
		return nil, err
	}
	return f.sourcesOf(dlq), nil
}

func (f *Fake) sourcesOf(dlq *fakeQueue) []string {
	var urls []string
	for _, q := range f.byURL {
		if q.dlq == dlq {
			urls = append(urls, q.url)
		}
	}
	sort.Strings(urls)
	return urls
}

// check runs the context and fault checks of an operation that is not
// addressed by queue URL.
func (f *Fake) check(ctx context.Context, op, target string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqsfake: %s: %w", op, err)
	}
	if f.fault != nil {
		return f.fault(op, target)
	}
	return nil
}

// StartMessageMoveTask implements queue.MoveTasker. As in SQS: the source
// must be the DLQ of at least one queue, the destination (if given) must
// exist, the rate is 1..500 (0 lets the service choose), and a source has
// at most one active task. The task counts the source's visible messages
// when it starts (ApproximateNumberOfMessagesToMove) and moves that many.
func (f *Fake) StartMessageMoveTask(ctx context.Context, in *queue.StartMoveTaskInput) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(ctx, "StartMessageMoveTask", in.SourceARN); err != nil {
		return "", err
	}
	now := f.now()
	f.advanceTasks(now)
	src, ok := f.byARN[in.SourceARN]
	if !ok {
		return "", fmt.Errorf("sqsfake: StartMessageMoveTask: %w: %s", queue.ErrQueueNotFound, in.SourceARN)
	}
	if len(f.sourcesOf(src)) == 0 {
		return "", fmt.Errorf("sqsfake: StartMessageMoveTask: %w: %s", queue.ErrNotDeadLetterQueue, src.name)
	}
	if in.DestinationARN != "" {
		if _, ok := f.byARN[in.DestinationARN]; !ok {
			return "", fmt.Errorf("sqsfake: StartMessageMoveTask: %w: destination %s", queue.ErrQueueNotFound, in.DestinationARN)
		}
	}
	if in.MaxPerSecond < 0 || in.MaxPerSecond > queue.MaxMoveRate {
		return "", fmt.Errorf("sqsfake: StartMessageMoveTask: %w: MaxNumberOfMessagesPerSecond %d not in 1..%d", queue.ErrInvalidParameter, in.MaxPerSecond, queue.MaxMoveRate)
	}
	for _, t := range f.tasks {
		if t.src == src && t.active() {
			return "", fmt.Errorf("sqsfake: StartMessageMoveTask: %w (task started %s)", queue.ErrMoveTaskRunning, t.started.UTC().Format(time.RFC3339))
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
		status:  queue.MoveTaskRunning,
		src:     src,
		destARN: in.DestinationARN,
		rate:    in.MaxPerSecond,
		started: now,
		toMove:  visible,
	}
	f.tasks = append(f.tasks, t)
	f.advanceTask(t, now)
	return t.handle, nil
}

// ListMessageMoveTasks implements queue.MoveTasker.
func (f *Fake) ListMessageMoveTasks(ctx context.Context, sourceARN string, max int) ([]queue.MoveTask, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(ctx, "ListMessageMoveTasks", sourceARN); err != nil {
		return nil, err
	}
	max = cmp.Or(max, 1)
	if max < 1 || max > 10 {
		return nil, fmt.Errorf("sqsfake: ListMessageMoveTasks: %w: MaxResults %d not in 1..10", queue.ErrInvalidParameter, max)
	}
	src, ok := f.byARN[sourceARN]
	if !ok {
		return nil, fmt.Errorf("sqsfake: ListMessageMoveTasks: %w: %s", queue.ErrQueueNotFound, sourceARN)
	}
	f.advanceTasks(f.now())
	var out []queue.MoveTask
	for i := len(f.tasks) - 1; i >= 0 && len(out) < max; i-- {
		t := f.tasks[i]
		if t.src != src {
			continue
		}
		mt := queue.MoveTask{
			Status:         t.status,
			SourceARN:      t.src.arn,
			DestinationARN: t.destARN,
			MaxPerSecond:   t.rate,
			Moved:          t.moved,
			ToMove:         t.toMove,
			FailureReason:  t.failure,
			Started:        t.started,
		}
		if t.status == queue.MoveTaskRunning {
			mt.TaskHandle = t.handle
		}
		out = append(out, mt)
	}
	return out, nil
}

// CancelMessageMoveTask implements queue.MoveTasker. The task goes to
// CANCELLING and, at the fake's next operation, to CANCELLED.
func (f *Fake) CancelMessageMoveTask(ctx context.Context, handle string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(ctx, "CancelMessageMoveTask", handle); err != nil {
		return 0, err
	}
	f.advanceTasks(f.now())
	for _, t := range f.tasks {
		if t.handle == handle && t.status == queue.MoveTaskRunning {
			t.status = queue.MoveTaskCancelling
			return t.moved, nil
		}
	}
	return 0, fmt.Errorf("sqsfake: CancelMessageMoveTask: %w: %s", queue.ErrTaskNotFound, handle)
}

// advanceTasks brings every active task up to now. Callers hold f.mu.
func (f *Fake) advanceTasks(now time.Time) {
	for _, t := range f.tasks {
		f.advanceTask(t, now)
	}
}

func (f *Fake) advanceTask(t *moveTask, now time.Time) {
	switch t.status {
	case queue.MoveTaskCancelling:
		t.status = queue.MoveTaskCancelled
		return
	case queue.MoveTaskRunning:
	default:
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
		destARN := t.destARN
		destARN = cmp.Or(destARN, m.dlqSource)
		if destARN == "" {
			t.status, t.failure = queue.MoveTaskFailed, fmt.Sprintf("message %s has no DeadLetterQueueSourceArn (it was sent to the DLQ, not moved there by a redrive policy) and the task has no destination", m.id)
			return
		}
		dest, ok := f.byARN[destARN]
		if !ok {
			t.status, t.failure = queue.MoveTaskFailed, "AWS.SimpleQueueService.NonExistentQueue: "+destARN
			return
		}
		f.moveMessage(t.src, dest, m, now)
		t.moved++
	}
	if t.moved >= t.toMove || len(t.src.msgs) == 0 {
		t.status = queue.MoveTaskCompleted
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
func (f *Fake) moveMessage(src, dest *fakeQueue, m *message, now time.Time) {
	nm := &message{
		q:         dest,
		id:        newUUID(),
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
		nm.dedupID = m.dedupID
		nm.groupID = cmp.Or(nm.groupID, m.id)
		nm.dedupID = cmp.Or(nm.dedupID, m.id)
	}
	dest.msgs = append(dest.msgs, nm)
	dest.stats.Sent++
	m.deleted = true
	src.stats.MovedByTask++
	for i, x := range src.msgs {
		if x == m {
			src.msgs = append(src.msgs[:i], src.msgs[i+1:]...)
			break
		}
	}
}
