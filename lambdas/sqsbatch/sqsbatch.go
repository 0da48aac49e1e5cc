// Package sqsbatch is the batch-consumer library every SQS consumer Lambda of
// the project uses: it turns an events.SQSEvent into an
// events.SQSEventResponse with partial batch failures
// (ReportBatchItemFailures), so a consumer writes only its record handler.
//
// A nil error acknowledges the record; a transient one (the default) lists
// it as a failure; poison and permanent ones (lambdas/failure) send it to the DLQ at once with
// the reason and the consumer's mf-* attributes, then acknowledge it (a
// failed send makes it a failure instead). Before the handler, an envelope
// check makes malformed JSON, a missing version or required key, an
// unknown major version and what the consumer's Content check refuses
// poison. FIFO groups run in order and stop at their
// first failure; parallelism is bounded; panics are transient; no record
// starts inside DeadlineMargin; duplicates in a batch run once. Reasoning:
// docs/design.md#sqs-batches.
package sqsbatch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// Defaults applied by New.
const (
	DefaultConcurrency    = 8
	DefaultDeadlineMargin = 2 * time.Second
	DefaultVersionKey     = "version"
)

// Handler processes one record. Returning nil acknowledges it; see the
// package documentation for how errors are classified.
type Handler interface {
	HandleRecord(ctx context.Context, rec *Record) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, rec *Record) error

// HandleRecord implements Handler.
func (f HandlerFunc) HandleRecord(ctx context.Context, rec *Record) error { return f(ctx, rec) }

// Config configures a Processor. Handler is required; the zero value of every
// other field is a safe default.
type Config struct {
	// Handler processes each record.
	Handler Handler
	// ConsumerVersion identifies the deployed consumer (e.g. a git sha); it is
	// written to dead-lettered messages so the runbook can tell which build
	// rejected them. Default: the running binary's build id ("unknown" if
	// it cannot be read).
	ConsumerVersion string
	// DLQ sends poison and permanent failures to the DLQ of the queue each
	// came from (DLQRoutes, by its event source ARN; lambdaapi.EnvDLQRoutes).
	// Without DLQ or a route those records are reported as batch item
	// failures instead, leaving them to the queue's redrive policy (slower,
	// still safe). A DLQ URL ending in ".fifo" gets MessageGroupId and a
	// deduplication id.
	DLQ       Sender
	DLQRoutes lambdaapi.DLQRoutes
	// Visibility, when set, returns a transiently failed record after
	// retry.HalfJitter of its wait (ChangeMessageVisibility on the source
	// queue): its RetryAfter, else ReturnAfter; never sooner than a
	// Retry-After the dependency sent (a retry.StatusError in the chain).
	// A FIFO group's later records wait as long, so the group comes back
	// after the jittered wait.
	Visibility VisibilityChanger
	// ReturnAfter is the source queue's visibility timeout, the wait of a
	// failure without one of its own (0: the queue returns it).
	ReturnAfter time.Duration
	// Rand draws the jitter (default: math/rand/v2's global source).
	Rand retry.Rand
	// Concurrency bounds the records (standard) or groups (FIFO) handled at
	// once. Default 8. Keep it consistent with the downstream limits (Aurora's
	// ~200 connections ÷ MaximumConcurrency of the event source mapping).
	Concurrency int
	// Envelope are the body rules checked before the handler: a body that
	// breaks one is poison.
	Envelope EnvelopeRules
	// IdempotencyKey, when set, derives the domain idempotency key
	// ("cobro:<pedido_id>") before the handler runs: it is logged, available as
	// Record.IdempotencyKey, and records sharing it are serialised. An error
	// makes the record poison.
	IdempotencyKey func(rec *Record) (string, error)
	// DeadlineMargin is the time kept free before the Lambda deadline. Default 2 s.
	DeadlineMargin time.Duration
	// Logger receives the structured logs. Default: JSON to stdout.
	Logger *slog.Logger
	// Now is the clock used to decide whether a record may still start
	// before the deadline and to time records. Default time.Now. The hard
	// stop (DeadlineMargin/4 before the deadline) is a wall-clock timer.
	Now func() time.Time
}

// Processor processes SQS batches. It is safe for concurrent use; create it
// once per Lambda sandbox (in main) and pass Process to lambda.Start.
type Processor struct {
	cfg      Config
	envelope EnvelopeRules // cfg's, with their defaults
	log      *slog.Logger
}

// New validates cfg, applies defaults and returns a Processor.
func New(cfg Config) (*Processor, error) {
	if cfg.Handler == nil {
		return nil, errors.New("sqsbatch: Config.Handler is required")
	}
	if cfg.Concurrency < 0 {
		return nil, fmt.Errorf("sqsbatch: Config.Concurrency %d is negative", cfg.Concurrency)
	}
	cfg.Concurrency = cmp.Or(cfg.Concurrency, DefaultConcurrency)
	if cfg.DeadlineMargin < 0 {
		return nil, fmt.Errorf("sqsbatch: Config.DeadlineMargin %s is negative", cfg.DeadlineMargin)
	}
	cfg.DeadlineMargin = cmp.Or(cfg.DeadlineMargin, DefaultDeadlineMargin)
	envelope := cfg.Envelope.withDefaults()
	if strings.TrimSpace(cfg.ConsumerVersion) == "" {
		cfg.ConsumerVersion = "unknown"
		if id, err := buildID(); err == nil {
			cfg.ConsumerVersion = id
		}
	}
	for _, k := range append([]string{envelope.VersionKey}, envelope.RequiredKeys...) {
		if k == "" || strings.HasPrefix(k, ".") || strings.HasSuffix(k, ".") || strings.Contains(k, "..") {
			return nil, fmt.Errorf("sqsbatch: invalid key path %q", k)
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cmp.Or(cfg.Logger, slog.New(slog.NewJSONHandler(os.Stdout, nil)))
	return &Processor{cfg: cfg, envelope: envelope, log: log}, nil
}

// Record is one SQS record as the handler sees it.
type Record struct {
	// Message is the record exactly as Lambda delivered it.
	Message events.SQSMessage
	// ReceiveCount is ApproximateReceiveCount (0 if absent).
	ReceiveCount int
	// GroupID is the FIFO MessageGroupId ("" on standard queues).
	GroupID string
	// FIFO reports whether the record comes from a FIFO queue.
	FIFO bool
	// Version is the major envelope version (0 when the check is disabled).
	Version int
	// Logger carries the record's identifiers; use it for handler logs.
	Logger *slog.Logger

	idemKey string // set before the handler runs
}

// Body returns the message body.
func (r *Record) Body() string { return r.Message.Body }

// Decode unmarshals the JSON body into v, ignoring unknown fields. A failure
// is returned as a poison error (the body will never decode).
func (r *Record) Decode(v any) error {
	return decodeBody(r.Message.Body, v)
}

func decodeBody(body string, v any) error {
	if err := json.Unmarshal([]byte(body), v); err != nil {
		return failure.Poisonf("body does not match the expected schema: %w", err)
	}
	return nil
}

// IdempotencyKey returns the key Config.IdempotencyKey derived ("" without one).
func (r *Record) IdempotencyKey() string { return r.idemKey }

// Outcome is what happened to a record (the "outcome" log field).
type Outcome string

// Outcomes.
const (
	OutcomeProcessed        Outcome = "processed"
	OutcomeRetry            Outcome = "retry"              // transient: batch item failure
	OutcomeDeadLettered     Outcome = "dead_lettered"      // sent to the DLQ, acknowledged
	OutcomeDeadLetterFailed Outcome = "dead_letter_failed" // DLQ send failed: batch item failure
	OutcomeGroupBlocked     Outcome = "group_blocked"      // FIFO: earlier record of the group failed
	OutcomeDeadline         Outcome = "deadline"           // not started or abandoned at the deadline
	OutcomeDuplicate        Outcome = "duplicate_in_batch" // same message id earlier in the batch
)

// failed reports whether the outcome leaves the record in batchItemFailures.
func (o Outcome) failed() bool {
	return o != OutcomeProcessed && o != OutcomeDeadLettered
}

// item is a record's slot in one batch.
type item struct {
	idx     int
	rec     *Record
	preErr  error // envelope / key failure found before the handler
	dupOf   *item
	outcome Outcome // guarded by batch.mu
	done    bool    // guarded by batch.mu
	err     error
	class   failure.Kind
	started time.Time
	// dlqMessageID is the id the DLQ gave the copy (logged for the runbook).
	// Guarded by batch.mu.
	dlqMessageID string
	// deadLettering is set while a send to the DLQ that began before the
	// batch was sealed is in flight. Guarded by batch.mu.
	deadLettering bool
}

type batch struct {
	mu     sync.Mutex
	sealed bool
	// sends counts the DLQ sends that began before the seal; the seal waits
	// for them (their context ends at the hard stop), so a record is never
	// both dead-lettered and reported for retry.
	sends sync.WaitGroup
}

// beginDeadLetter reserves it for a DLQ send, unless the batch was already
// answered. The caller must call b.sends.Done after recording the outcome.
func (b *batch) beginDeadLetter(it *item) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sealed || it.done {
		return false
	}
	it.deadLettering = true
	b.sends.Add(1)
	return true
}

// finish stores the outcome of it unless the batch was already answered
// (a DLQ send that began before the seal is still answered: the seal waits
// for it).
func (b *batch) finish(it *item, o Outcome, err error, class failure.Kind, dlqID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if it.done || (b.sealed && !it.deadLettering) {
		return false
	}
	it.done, it.outcome, it.err, it.class, it.dlqMessageID = true, o, err, class, dlqID
	it.deadLettering = false
	return true
}

func (b *batch) isSealed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sealed
}

// Process handles one batch. Its signature is the one lambda.Start expects.
// The response lists every record that must come back (an empty list, never
// null, when all succeeded). The error is always nil: a batch whose every
// record failed comes back all the same, and an invocation error would
// fire the functions' Errors alarms for a routine transient failure.
func (p *Processor) Process(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	start := p.cfg.Now()
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	if len(ev.Records) == 0 {
		p.log.LogAttrs(ctx, slog.LevelDebug, "empty batch")
		return resp, nil
	}

	items := make([]*item, len(ev.Records))
	first := make(map[string]*item, len(ev.Records))
	var lanes [][]*item
	laneOf := map[string]int{}
	for i, msg := range ev.Records {
		it := &item{idx: i, rec: p.newRecord(msg)}
		items[i] = it
		if prev, ok := first[msg.MessageId]; ok && msg.MessageId != "" {
			it.dupOf = prev
			continue
		}
		first[msg.MessageId] = it
		p.prepare(it)
		key := "m:" + strconv.Itoa(i)
		switch {
		case it.rec.FIFO:
			key = "g:" + it.rec.GroupID
		case it.rec.IdempotencyKey() != "":
			key = "k:" + it.rec.IdempotencyKey()
		}
		if n, ok := laneOf[key]; ok {
			lanes[n] = append(lanes[n], it)
		} else {
			laneOf[key] = len(lanes)
			lanes = append(lanes, []*item{it})
		}
	}

	deadline, hasDeadline := ctx.Deadline()
	b := &batch{}
	work := make(chan []*item)
	var wg sync.WaitGroup
	for range min(p.cfg.Concurrency, len(lanes)) {
		wg.Go(func() {
			for lane := range work {
				p.runLane(ctx, b, lane, deadline, hasDeadline)
			}
		})
	}
	done := make(chan struct{})
	go func() {
		for _, l := range lanes {
			work <- l
		}
		close(work)
		wg.Wait()
		close(done)
	}()
	var hardStop <-chan time.Time
	if hasDeadline {
		t := time.NewTimer(time.Until(p.hardStop(deadline)))
		defer t.Stop()
		hardStop = t.C
	}
	select {
	case <-done:
	case <-hardStop:
		p.log.LogAttrs(ctx, slog.LevelWarn, "deadline reached with records still running; answering without them",
			slog.Duration("margin", p.cfg.DeadlineMargin))
	}
	b.mu.Lock()
	b.sealed = true
	b.mu.Unlock()
	// DLQ sends already in flight end by the hard stop (their context's
	// deadline): wait for their verdict rather than guess it.
	b.sends.Wait()
	b.mu.Lock()
	for _, it := range items {
		if it.dupOf == nil && !it.done {
			it.done, it.outcome, it.err = true, OutcomeDeadline, ErrDeadline
			if !it.started.IsZero() {
				it.err = fmt.Errorf("%w: still running after %s", ErrDeadline, p.cfg.Now().Sub(it.started).Round(time.Millisecond))
			}
			p.logRecord(ctx, it)
		}
	}
	b.mu.Unlock()

	counts := map[Outcome]int{}
	failedIDs := map[string]bool{}
	for _, it := range items {
		outcome := it.outcome
		if it.dupOf != nil {
			outcome = it.dupOf.outcome
			it.outcome, it.err = OutcomeDuplicate, it.dupOf.err
			p.logDuplicate(ctx, it, outcome)
		}
		counts[it.outcome]++
		if outcome.failed() {
			id := it.rec.Message.MessageId
			if !failedIDs[id] {
				failedIDs[id] = true
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
			}
		}
	}
	attrs := []slog.Attr{
		slog.Int("records", len(items)),
		slog.Int("batch_item_failures", len(resp.BatchItemFailures)),
		slog.Int64("duration_ms", p.cfg.Now().Sub(start).Milliseconds()),
	}
	for _, o := range slices.Sorted(maps.Keys(counts)) {
		attrs = append(attrs, slog.Int(string(o), counts[o]))
	}
	p.log.LogAttrs(ctx, slog.LevelInfo, "batch done", attrs...)
	return resp, nil
}

func (p *Processor) newRecord(msg events.SQSMessage) *Record {
	rc, _ := strconv.Atoi(msg.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	fifo := strings.HasSuffix(msg.EventSourceARN, ".fifo")
	rec := &Record{Message: msg, ReceiveCount: rc, FIFO: fifo}
	attrs := []any{slog.String("message_id", msg.MessageId), slog.Int("receive_count", rc)}
	if fifo {
		rec.GroupID = msg.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		attrs = append(attrs, slog.String("group_id", rec.GroupID))
	}
	rec.Logger = p.log.With(attrs...)
	return rec
}

// prepare runs the checks that need no handler: envelope and key derivation.
func (p *Processor) prepare(it *item) {
	v, err := p.checkEnvelope(it.rec.Message.Body)
	it.rec.Version = v
	if err != nil {
		it.preErr = err
		return
	}
	if p.cfg.IdempotencyKey != nil {
		key, err := p.deriveKey(it.rec)
		switch {
		case errors.Is(err, ErrPanic):
			it.preErr = err // transient, like a handler panic
		case err != nil:
			var ce *failure.Error
			if errors.As(err, &ce) && ce.Kind == failure.KindPoison && ce.Err != nil {
				err = ce.Err // avoid "poison: ...: poison: ..."
			}
			it.preErr = failure.Poisonf("cannot derive the idempotency key: %w", err)
		case key == "":
			it.preErr = failure.Poisonf("cannot derive the idempotency key: empty key")
		default:
			it.rec.idemKey = key
		}
	}
}

// deriveKey runs Config.IdempotencyKey, recovering a panic.
func (p *Processor) deriveKey(rec *Record) (key string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: IdempotencyKey: %v", ErrPanic, r)
			rec.Logger.Error("IdempotencyKey panic recovered", slog.String("panic", fmt.Sprint(r)), slog.String("stack", string(debug.Stack())))
		}
	}()
	return p.cfg.IdempotencyKey(rec)
}

// runLane processes a lane's records in order. FIFO lanes stop at the first
// failure and report the rest of the group as failed, returning after the
// failure's wait (a group is held while any of its records is in flight).
func (p *Processor) runLane(ctx context.Context, b *batch, lane []*item, deadline time.Time, hasDeadline bool) {
	blocked := false
	var wait time.Duration
	for _, it := range lane {
		switch {
		case b.isSealed():
			return // answered already: the remaining items are reported as deadline failures
		case blocked:
			p.record(ctx, b, it, OutcomeGroupBlocked, p.returnAfter(ctx, it.rec, ErrGroupBlocked, wait), failure.KindTransient)
			continue
		case hasDeadline && deadline.Sub(p.cfg.Now()) < p.cfg.DeadlineMargin:
			p.record(ctx, b, it, OutcomeDeadline, ErrDeadline, failure.KindTransient)
		default:
			wait = p.processOne(ctx, b, it, deadline, hasDeadline)
		}
		b.mu.Lock()
		failed := it.done && it.outcome.failed()
		b.mu.Unlock()
		if it.rec.FIFO && failed {
			blocked = true
		}
	}
}

func (p *Processor) record(ctx context.Context, b *batch, it *item, o Outcome, err error, class failure.Kind) {
	p.recordDLQ(ctx, b, it, o, err, class, "")
}

func (p *Processor) recordDLQ(ctx context.Context, b *batch, it *item, o Outcome, err error, class failure.Kind, dlqID string) {
	if b.finish(it, o, err, class, dlqID) {
		p.logRecord(ctx, it)
	} else {
		it.rec.Logger.LogAttrs(ctx, slog.LevelWarn, "result after the batch was answered; the record was reported as failed and will come back",
			slog.String("late_outcome", string(o)), errAttr(err))
	}
}

// processOne runs it and returns the wait after which it comes back when
// it failed transiently (0 otherwise).
func (p *Processor) processOne(ctx context.Context, b *batch, it *item, deadline time.Time, hasDeadline bool) time.Duration {
	b.mu.Lock()
	it.started = p.cfg.Now()
	b.mu.Unlock()
	err := it.preErr
	if err == nil {
		hctx := ctx
		if hasDeadline {
			var cancel context.CancelFunc
			hctx, cancel = context.WithDeadline(ctx, deadline.Add(-p.cfg.DeadlineMargin/2))
			defer cancel()
		}
		err = p.call(hctx, it.rec)
	}
	if err == nil {
		p.record(ctx, b, it, OutcomeProcessed, nil, failure.KindTransient)
		return 0
	}
	class := failure.KindOf(err)
	if class == failure.KindTransient {
		wait := p.cfg.ReturnAfter
		var ce *failure.Error
		if errors.As(err, &ce) && ce.After > 0 {
			wait = ce.After
		}
		var se *retry.StatusError
		if wait = retry.HalfJitter(wait, p.cfg.Rand); errors.As(err, &se) {
			wait = max(wait, se.RetryAfter)
		}
		p.record(ctx, b, it, OutcomeRetry, p.returnAfter(ctx, it.rec, err, wait), class)
		return wait
	}
	if !b.beginDeadLetter(it) {
		return 0 // too late to send: the record was reported as failed and will come back
	}
	sctx := ctx
	if hasDeadline {
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadline(ctx, p.hardStop(deadline))
		defer cancel()
	}
	dlqID, derr := p.deadLetter(sctx, it.rec, class, err)
	if derr != nil {
		p.record(ctx, b, it, OutcomeDeadLetterFailed, fmt.Errorf("%w; dead-letter send failed: %w", err, derr), class)
	} else {
		p.recordDLQ(ctx, b, it, OutcomeDeadLettered, err, class, dlqID)
	}
	b.sends.Done()
	return 0
}

// hardStop is when the batch is answered whatever is still running: a
// quarter of the margin before the Lambda deadline.
func (p *Processor) hardStop(deadline time.Time) time.Time {
	return deadline.Add(-p.cfg.DeadlineMargin / 4)
}

// call runs the handler, turning a panic into an ErrPanic error.
func (p *Processor) call(ctx context.Context, rec *Record) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrPanic, r)
			rec.Logger.LogAttrs(ctx, slog.LevelError, "handler panic recovered",
				slog.String("panic", fmt.Sprint(r)), slog.String("stack", string(debug.Stack())))
		}
	}()
	return p.cfg.Handler.HandleRecord(ctx, rec)
}

// returnAfter makes rec, failed with err, come back after wait
// (ChangeMessageVisibility; nothing without Config.Visibility or a wait),
// and returns err, noting a change that failed.
func (p *Processor) returnAfter(ctx context.Context, rec *Record, err error, wait time.Duration) error {
	if wait <= 0 || p.cfg.Visibility == nil {
		return err
	}
	url, verr := QueueURL(rec.Message.EventSourceARN)
	if verr == nil && wait > 12*time.Hour {
		verr = fmt.Errorf("sqsbatch: visibility timeout %s not in 0..12h", wait)
	}
	if verr == nil {
		// Whole seconds, rounded up: a requested delay is never shortened.
		_, verr = p.cfg.Visibility.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url),
			ReceiptHandle: aws.String(rec.Message.ReceiptHandle), VisibilityTimeout: int32(math.Ceil(wait.Seconds()))})
	}
	if verr != nil {
		return fmt.Errorf("%w (and ChangeMessageVisibility(%s) failed: %v)", err, wait, verr)
	}
	return err
}

func (p *Processor) logRecord(ctx context.Context, it *item) {
	level := slog.LevelInfo
	switch it.outcome {
	case OutcomeProcessed:
	case OutcomeDeadLettered, OutcomeRetry, OutcomeGroupBlocked, OutcomeDeadline:
		level = slog.LevelWarn
	default:
		level = slog.LevelError
	}
	attrs := []slog.Attr{
		slog.String("outcome", string(it.outcome)),
		slog.String("idempotency_key", it.rec.IdempotencyKey()),
	}
	if it.rec.Version != 0 {
		attrs = append(attrs, slog.Int("version", it.rec.Version))
	}
	if it.err != nil {
		attrs = append(attrs, slog.String("class", it.class.String()), errAttr(it.err))
	}
	if it.dlqMessageID != "" {
		attrs = append(attrs, slog.String("dlq_message_id", it.dlqMessageID))
	}
	if !it.started.IsZero() {
		attrs = append(attrs, slog.Int64("duration_ms", p.cfg.Now().Sub(it.started).Milliseconds()))
	}
	it.rec.Logger.LogAttrs(ctx, level, "record", attrs...)
}

func (p *Processor) logDuplicate(ctx context.Context, it *item, primary Outcome) {
	it.rec.Logger.LogAttrs(ctx, slog.LevelWarn, "record",
		slog.String("outcome", string(OutcomeDuplicate)),
		slog.String("same_as_outcome", string(primary)),
		slog.Int("first_index", it.dupOf.idx), slog.Int("index", it.idx),
		slog.String("idempotency_key", it.dupOf.rec.IdempotencyKey()))
}

func errAttr(err error) slog.Attr {
	if err == nil {
		return slog.String("reason", "")
	}
	return slog.String("reason", err.Error())
}
