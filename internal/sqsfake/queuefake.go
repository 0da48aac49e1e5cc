// Package sqsfake is an in-memory SQS that implements queue.API (and
// queue.AdminAPI) with the semantics the project's reliability depends on,
// so consumers and operator tools are tested without AWS: visibility
// timeouts, ApproximateReceiveCount and timestamps, redrive to a DLQ on the
// receive after maxReceiveCount (arriving with that count), FIFO groups and
// deduplication, SQS's attribute, size and batch validation, stale receipt
// handles, and message move tasks at their exact rate against the clock
// (advanced when the fake is next called). Time is injectable (WithClock);
// faults are injected with SetFault. Its conformance suite runs every check
// through the real SDK client against the fake and against fauxqs, an
// independent emulator (fauxqstest); where the two differ the test asserts
// which side SQS's documentation backs. Those divergences, and what the
// fake does not model, are listed in docs/design.md#sqs-fake.
package sqsfake

import (
	"cmp"
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mercadofresco/integration/lambdas/queue"
)

// SQS limits and defaults the fake enforces.
const (
	DefaultVisibilityTimeout = 30 * time.Second
	DefaultRetentionPeriod   = 4 * 24 * time.Hour
	// DefaultMaxMessageSize is the classic 256 KiB limit. SQS now accepts up to
	// 1 MiB when a queue is configured for it; set QueueConfig.MaxMessageSize to
	// model such a queue. The stricter default catches payloads that would break
	// on queues still at 256 KiB.
	DefaultMaxMessageSize = 256 * 1024
	MaxMessageAttributes  = 10
	DeduplicationWindow   = 5 * time.Minute
	maxDelay              = 15 * time.Minute
	maxVisibility         = 12 * time.Hour
	senderID              = "AIDAQUEUEFAKESENDER"
)

// RedrivePolicy sends messages received MaxReceiveCount times to a DLQ.
type RedrivePolicy struct {
	// DeadLetterTargetARN is the ARN of an existing queue of the same type.
	DeadLetterTargetARN string
	// MaxReceiveCount is 1..1000.
	MaxReceiveCount int
}

// QueueConfig configures a queue; the zero value is a standard queue with SQS
// defaults. A name ending in ".fifo" makes a FIFO queue.
type QueueConfig struct {
	VisibilityTimeout         time.Duration // default 30 s
	RetentionPeriod           time.Duration // default 4 days
	Delay                     time.Duration // queue-level delivery delay
	ContentBasedDeduplication bool          // FIFO only
	MaxMessageSize            int           // bytes; default DefaultMaxMessageSize
	Redrive                   *RedrivePolicy
}

// Stats counts what happened on one queue.
type Stats struct {
	Sent         int // messages accepted and enqueued (not counting deduplicated sends)
	Deduplicated int // FIFO sends accepted but dropped as duplicates
	Received     int // deliveries (one message received twice counts 2)
	Deleted      int
	StaleDeletes int // deletes with an outdated receipt handle that deleted nothing
	MovedToDLQ   int // moved out of this queue by its redrive policy
	MovedByTask  int // moved out of this queue by a message move task
	Expired      int // dropped at the end of the retention period
}

// MessageState is a read-only view of a stored message, for assertions. It is
// not an SQS operation: it neither hides the message nor counts a receive.
type MessageState struct {
	MessageID         string
	Body              string
	GroupID           string
	DeduplicationID   string
	SequenceNumber    string
	ReceiveCount      int
	InFlight          bool
	Delayed           bool
	VisibleAt         time.Time
	SentAt            time.Time
	MessageAttributes map[string]queue.Attribute
	DLQSourceARN      string
}

// Option configures a Fake.
type Option func(*Fake)

// WithClock sets the time source (default time.Now; tests pass a
// *retry.VirtualClock's Now).
func WithClock(now func() time.Time) Option { return func(f *Fake) { f.now = now } }

// WithRegion sets the region used in queue URLs and ARNs (default eu-west-1).
func WithRegion(r string) Option { return func(f *Fake) { f.region = r } }

// WithAccount sets the account id used in queue URLs and ARNs (default 000000000000).
func WithAccount(a string) Option { return func(f *Fake) { f.account = a } }

// Fault decides whether an operation fails: return a non-nil error to make
// operation op ("SendMessage", "ReceiveMessage", "DeleteMessage",
// "ChangeMessageVisibility", "GetQueueAttributes", "ListDeadLetterSourceQueues",
// "SendMessageBatch", "DeleteMessageBatch", "ChangeMessageVisibilityBatch")
// on queueURL fail with it before it has any effect. The operations not
// addressed by URL pass their own target: "GetQueueUrl" the queue name,
// "StartMessageMoveTask" and "ListMessageMoveTasks" the source ARN,
// "CancelMessageMoveTask" the task handle.
type Fault func(op, queueURL string) error

// Fake is an in-memory SQS. The zero value is not usable; call New. It is
// safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     func() time.Time
	region  string
	account string
	byURL   map[string]*fakeQueue
	byARN   map[string]*fakeQueue
	handles map[string]*handle
	nHandle uint64
	fault   Fault
	tasks   []*moveTask // every message move task, oldest first
	nTask   uint64
}

var _ queue.API = (*Fake)(nil)

type fakeQueue struct {
	name, url, arn string
	fifo           bool
	cfg            QueueConfig
	dlq            *fakeQueue
	msgs           []*message // in enqueue (sequence) order
	dedup          map[string]dedupEntry
	seq            uint64
	stats          Stats
}

type dedupEntry struct {
	at            time.Time
	id, seqNumber string
}

type message struct {
	q            *fakeQueue
	id, body     string
	md5          string
	attrs        map[string]queue.Attribute
	groupID      string
	dedupID      string
	seqNumber    string
	sentAt       time.Time
	firstReceive time.Time
	receiveCount int
	visibleAt    time.Time // delayed or hidden until then
	receipt      string    // latest receipt handle; "" if never received
	deleted      bool
	dlqSource    string
}

type handle struct {
	msg *message
}

// New returns an empty Fake.
func New(opts ...Option) *Fake {
	f := &Fake{
		now:     time.Now,
		region:  "eu-west-1",
		account: "000000000000",
		byURL:   map[string]*fakeQueue{},
		byARN:   map[string]*fakeQueue{},
		handles: map[string]*handle{},
	}
	for _, o := range opts {
		o(f)
	}
	return f
}

// SetFault installs (or, with nil, removes) a failure injector.
func (f *Fake) SetFault(fn Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = fn
}

// CreateQueue creates a queue and returns its URL. As in SQS, a FIFO queue's
// name ends in ".fifo" and its DLQ must be FIFO too; the DLQ must exist first.
func (f *Fake) CreateQueue(name string, cfg QueueConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if name == "" || len(name) > 80 {
		return "", fmt.Errorf("%w: queue name %q must be 1..80 characters", queue.ErrInvalidParameter, name)
	}
	fifo := strings.HasSuffix(name, ".fifo")
	if cfg.ContentBasedDeduplication && !fifo {
		return "", fmt.Errorf("%w: ContentBasedDeduplication is only valid for FIFO queues", queue.ErrInvalidParameter)
	}
	cfg.VisibilityTimeout = cmp.Or(cfg.VisibilityTimeout, DefaultVisibilityTimeout)
	if cfg.VisibilityTimeout < 0 || cfg.VisibilityTimeout > maxVisibility {
		return "", fmt.Errorf("%w: VisibilityTimeout %s not in 0..12h", queue.ErrInvalidParameter, cfg.VisibilityTimeout)
	}
	cfg.RetentionPeriod = cmp.Or(cfg.RetentionPeriod, DefaultRetentionPeriod)
	if cfg.RetentionPeriod < time.Minute || cfg.RetentionPeriod > 14*24*time.Hour {
		return "", fmt.Errorf("%w: MessageRetentionPeriod %s not in 60s..14d", queue.ErrInvalidParameter, cfg.RetentionPeriod)
	}
	if cfg.Delay < 0 || cfg.Delay > maxDelay {
		return "", fmt.Errorf("%w: DelaySeconds %s not in 0..15m", queue.ErrInvalidParameter, cfg.Delay)
	}
	cfg.MaxMessageSize = cmp.Or(cfg.MaxMessageSize, DefaultMaxMessageSize)
	q := &fakeQueue{
		name:  name,
		url:   fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", f.region, f.account, name),
		arn:   fmt.Sprintf("arn:aws:sqs:%s:%s:%s", f.region, f.account, name),
		fifo:  fifo,
		cfg:   cfg,
		dedup: map[string]dedupEntry{},
	}
	if _, ok := f.byURL[q.url]; ok {
		return "", fmt.Errorf("%w: queue %s already exists", queue.ErrInvalidParameter, name)
	}
	if rp := cfg.Redrive; rp != nil {
		dlq, ok := f.byARN[rp.DeadLetterTargetARN]
		if !ok {
			return "", fmt.Errorf("%w: dead-letter target %s does not exist", queue.ErrQueueNotFound, rp.DeadLetterTargetARN)
		}
		if dlq.fifo != fifo {
			return "", fmt.Errorf("%w: the dead-letter queue of a %s queue must be %s", queue.ErrInvalidParameter, kind(fifo), kind(fifo))
		}
		if rp.MaxReceiveCount < 1 || rp.MaxReceiveCount > 1000 {
			return "", fmt.Errorf("%w: maxReceiveCount %d not in 1..1000", queue.ErrInvalidParameter, rp.MaxReceiveCount)
		}
		q.dlq = dlq
		cp := *rp
		q.cfg.Redrive = &cp
	}
	f.byURL[q.url] = q
	f.byARN[q.arn] = q
	return q.url, nil
}

func kind(fifo bool) string {
	if fifo {
		return "FIFO"
	}
	return "standard"
}

// ARN returns the ARN of the queue at url, or "" if there is none.
func (f *Fake) ARN(url string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q, ok := f.byURL[url]; ok {
		return q.arn
	}
	return ""
}

// Region returns the region used in URLs and ARNs.
func (f *Fake) Region() string { return f.region }

// Stats returns the counters of the queue at url.
func (f *Fake) Stats(url string) Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q, ok := f.byURL[url]; ok {
		f.advanceTasks(f.now())
		return q.stats
	}
	return Stats{}
}

// Inspect returns the stored messages of the queue at url in enqueue order
// (after applying retention), without receiving them.
func (f *Fake) Inspect(url string) ([]MessageState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, ok := f.byURL[url]
	if !ok {
		return nil, fmt.Errorf("%w: %s", queue.ErrQueueNotFound, url)
	}
	now := f.now()
	f.advanceTasks(now)
	f.expire(q, now)
	out := make([]MessageState, 0, len(q.msgs))
	for _, m := range q.msgs {
		out = append(out, MessageState{
			MessageID:         m.id,
			Body:              m.body,
			GroupID:           m.groupID,
			DeduplicationID:   m.dedupID,
			SequenceNumber:    m.seqNumber,
			ReceiveCount:      m.receiveCount,
			InFlight:          m.inFlight(now),
			Delayed:           m.receipt == "" && now.Before(m.visibleAt),
			VisibleAt:         m.visibleAt,
			SentAt:            m.sentAt,
			MessageAttributes: copyAttrs(m.attrs),
			DLQSourceARN:      m.dlqSource,
		})
	}
	return out, nil
}

func (m *message) inFlight(now time.Time) bool {
	return m.receipt != "" && now.Before(m.visibleAt)
}

func (m *message) visible(now time.Time) bool { return !now.Before(m.visibleAt) }

// lookup returns the queue for url after consulting the fault injector.
// Callers hold f.mu.
func (f *Fake) lookup(ctx context.Context, op, url string) (*fakeQueue, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sqsfake: %s: %w", op, err)
	}
	if f.fault != nil {
		if err := f.fault(op, url); err != nil {
			return nil, err
		}
	}
	q, ok := f.byURL[url]
	if !ok {
		return nil, fmt.Errorf("sqsfake: %s: %w: %s", op, queue.ErrQueueNotFound, url)
	}
	f.advanceTasks(f.now())
	return q, nil
}

// SendMessage implements queue.Sender.
func (f *Fake) SendMessage(ctx context.Context, in *queue.SendMessageInput) (*queue.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.lookup(ctx, "SendMessage", in.QueueURL)
	if err != nil {
		return nil, err
	}
	return f.send(q, in)
}

// send enqueues in on q (its QueueURL is not read). Callers hold f.mu.
func (f *Fake) send(q *fakeQueue, in *queue.SendMessageInput) (*queue.SendMessageOutput, error) {
	if err := validateBody(in.Body); err != nil {
		return nil, err
	}
	size, err := validateAttributes(in.MessageAttributes)
	if err != nil {
		return nil, err
	}
	if size += len(in.Body); size > q.cfg.MaxMessageSize {
		return nil, fmt.Errorf("sqsfake: SendMessage: %w: message of %d bytes exceeds the queue's %d", queue.ErrInvalidParameter, size, q.cfg.MaxMessageSize)
	}
	if in.Delay < 0 || in.Delay > maxDelay {
		return nil, fmt.Errorf("sqsfake: SendMessage: %w: DelaySeconds %s not in 0..15m", queue.ErrInvalidParameter, in.Delay)
	}
	now := f.now()
	dedupID := in.MessageDeduplicationID
	if q.fifo {
		if in.MessageGroupID == "" {
			return nil, fmt.Errorf("sqsfake: SendMessage: %w: a FIFO queue requires MessageGroupId", ErrMissingParameter)
		}
		if err := validateFIFOID("MessageGroupId", in.MessageGroupID); err != nil {
			return nil, err
		}
		if in.Delay > 0 {
			return nil, fmt.Errorf("sqsfake: SendMessage: %w: per-message DelaySeconds is not supported on FIFO queues", queue.ErrInvalidParameter)
		}
		if dedupID == "" {
			if !q.cfg.ContentBasedDeduplication {
				return nil, fmt.Errorf("sqsfake: SendMessage: %w: the queue has no content-based deduplication and no MessageDeduplicationId was given", queue.ErrInvalidParameter)
			}
			sum := sha256.Sum256([]byte(in.Body))
			dedupID = hex.EncodeToString(sum[:])
		} else if err := validateFIFOID("MessageDeduplicationId", dedupID); err != nil {
			return nil, err
		}
		f.pruneDedup(q, now)
		if e, ok := q.dedup[dedupID]; ok {
			q.stats.Deduplicated++
			return &queue.SendMessageOutput{MessageID: e.id, SequenceNumber: e.seqNumber}, nil
		}
	} else if dedupID != "" {
		return nil, fmt.Errorf("sqsfake: SendMessage: %w: MessageDeduplicationId is only valid for FIFO queues", queue.ErrInvalidParameter)
	} else if in.MessageGroupID != "" {
		// Standard queues accept a group id (fair queues) without ordering.
		if err := validateFIFOID("MessageGroupId", in.MessageGroupID); err != nil {
			return nil, err
		}
	}
	delay := q.cfg.Delay
	if in.Delay > 0 {
		delay = in.Delay
	}
	m := &message{
		q:         q,
		id:        newUUID(),
		body:      in.Body,
		md5:       md5Hex(in.Body),
		attrs:     copyAttrs(in.MessageAttributes),
		groupID:   in.MessageGroupID,
		sentAt:    now,
		visibleAt: now.Add(delay),
	}
	if q.fifo {
		m.dedupID = dedupID
		q.seq++
		m.seqNumber = fmt.Sprintf("%020d", q.seq)
		q.dedup[dedupID] = dedupEntry{at: now, id: m.id, seqNumber: m.seqNumber}
	}
	q.msgs = append(q.msgs, m)
	q.stats.Sent++
	return &queue.SendMessageOutput{MessageID: m.id, SequenceNumber: m.seqNumber}, nil
}

func (f *Fake) pruneDedup(q *fakeQueue, now time.Time) {
	for k, e := range q.dedup {
		if now.Sub(e.at) >= DeduplicationWindow {
			delete(q.dedup, k)
		}
	}
}

// expire drops messages past the retention period. Callers hold f.mu.
func (f *Fake) expire(q *fakeQueue, now time.Time) {
	kept := q.msgs[:0]
	for _, m := range q.msgs {
		if now.Sub(m.sentAt) >= q.cfg.RetentionPeriod {
			m.deleted = true
			q.stats.Expired++
			continue
		}
		kept = append(kept, m)
	}
	clear(q.msgs[len(kept):])
	q.msgs = kept
}

// ReceiveMessage implements queue.Receiver.
func (f *Fake) ReceiveMessage(ctx context.Context, in *queue.ReceiveMessageInput) ([]queue.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.lookup(ctx, "ReceiveMessage", in.QueueURL)
	if err != nil {
		return nil, err
	}
	max := in.MaxMessages
	max = cmp.Or(max, 1)
	if max < 1 || max > 10 {
		return nil, fmt.Errorf("sqsfake: ReceiveMessage: %w: MaxNumberOfMessages %d not in 1..10", queue.ErrInvalidParameter, in.MaxMessages)
	}
	if in.VisibilityTimeout < 0 || in.VisibilityTimeout > maxVisibility {
		return nil, fmt.Errorf("sqsfake: ReceiveMessage: %w: VisibilityTimeout %s not in 0..12h", queue.ErrInvalidParameter, in.VisibilityTimeout)
	}
	if in.WaitTime < 0 || in.WaitTime > 20*time.Second {
		return nil, fmt.Errorf("sqsfake: ReceiveMessage: %w: WaitTimeSeconds %s not in 0..20s", queue.ErrInvalidParameter, in.WaitTime)
	}
	vt := q.cfg.VisibilityTimeout
	if in.VisibilityTimeout > 0 {
		vt = in.VisibilityTimeout
	}
	now := f.now()
	f.expire(q, now)

	// FIFO: a group with a message in flight delivers nothing; a group whose
	// head is not delivered delivers nothing after it (order within a group).
	blocked := map[string]bool{}
	if q.fifo {
		for _, m := range q.msgs {
			if m.inFlight(now) {
				blocked[m.groupID] = true
			}
		}
	}
	var out []queue.Message
	var moved []*message
	for _, m := range q.msgs {
		if len(out) == max {
			break
		}
		if q.fifo && blocked[m.groupID] {
			continue
		}
		if !m.visible(now) {
			if q.fifo {
				blocked[m.groupID] = true
			}
			continue
		}
		if rp := q.cfg.Redrive; rp != nil && m.receiveCount >= rp.MaxReceiveCount {
			moved = append(moved, m)
			continue
		}
		m.receiveCount++
		if m.firstReceive.IsZero() {
			m.firstReceive = now
		}
		m.visibleAt = now.Add(vt)
		f.nHandle++
		m.receipt = fmt.Sprintf("qf-%d-%s", f.nHandle, m.id)
		f.handles[m.receipt] = &handle{msg: m}
		q.stats.Received++
		out = append(out, m.toMessage())
	}
	if len(moved) > 0 {
		f.moveToDLQ(q, moved, now)
	}
	return out, nil
}

// moveToDLQ moves msgs from q to its DLQ as a redrive policy does: same
// message id, body, attributes and receive count; the DLQ's own sequence
// (and, FIFO, the message id as deduplication id).
func (f *Fake) moveToDLQ(q *fakeQueue, msgs []*message, now time.Time) {
	gone := make(map[*message]bool, len(msgs))
	for _, m := range msgs {
		gone[m] = true
		nm := *m
		nm.q = q.dlq
		nm.receipt = ""
		nm.visibleAt = now
		nm.dlqSource = q.arn
		if q.dlq.fifo {
			// FIFO DLQs restart the retention clock; standard ones keep the
			// original enqueue time (SQS behaviour). The deduplication id
			// becomes the message id, as SQS documents, so two messages that
			// shared one are not deduplicated in the DLQ.
			nm.sentAt = now
			q.dlq.seq++
			nm.seqNumber = fmt.Sprintf("%020d", q.dlq.seq)
			nm.dedupID = m.id
			q.dlq.dedup[m.id] = dedupEntry{at: now, id: m.id, seqNumber: nm.seqNumber}
		}
		q.dlq.msgs = append(q.dlq.msgs, &nm)
		q.dlq.stats.Sent++
		m.deleted = true
		q.stats.MovedToDLQ++
	}
	kept := q.msgs[:0]
	for _, m := range q.msgs {
		if !gone[m] {
			kept = append(kept, m)
		}
	}
	clear(q.msgs[len(kept):])
	q.msgs = kept
}

func (m *message) toMessage() queue.Message {
	attrs := map[string]string{
		queue.AttrApproximateReceiveCount:          strconv.Itoa(m.receiveCount),
		queue.AttrApproximateFirstReceiveTimestamp: strconv.FormatInt(m.firstReceive.UnixMilli(), 10),
		queue.AttrSentTimestamp:                    strconv.FormatInt(m.sentAt.UnixMilli(), 10),
		queue.AttrSenderID:                         senderID,
	}
	if m.groupID != "" {
		attrs[queue.AttrMessageGroupID] = m.groupID
	}
	if m.dedupID != "" {
		attrs[queue.AttrMessageDeduplicationID] = m.dedupID
	}
	if m.seqNumber != "" {
		attrs[queue.AttrSequenceNumber] = m.seqNumber
	}
	if m.dlqSource != "" {
		attrs[queue.AttrDeadLetterQueueSourceArn] = m.dlqSource
	}
	return queue.Message{
		MessageID:         m.id,
		ReceiptHandle:     m.receipt,
		Body:              m.body,
		MD5OfBody:         m.md5,
		Attributes:        attrs,
		MessageAttributes: copyAttrs(m.attrs),
	}
}

// DeleteMessage implements queue.Deleter.
func (f *Fake) DeleteMessage(ctx context.Context, queueURL, receiptHandle string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.lookup(ctx, "DeleteMessage", queueURL)
	if err != nil {
		return err
	}
	return f.delete(q, receiptHandle)
}

// delete deletes the message of receiptHandle from q. Callers hold f.mu.
func (f *Fake) delete(q *fakeQueue, receiptHandle string) error {
	h, ok := f.handles[receiptHandle]
	if !ok || h.msg.q != q {
		return fmt.Errorf("sqsfake: DeleteMessage: %w: unknown receipt handle", queue.ErrReceiptHandleInvalid)
	}
	m := h.msg
	if m.deleted {
		return nil // deleting twice succeeds, as in SQS
	}
	now := f.now()
	if m.receipt != receiptHandle {
		if q.fifo {
			return fmt.Errorf("sqsfake: DeleteMessage: %w: the message was received again since this handle was issued", queue.ErrReceiptHandleInvalid)
		}
		q.stats.StaleDeletes++
		return nil
	}
	if q.fifo && !m.inFlight(now) {
		return fmt.Errorf("sqsfake: DeleteMessage: %w: the visibility timeout of this handle expired", queue.ErrReceiptHandleInvalid)
	}
	m.deleted = true
	for i, x := range q.msgs {
		if x == m {
			q.msgs = append(q.msgs[:i], q.msgs[i+1:]...)
			break
		}
	}
	q.stats.Deleted++
	return nil
}

// ChangeMessageVisibility implements queue.VisibilityChanger.
func (f *Fake) ChangeMessageVisibility(ctx context.Context, queueURL, receiptHandle string, timeout time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.lookup(ctx, "ChangeMessageVisibility", queueURL)
	if err != nil {
		return err
	}
	return f.changeVisibility(q, receiptHandle, timeout)
}

// changeVisibility is ChangeMessageVisibility on q. Callers hold f.mu.
func (f *Fake) changeVisibility(q *fakeQueue, receiptHandle string, timeout time.Duration) error {
	if timeout < 0 || timeout > maxVisibility {
		return fmt.Errorf("sqsfake: ChangeMessageVisibility: %w: %s not in 0..12h", queue.ErrInvalidParameter, timeout)
	}
	h, ok := f.handles[receiptHandle]
	if !ok || h.msg.q != q {
		return fmt.Errorf("sqsfake: ChangeMessageVisibility: %w: unknown receipt handle", queue.ErrReceiptHandleInvalid)
	}
	m := h.msg
	if m.receipt != receiptHandle {
		return fmt.Errorf("sqsfake: ChangeMessageVisibility: %w: the message was received again since this handle was issued", queue.ErrReceiptHandleInvalid)
	}
	now := f.now()
	if m.deleted || !m.inFlight(now) {
		return fmt.Errorf("sqsfake: ChangeMessageVisibility: %w", queue.ErrMessageNotInflight)
	}
	m.visibleAt = now.Add(timeout)
	return nil
}

// GetQueueAttributes implements queue.AttributeGetter.
func (f *Fake) GetQueueAttributes(ctx context.Context, queueURL string, names ...string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.lookup(ctx, "GetQueueAttributes", queueURL)
	if err != nil {
		return nil, err
	}
	now := f.now()
	f.expire(q, now)
	var visible, inflight, delayed int
	for _, m := range q.msgs {
		switch {
		case m.inFlight(now):
			inflight++
		case !m.visible(now):
			delayed++
		default:
			visible++
		}
	}
	all := map[string]string{
		queue.QueueAttrApproximateNumberOfMessages:           strconv.Itoa(visible),
		queue.QueueAttrApproximateNumberOfMessagesNotVisible: strconv.Itoa(inflight),
		queue.QueueAttrApproximateNumberOfMessagesDelayed:    strconv.Itoa(delayed),
		queue.QueueAttrVisibilityTimeout:                     strconv.Itoa(int(q.cfg.VisibilityTimeout / time.Second)),
		queue.QueueAttrQueueArn:                              q.arn,
		queue.QueueAttrMessageRetentionPeriod:                strconv.Itoa(int(q.cfg.RetentionPeriod / time.Second)),
		"DelaySeconds":                                       strconv.Itoa(int(q.cfg.Delay / time.Second)),
		"MaximumMessageSize":                                 strconv.Itoa(q.cfg.MaxMessageSize),
	}
	if q.fifo {
		all[queue.QueueAttrFifoQueue] = "true"
		all["ContentBasedDeduplication"] = strconv.FormatBool(q.cfg.ContentBasedDeduplication)
	}
	if rp := q.cfg.Redrive; rp != nil {
		b, _ := json.Marshal(map[string]any{"deadLetterTargetArn": rp.DeadLetterTargetARN, "maxReceiveCount": rp.MaxReceiveCount})
		all[queue.QueueAttrRedrivePolicy] = string(b)
	}
	if len(names) == 0 {
		names = []string{queue.QueueAttrAll}
	}
	out := map[string]string{}
	for _, n := range names {
		if n == queue.QueueAttrAll {
			return all, nil
		}
		v, ok := all[n]
		if !ok {
			if knownUnset[n] {
				continue
			}
			return nil, fmt.Errorf("sqsfake: GetQueueAttributes: %w: unknown attribute %q", queue.ErrInvalidParameter, n)
		}
		out[n] = v
	}
	return out, nil
}

// knownUnset are valid SQS attribute names the fake may not have a value for.
var knownUnset = map[string]bool{
	queue.QueueAttrFifoQueue: true, queue.QueueAttrRedrivePolicy: true, "ContentBasedDeduplication": true,
	"Policy": true, "KmsMasterKeyId": true, "RedriveAllowPolicy": true, "SqsManagedSseEnabled": true,
	"CreatedTimestamp": true, "LastModifiedTimestamp": true, "ReceiveMessageWaitTimeSeconds": true,
}

// validateBody applies SQS's rules: non-empty and only the allowed Unicode
// characters (#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF).
func validateBody(b string) error {
	if b == "" {
		return fmt.Errorf("sqsfake: SendMessage: %w: the message body must not be empty", queue.ErrInvalidParameter)
	}
	if !utf8.ValidString(b) {
		return fmt.Errorf("sqsfake: SendMessage: %w: the message body is not valid UTF-8", ErrInvalidMessageContents)
	}
	for i, r := range b {
		if !allowedRune(r) {
			return fmt.Errorf("sqsfake: SendMessage: %w: character %U at byte %d is not allowed by SQS", ErrInvalidMessageContents, r, i)
		}
	}
	return nil
}

func allowedRune(r rune) bool {
	return r == 0x9 || r == 0xA || r == 0xD || (r >= 0x20 && r <= 0xD7FF) ||
		(r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}

// validateAttributes applies SQS's message attribute rules and returns the
// attributes' contribution to the message size (name + type + value).
func validateAttributes(attrs map[string]queue.Attribute) (int, error) {
	if len(attrs) > MaxMessageAttributes {
		return 0, fmt.Errorf("sqsfake: SendMessage: %w: %d message attributes, SQS allows %d", queue.ErrInvalidParameter, len(attrs), MaxMessageAttributes)
	}
	size := 0
	for name, a := range attrs {
		if err := validateAttributeName(name); err != nil {
			return 0, err
		}
		base, _, _ := strings.Cut(a.DataType, ".")
		switch base {
		case "String":
			if a.StringValue == "" {
				return 0, fmt.Errorf("sqsfake: SendMessage: %w: attribute %q has an empty value", queue.ErrInvalidParameter, name)
			}
			if !utf8.ValidString(a.StringValue) {
				return 0, fmt.Errorf("sqsfake: SendMessage: %w: attribute %q is not valid UTF-8", queue.ErrInvalidParameter, name)
			}
			for _, r := range a.StringValue {
				if !allowedRune(r) {
					return 0, fmt.Errorf("sqsfake: SendMessage: %w: attribute %q has character %U", queue.ErrInvalidParameter, name, r)
				}
			}
			size += len(a.StringValue)
		case "Number":
			if _, ok := new(big.Float).SetString(a.StringValue); !ok {
				return 0, fmt.Errorf("sqsfake: SendMessage: %w: attribute %q: %q is not a number", queue.ErrInvalidParameter, name, a.StringValue)
			}
			size += len(a.StringValue)
		case "Binary":
			if len(a.BinaryValue) == 0 {
				return 0, fmt.Errorf("sqsfake: SendMessage: %w: attribute %q has an empty value", queue.ErrInvalidParameter, name)
			}
			size += len(a.BinaryValue)
		default:
			return 0, fmt.Errorf("sqsfake: SendMessage: %w: attribute %q has data type %q (want String, Number or Binary)", queue.ErrInvalidParameter, name, a.DataType)
		}
		size += len(name) + len(a.DataType)
	}
	return size, nil
}

func validateAttributeName(n string) error {
	bad := func(why string) error {
		return fmt.Errorf("sqsfake: SendMessage: %w: attribute name %q %s", queue.ErrInvalidParameter, n, why)
	}
	if n == "" || len(n) > 256 {
		return bad("must be 1..256 characters")
	}
	lower := strings.ToLower(n)
	if strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon.") {
		return bad("uses a reserved prefix")
	}
	if n[0] == '.' || n[len(n)-1] == '.' || strings.Contains(n, "..") {
		return bad("must not start or end with a period or contain two in a row")
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return bad("may only contain letters, digits, '_', '-' and '.'")
		}
	}
	return nil
}

// validateFIFOID checks MessageGroupId / MessageDeduplicationId: 1..128
// characters from alphanumerics and punctuation.
func validateFIFOID(field, v string) error {
	if v == "" || len(v) > 128 {
		return fmt.Errorf("sqsfake: SendMessage: %w: %s must be 1..128 characters", queue.ErrInvalidParameter, field)
	}
	for _, r := range v {
		if r < 0x21 || r > 0x7E {
			return fmt.Errorf("sqsfake: SendMessage: %w: %s may only contain alphanumerics and punctuation", queue.ErrInvalidParameter, field)
		}
	}
	return nil
}

func copyAttrs(in map[string]queue.Attribute) map[string]queue.Attribute {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]queue.Attribute, len(in))
	for k, v := range in {
		if v.BinaryValue != nil {
			v.BinaryValue = append([]byte(nil), v.BinaryValue...)
		}
		out[k] = v
	}
	return out
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// newUUID returns a random RFC 4122 version 4 UUID, the shape of SQS message ids.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// QueueURLs returns the URLs of all queues, sorted.
func (f *Fake) QueueURLs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.byURL))
}
