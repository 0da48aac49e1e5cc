package localaws

import (
	"cmp"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/google/uuid"
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

// QueueStats counts what happened on one queue.
type QueueStats struct {
	Sent         int // messages accepted and enqueued (not counting deduplicated sends)
	Received     int // deliveries (one message received twice counts 2)
	Deleted      int
	StaleDeletes int // deletes with an outdated receipt handle that deleted nothing
	MovedToDLQ   int // moved out of this queue by its redrive policy
}

// MessageState is a read-only view of a stored message, for assertions. It is
// not an SQS operation: it neither hides the message nor counts a receive.
type MessageState struct {
	MessageID         string
	Body              string
	GroupID           string
	DeduplicationID   string
	ReceiveCount      int
	InFlight          bool
	VisibleAt         time.Time
	SentAt            time.Time
	MessageAttributes map[string]types.MessageAttributeValue
	DLQSourceARN      string
}

// SQSConfig configures an SQS; the zero value is the wall clock in
// eu-west-1, account 000000000000.
type SQSConfig struct {
	// Now is the time source (tests pass a *retry.VirtualClock's Now).
	Now func() time.Time
	// Region and Account are used in queue URLs and ARNs.
	Region, Account string
}

// SQSFault decides whether an operation fails: return a non-nil error to make
// operation op (the SDK's operation name: "SendMessage", "ReceiveMessage",
// "SendMessageBatch", ...) on queueURL fail with it before it has any effect.
// The operations not addressed by URL pass their own target: "GetQueueUrl"
// the queue name, "StartMessageMoveTask" and "ListMessageMoveTasks" the
// source ARN. An entry of a SendMessageBatch is asked about as op
// "SendMessageBatchEntry" with the entry's Id as target: an error fails that
// entry alone (in Failed[], with the error's code when it is a
// smithy.APIError), as SQS fails single entries of a batch.
type SQSFault func(op, target string) error

// SQS is an in-memory SQS with the semantics docs/design.md#sqs-fake lists.
// The zero value is not usable; call NewSQS. It is safe for concurrent use.
type SQS struct {
	mu      sync.Mutex
	now     func() time.Time
	region  string
	account string
	byURL   map[string]*fakeQueue
	byARN   map[string]*fakeQueue
	handles map[string]*message
	nHandle uint64
	fault   SQSFault
	tasks   []*moveTask // every message move task, oldest first
	nTask   uint64
}

type fakeQueue struct {
	name, url, arn string
	fifo           bool
	cfg            QueueConfig
	dlq            *fakeQueue
	msgs           []*message // in enqueue (sequence) order
	dedup          map[string]dedupEntry
	seq            uint64
	stats          QueueStats
}

type dedupEntry struct {
	at            time.Time
	id, seqNumber string
}

type message struct {
	q            *fakeQueue
	id, body     string
	md5          string
	attrs        map[string]types.MessageAttributeValue
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

// NewSQS returns an SQS without queues.
func NewSQS(c SQSConfig) *SQS {
	if c.Now == nil {
		c.Now = time.Now
	}
	return &SQS{
		now:     c.Now,
		region:  cmp.Or(c.Region, "eu-west-1"),
		account: cmp.Or(c.Account, "000000000000"),
		byURL:   map[string]*fakeQueue{},
		byARN:   map[string]*fakeQueue{},
		handles: map[string]*message{},
	}
}

// SetFault installs (or, with nil, removes) a failure injector.
func (f *SQS) SetFault(fn SQSFault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = fn
}

// The errors the fake answers with are the SDK's: the typed ones where the
// SDK has a type, smithy.GenericAPIError with SQS's code otherwise.
func apiError(code, format string, args ...any) error {
	return &smithy.GenericAPIError{Code: code, Message: fmt.Sprintf(format, args...), Fault: smithy.FaultClient}
}

func invalid(format string, args ...any) error {
	return apiError("InvalidParameterValue", format, args...)
}

func noQueue(what string) error {
	return &types.QueueDoesNotExist{Message: aws.String("The specified queue does not exist: " + what)}
}

func badHandle(why string) error { return &types.ReceiptHandleIsInvalid{Message: aws.String(why)} }

// opError wraps err as the SDK wraps an operation's error.
func opError(op string, err error) error {
	if err == nil {
		return nil
	}
	return &smithy.OperationError{ServiceID: "SQS", OperationName: op, Err: err}
}

// CreateQueue creates a queue and returns its URL. As in SQS, a FIFO queue's
// name ends in ".fifo" and its DLQ must be FIFO too; the DLQ must exist first.
func (f *SQS) CreateQueue(name string, cfg QueueConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if name == "" || len(name) > 80 {
		return "", invalid("queue name %q must be 1..80 characters", name)
	}
	fifo := strings.HasSuffix(name, ".fifo")
	if cfg.ContentBasedDeduplication && !fifo {
		return "", invalid("ContentBasedDeduplication is only valid for FIFO queues")
	}
	cfg.VisibilityTimeout = cmp.Or(cfg.VisibilityTimeout, DefaultVisibilityTimeout)
	if cfg.VisibilityTimeout < 0 || cfg.VisibilityTimeout > maxVisibility {
		return "", invalid("VisibilityTimeout %s not in 0..12h", cfg.VisibilityTimeout)
	}
	cfg.RetentionPeriod = cmp.Or(cfg.RetentionPeriod, DefaultRetentionPeriod)
	if cfg.RetentionPeriod < time.Minute || cfg.RetentionPeriod > 14*24*time.Hour {
		return "", invalid("MessageRetentionPeriod %s not in 60s..14d", cfg.RetentionPeriod)
	}
	if cfg.Delay < 0 || cfg.Delay > maxDelay {
		return "", invalid("DelaySeconds %s not in 0..15m", cfg.Delay)
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
		return "", invalid("queue %s already exists", name)
	}
	if rp := cfg.Redrive; rp != nil {
		dlq, ok := f.byARN[rp.DeadLetterTargetARN]
		if !ok {
			return "", noQueue("dead-letter target " + rp.DeadLetterTargetARN)
		}
		if dlq.fifo != fifo {
			kind := map[bool]string{true: "FIFO", false: "standard"}[fifo]
			return "", invalid("the dead-letter queue of a %s queue must be %s", kind, kind)
		}
		if rp.MaxReceiveCount < 1 || rp.MaxReceiveCount > 1000 {
			return "", invalid("maxReceiveCount %d not in 1..1000", rp.MaxReceiveCount)
		}
		q.dlq = dlq
		cp := *rp
		q.cfg.Redrive = &cp
	}
	f.byURL[q.url] = q
	f.byARN[q.arn] = q
	return q.url, nil
}

// ARN returns the ARN of the queue at url, or "" if there is none.
func (f *SQS) ARN(url string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q, ok := f.byURL[url]; ok {
		return q.arn
	}
	return ""
}

// Region returns the region used in URLs and ARNs.
func (f *SQS) Region() string { return f.region }

// Stats returns the counters of the queue at url.
func (f *SQS) Stats(url string) QueueStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q, ok := f.byURL[url]; ok {
		f.advanceTasks(f.now())
		return q.stats
	}
	return QueueStats{}
}

// Inspect returns the stored messages of the queue at url in enqueue order
// (after applying retention), without receiving them.
func (f *SQS) Inspect(url string) ([]MessageState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, ok := f.byURL[url]
	if !ok {
		return nil, noQueue(url)
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
			ReceiveCount:      m.receiveCount,
			InFlight:          m.inFlight(now),
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

// check runs the context and fault checks of an operation. Callers hold f.mu.
func (f *SQS) check(ctx context.Context, op, target string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.fault != nil {
		return f.fault(op, target)
	}
	return nil
}

// lookup returns the queue for url after the context and fault checks.
// Callers hold f.mu.
func (f *SQS) lookup(ctx context.Context, op string, url *string) (*fakeQueue, error) {
	if err := f.check(ctx, op, aws.ToString(url)); err != nil {
		return nil, err
	}
	q, ok := f.byURL[aws.ToString(url)]
	if !ok {
		return nil, noQueue(aws.ToString(url))
	}
	f.advanceTasks(f.now())
	return q, nil
}

// SendMessage sends one message.
func (f *SQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.lookup(ctx, "SendMessage", in.QueueUrl)
	if err != nil {
		return nil, opError("SendMessage", err)
	}
	m, err := f.send(q, types.SendMessageBatchRequestEntry{
		MessageBody: in.MessageBody, DelaySeconds: in.DelaySeconds, MessageAttributes: in.MessageAttributes,
		MessageGroupId: in.MessageGroupId, MessageDeduplicationId: in.MessageDeduplicationId,
	})
	if err != nil {
		return nil, opError("SendMessage", err)
	}
	return &sqs.SendMessageOutput{MessageId: &m.id, MD5OfMessageBody: &m.md5,
		MD5OfMessageAttributes: md5OfAttributes(m.attrs), SequenceNumber: nonEmpty(m.seqNumber)}, nil
}

// send enqueues one message on q and returns it (for a deduplicated FIFO
// send, the message it duplicates, with the id and sequence number it was
// given). Callers hold f.mu.
func (f *SQS) send(q *fakeQueue, in types.SendMessageBatchRequestEntry) (*message, error) {
	body := aws.ToString(in.MessageBody)
	if err := validateBody(body); err != nil {
		return nil, err
	}
	size, err := validateAttributes(in.MessageAttributes)
	if err != nil {
		return nil, err
	}
	if size += len(body); size > q.cfg.MaxMessageSize {
		return nil, invalid("message of %d bytes exceeds the queue's %d", size, q.cfg.MaxMessageSize)
	}
	delay := time.Duration(in.DelaySeconds) * time.Second
	if delay < 0 || delay > maxDelay {
		return nil, invalid("DelaySeconds %s not in 0..15m", delay)
	}
	now := f.now()
	groupID, dedupID := aws.ToString(in.MessageGroupId), aws.ToString(in.MessageDeduplicationId)
	if q.fifo {
		if groupID == "" {
			return nil, apiError("MissingParameter", "a FIFO queue requires MessageGroupId")
		}
		if err := validateFIFOID("MessageGroupId", groupID); err != nil {
			return nil, err
		}
		if delay > 0 {
			return nil, invalid("per-message DelaySeconds is not supported on FIFO queues")
		}
		if dedupID == "" {
			if !q.cfg.ContentBasedDeduplication {
				return nil, invalid("the queue has no content-based deduplication and no MessageDeduplicationId was given")
			}
			sum := sha256.Sum256([]byte(body))
			dedupID = hex.EncodeToString(sum[:])
		} else if err := validateFIFOID("MessageDeduplicationId", dedupID); err != nil {
			return nil, err
		}
		f.pruneDedup(q, now)
		if e, ok := q.dedup[dedupID]; ok {
			return &message{id: e.id, seqNumber: e.seqNumber, md5: md5Hex(body), attrs: in.MessageAttributes}, nil
		}
	} else if dedupID != "" {
		return nil, invalid("MessageDeduplicationId is only valid for FIFO queues")
	} else if groupID != "" {
		// Standard queues accept a group id (fair queues) without ordering.
		if err := validateFIFOID("MessageGroupId", groupID); err != nil {
			return nil, err
		}
	}
	if delay == 0 {
		delay = q.cfg.Delay
	}
	m := &message{
		q:         q,
		id:        uuid.NewString(),
		body:      body,
		md5:       md5Hex(body),
		attrs:     copyAttrs(in.MessageAttributes),
		groupID:   groupID,
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
	return m, nil
}

func (f *SQS) pruneDedup(q *fakeQueue, now time.Time) {
	for k, e := range q.dedup {
		if now.Sub(e.at) >= DeduplicationWindow {
			delete(q.dedup, k)
		}
	}
}

// expire drops messages past the retention period. Callers hold f.mu.
func (f *SQS) expire(q *fakeQueue, now time.Time) {
	kept := q.msgs[:0]
	for _, m := range q.msgs {
		if now.Sub(m.sentAt) >= q.cfg.RetentionPeriod {
			m.deleted = true
			continue
		}
		kept = append(kept, m)
	}
	clear(q.msgs[len(kept):])
	q.msgs = kept
}

// ReceiveMessage receives up to MaxNumberOfMessages messages (zero means
// one). A VisibilityTimeout of zero keeps the queue's (the SDK cannot send an
// explicit zero). Long polling returns at once. As in SQS, a message carries
// only the system attributes named in MessageSystemAttributeNames and the
// message attributes named in MessageAttributeNames ("All" for every one).
func (f *SQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.lookup(ctx, "ReceiveMessage", in.QueueUrl)
	if err != nil {
		return nil, opError("ReceiveMessage", err)
	}
	max := int(cmp.Or(in.MaxNumberOfMessages, 1))
	vt := time.Duration(in.VisibilityTimeout) * time.Second
	switch {
	case max < 1 || max > 10:
		err = invalid("MaxNumberOfMessages %d not in 1..10", in.MaxNumberOfMessages)
	case vt < 0 || vt > maxVisibility:
		err = invalid("VisibilityTimeout %s not in 0..12h", vt)
	case in.WaitTimeSeconds < 0 || in.WaitTimeSeconds > 20:
		err = invalid("WaitTimeSeconds %d not in 0..20", in.WaitTimeSeconds)
	}
	if err != nil {
		return nil, opError("ReceiveMessage", err)
	}
	vt = cmp.Or(vt, q.cfg.VisibilityTimeout)
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
	out := &sqs.ReceiveMessageOutput{}
	var moved []*message
	for _, m := range q.msgs {
		if len(out.Messages) == max {
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
		f.handles[m.receipt] = m
		q.stats.Received++
		out.Messages = append(out.Messages, m.toMessage(in))
	}
	if len(moved) > 0 {
		f.moveToDLQ(q, moved, now)
	}
	return out, nil
}

// moveToDLQ moves msgs from q to its DLQ as a redrive policy does: same
// message id, body, attributes and receive count; the DLQ's own sequence
// (and, FIFO, the message id as deduplication id).
func (f *SQS) moveToDLQ(q *fakeQueue, msgs []*message, now time.Time) {
	for _, m := range msgs {
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
		q.stats.MovedToDLQ++
		q.remove(m)
	}
}

// remove marks m deleted and takes it out of q.
func (q *fakeQueue) remove(m *message) {
	m.deleted = true
	if i := slices.Index(q.msgs, m); i >= 0 {
		q.msgs = slices.Delete(q.msgs, i, i+1)
	}
}

// toMessage is m as ReceiveMessage returns it, with the attributes in asks for.
func (m *message) toMessage(in *sqs.ReceiveMessageInput) types.Message {
	system := map[types.MessageSystemAttributeName]string{
		types.MessageSystemAttributeNameApproximateReceiveCount:          strconv.Itoa(m.receiveCount),
		types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp: strconv.FormatInt(m.firstReceive.UnixMilli(), 10),
		types.MessageSystemAttributeNameSentTimestamp:                    strconv.FormatInt(m.sentAt.UnixMilli(), 10),
		types.MessageSystemAttributeNameSenderId:                         senderID,
		types.MessageSystemAttributeNameMessageGroupId:                   m.groupID,
		types.MessageSystemAttributeNameMessageDeduplicationId:           m.dedupID,
		types.MessageSystemAttributeNameSequenceNumber:                   m.seqNumber,
		types.MessageSystemAttributeNameDeadLetterQueueSourceArn:         m.dlqSource,
	}
	wanted := in.MessageSystemAttributeNames
	for _, n := range in.AttributeNames { // the deprecated spelling of the same request
		wanted = append(wanted, types.MessageSystemAttributeName(n))
	}
	all := slices.Contains(wanted, types.MessageSystemAttributeNameAll)
	attrs := map[string]string{}
	for n, v := range system {
		if v != "" && (all || slices.Contains(wanted, n)) {
			attrs[string(n)] = v
		}
	}
	msg := types.Message{MessageId: aws.String(m.id), ReceiptHandle: aws.String(m.receipt), Body: aws.String(m.body),
		MD5OfBody: aws.String(m.md5)}
	if len(attrs) > 0 {
		msg.Attributes = attrs
	}
	for n, v := range m.attrs {
		if slices.Contains(in.MessageAttributeNames, "All") || slices.Contains(in.MessageAttributeNames, ".*") || slices.Contains(in.MessageAttributeNames, n) {
			if msg.MessageAttributes == nil {
				msg.MessageAttributes = map[string]types.MessageAttributeValue{}
			}
			msg.MessageAttributes[n] = copyAttr(v)
		}
	}
	msg.MD5OfMessageAttributes = md5OfAttributes(msg.MessageAttributes)
	return msg
}

// DeleteMessage deletes (acknowledges) a received message.
func (f *SQS) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.lookup(ctx, "DeleteMessage", in.QueueUrl)
	if err == nil {
		err = f.delete(q, aws.ToString(in.ReceiptHandle))
	}
	if err != nil {
		return nil, opError("DeleteMessage", err)
	}
	return &sqs.DeleteMessageOutput{}, nil
}

// delete deletes the message of receiptHandle from q. Callers hold f.mu.
func (f *SQS) delete(q *fakeQueue, receiptHandle string) error {
	m, ok := f.handles[receiptHandle]
	if !ok || m.q != q {
		return badHandle("unknown receipt handle")
	}
	if m.deleted {
		return nil // deleting twice succeeds, as in SQS
	}
	if m.receipt != receiptHandle {
		if q.fifo {
			return badHandle("the message was received again since this handle was issued")
		}
		q.stats.StaleDeletes++
		return nil
	}
	if q.fifo && !m.inFlight(f.now()) {
		return badHandle("the visibility timeout of this handle expired")
	}
	q.remove(m)
	q.stats.Deleted++
	return nil
}

// ChangeMessageVisibility changes the visibility timeout of an in-flight
// message, counted from now; zero makes it visible again at once.
func (f *SQS) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.lookup(ctx, "ChangeMessageVisibility", in.QueueUrl)
	if err == nil {
		err = f.changeVisibility(q, aws.ToString(in.ReceiptHandle), in.VisibilityTimeout)
	}
	if err != nil {
		return nil, opError("ChangeMessageVisibility", err)
	}
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// changeVisibility is ChangeMessageVisibility on q. Callers hold f.mu.
func (f *SQS) changeVisibility(q *fakeQueue, receiptHandle string, seconds int32) error {
	timeout := time.Duration(seconds) * time.Second
	if timeout < 0 || timeout > maxVisibility {
		return invalid("visibility timeout %s not in 0..12h", timeout)
	}
	m, ok := f.handles[receiptHandle]
	if !ok || m.q != q {
		return badHandle("unknown receipt handle")
	}
	if m.receipt != receiptHandle {
		return badHandle("the message was received again since this handle was issued")
	}
	now := f.now()
	if m.deleted || !m.inFlight(now) {
		return &types.MessageNotInflight{Message: aws.String("the message is not in flight")}
	}
	m.visibleAt = now.Add(timeout)
	return nil
}

// GetQueueAttributes reads queue attributes; no names means "All".
func (f *SQS) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.lookup(ctx, "GetQueueAttributes", in.QueueUrl)
	if err != nil {
		return nil, opError("GetQueueAttributes", err)
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
	all := map[types.QueueAttributeName]string{
		types.QueueAttributeNameApproximateNumberOfMessages:           strconv.Itoa(visible),
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible: strconv.Itoa(inflight),
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed:    strconv.Itoa(delayed),
		types.QueueAttributeNameVisibilityTimeout:                     strconv.Itoa(int(q.cfg.VisibilityTimeout / time.Second)),
		types.QueueAttributeNameQueueArn:                              q.arn,
		types.QueueAttributeNameMessageRetentionPeriod:                strconv.Itoa(int(q.cfg.RetentionPeriod / time.Second)),
		types.QueueAttributeNameDelaySeconds:                          strconv.Itoa(int(q.cfg.Delay / time.Second)),
		types.QueueAttributeNameMaximumMessageSize:                    strconv.Itoa(q.cfg.MaxMessageSize),
	}
	if q.fifo {
		all[types.QueueAttributeNameFifoQueue] = "true"
		all[types.QueueAttributeNameContentBasedDeduplication] = strconv.FormatBool(q.cfg.ContentBasedDeduplication)
	}
	if rp := q.cfg.Redrive; rp != nil {
		b, _ := json.Marshal(map[string]any{"deadLetterTargetArn": rp.DeadLetterTargetARN, "maxReceiveCount": rp.MaxReceiveCount})
		all[types.QueueAttributeNameRedrivePolicy] = string(b)
	}
	names := in.AttributeNames
	if len(names) == 0 || slices.Contains(names, types.QueueAttributeNameAll) {
		names = slices.Collect(maps.Keys(all))
	}
	out := map[string]string{}
	for _, n := range names {
		v, ok := all[n]
		if !ok {
			if slices.Contains(types.QueueAttributeName("").Values(), n) {
				continue // a valid name the fake has no value for
			}
			return nil, opError("GetQueueAttributes", apiError("InvalidAttributeName", "unknown attribute %q", n))
		}
		out[string(n)] = v
	}
	return &sqs.GetQueueAttributesOutput{Attributes: out}, nil
}

// validateBody applies SQS's rules: non-empty and only the allowed Unicode
// characters (#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF).
func validateBody(b string) error {
	if b == "" {
		return invalid("the message body must not be empty")
	}
	if !utf8.ValidString(b) {
		return &types.InvalidMessageContents{Message: aws.String("the message body is not valid UTF-8")}
	}
	for i, r := range b {
		if !allowedRune(r) {
			return &types.InvalidMessageContents{Message: aws.String(fmt.Sprintf("character %U at byte %d is not allowed by SQS", r, i))}
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
func validateAttributes(attrs map[string]types.MessageAttributeValue) (int, error) {
	if len(attrs) > MaxMessageAttributes {
		return 0, invalid("%d message attributes, SQS allows %d", len(attrs), MaxMessageAttributes)
	}
	for name, a := range attrs {
		if err := validateAttributeName(name); err != nil {
			return 0, err
		}
		value := aws.ToString(a.StringValue)
		base, _, _ := strings.Cut(aws.ToString(a.DataType), ".")
		switch base {
		case "String":
			if value == "" {
				return 0, invalid("attribute %q has an empty value", name)
			}
			if !utf8.ValidString(value) {
				return 0, invalid("attribute %q is not valid UTF-8", name)
			}
			for _, r := range value {
				if !allowedRune(r) {
					return 0, invalid("attribute %q has character %U", name, r)
				}
			}
		case "Number":
			if _, ok := new(big.Float).SetString(value); !ok {
				return 0, invalid("attribute %q: %q is not a number", name, value)
			}
		case "Binary":
			if len(a.BinaryValue) == 0 {
				return 0, invalid("attribute %q has an empty value", name)
			}
		default:
			return 0, invalid("attribute %q has data type %q (want String, Number or Binary)", name, aws.ToString(a.DataType))
		}
	}
	return attributesSize(attrs), nil
}

// attributesSize is what attrs add to a message's size (name, type and
// value of each), without validating them.
func attributesSize(attrs map[string]types.MessageAttributeValue) int {
	n := 0
	for name, a := range attrs {
		n += len(name) + len(aws.ToString(a.DataType)) + len(aws.ToString(a.StringValue)) + len(a.BinaryValue)
	}
	return n
}

// The characters SQS allows: in an attribute name (plus the rules on
// periods and reserved prefixes), in a FIFO queue's MessageGroupId and
// MessageDeduplicationId (alphanumerics and punctuation) and in a batch
// entry's Id.
var (
	attributeName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,256}$`)
	fifoID        = regexp.MustCompile(`^[\x21-\x7E]{1,128}$`)
	batchEntryID  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)
)

func validateAttributeName(n string) error {
	lower := strings.ToLower(n)
	switch {
	case !attributeName.MatchString(n):
		return invalid("attribute name %q must be 1..256 letters, digits, '_', '-' or '.'", n)
	case strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon."):
		return invalid("attribute name %q uses a reserved prefix", n)
	case n[0] == '.' || n[len(n)-1] == '.' || strings.Contains(n, ".."):
		return invalid("attribute name %q must not start or end with a period or contain two in a row", n)
	}
	return nil
}

// validateFIFOID checks MessageGroupId / MessageDeduplicationId.
func validateFIFOID(field, v string) error {
	if !fifoID.MatchString(v) {
		return invalid("%s must be 1..128 alphanumerics and punctuation", field)
	}
	return nil
}

func copyAttr(v types.MessageAttributeValue) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: slices.Clone(v.BinaryValue)}
}

func copyAttrs(in map[string]types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]types.MessageAttributeValue, len(in))
	for k, v := range in {
		out[k] = copyAttr(v)
	}
	return out
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// md5OfAttributes is SQS's MD5OfMessageAttributes: over the attributes
// sorted by name, each as length-prefixed name, length-prefixed data type,
// a transport byte (1 string or number, 2 binary) and the length-prefixed
// value; nil when there are none.
func md5OfAttributes(attrs map[string]types.MessageAttributeValue) *string {
	if len(attrs) == 0 {
		return nil
	}
	h := md5.New()
	field := func(b []byte) {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(b))))
		h.Write(b)
	}
	for _, n := range slices.Sorted(maps.Keys(attrs)) {
		a := attrs[n]
		field([]byte(n))
		field([]byte(aws.ToString(a.DataType)))
		if strings.HasPrefix(aws.ToString(a.DataType), "Binary") {
			h.Write([]byte{2})
			field(a.BinaryValue)
		} else {
			h.Write([]byte{1})
			field([]byte(aws.ToString(a.StringValue)))
		}
	}
	return aws.String(hex.EncodeToString(h.Sum(nil)))
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
