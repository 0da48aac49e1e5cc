// Package degrade is the plan of a queue consumer whose dependency's circuit
// is open: give the message back for later instead of failing it, without
// letting a long outage push legitimate messages into the DLQ.
//
// SPEC: when the payment gateway's circuit is open, charging does not
// degrade (the workflow fails fast); the ERP notice waits, "the message
// goes back to the queue with ChangeMessageVisibility(300)"; the
// confirmation e-mail degrades to a secondary provider or is delayed. This
// package is the "waits" part, for SQS consumers built on lambdas/sqsbatch.
//
// # Every receive counts
//
// Returning a message with ChangeMessageVisibility(300) does not spend
// less than a failure: each receive increments ApproximateReceiveCount,
// and the queue's redrive policy moves the message to the DLQ on the
// receive after maxReceiveCount (4 or 5 in this project). With 300 s per
// deferral a message survives about 4 × 5 = 20 minutes of open circuit;
// an outage of an hour would dead-letter every ERP notice received during
// it, although nothing is wrong with them, and the DLQ runbook would then
// have to redrive thousands of legitimate messages.
//
// # The plan
//
// [Plan.Later] returns the message for Delay (default 300 s):
//
//  1. While the receive count is below maxReceiveCount it returns
//     sqsbatch.RetryAfter(cause, Delay): sqsbatch calls
//     ChangeMessageVisibility(Delay) on the source queue and reports the
//     record as a batch item failure (the message keeps its id and its
//     attributes; Config.Visibility of the sqsbatch Processor must be set).
//  2. On the last receive the redrive policy allows (ReceiveCount >=
//     maxReceiveCount) of a standard queue, it sends a copy of the message
//     to the same queue with DelaySeconds = Delay and an mf-aplazamientos
//     attribute counting these copies, and returns nil so the original is
//     deleted. The copy starts again at receive count 0. The send happens
//     before the delete, so a crash between them leaves two copies, never
//     none; consumers are idempotent by domain key, so the duplicate is
//     harmless.
//  3. After MaxDeferrals copies (default 72: 24 hours at 4 receives × 5
//     minutes), or when the copy cannot be made (FIFO queue, the send
//     failed), it falls back to 1: the redrive policy dead-letters the
//     message after its last receive, where the runbook finds it. An outage
//     that long has been paging for a day through the breaker's
//     CircuitoAbierto alarm.
//
// # Attributes of the copy
//
// The copy carries the message's attributes as sqsbatch.ForwardAttributes
// does for a DLQ record: incoming mf-* attributes are dropped (only the
// consumer that sends may set one), the rest is kept, packed into
// mf-original-attributes when it does not fit beside the counter.
// mf-aplazamientos is the one incoming mf-* attribute a consumer reads, and
// only to bound its own copies: the consumer itself wrote it on the
// previous copy, and only the queue's known producers may send to the
// queue at all (constructs/producers). Even a forged value does no harm:
// it is read as 0 when it is negative or not a number, so at most
// MaxDeferrals copies are ever made, and a value too high only sends the
// message to the DLQ sooner, where it is visible.
//
// Why not the alternatives:
//
//   - Raising maxReceiveCount weakens the safety net for every other
//     failure (a crashing consumer) and only moves the limit.
//   - Disabling the event source mapping while the circuit is open stops
//     the consumer for all messages, needs lambda:UpdateEventSourceMapping
//     in the data plane and a controller that re-enables it; a mapping left
//     disabled is a silent outage. (The runbook still advises it by hand to
//     contain a DLQ that is growing.)
//   - Re-sending on every deferral works, but a copy changes the message id
//     each time and costs a send where ChangeMessageVisibility keeps the
//     message; copying only on the last receive keeps the common case (a
//     short outage) on visibility changes.
//   - FIFO queues cannot delay one message (DelaySeconds per message is
//     refused), and a copy would go to the end of its message group,
//     breaking the order the FIFO queue exists for. They use step 1 only.
//
// TestLongOutageDoesNotDeadLetter runs a 3-hour open circuit against a
// queue with maxReceiveCount 4 (sqsfake): the plan delivers the message
// after recovery with nothing in the DLQ, while visibility alone
// dead-letters it after 20 minutes. See also docs/runbooks/dlq.md.
package degrade

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/queue"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer/consumerapi"
)

// EnvMaxReceiveCount is the environment variable through which the CDK
// gives a consumer its source queue's maxReceiveCount (Config.MaxReceiveCount).
const EnvMaxReceiveCount = "MAX_RECEIVE_COUNT"

// AttrDeferrals is the message attribute (Number) counting the copies made
// by Later.
const AttrDeferrals = "mf-aplazamientos"

// Defaults (lambdas/consumerapi's numbers, which the CDK counts in a
// queue's longest pass, docs/design.md#replay-windows).
const (
	DefaultDelay        = consumerapi.DeferralDelay
	DefaultMaxDeferrals = consumerapi.MaxDeferrals
	// maxDelay is SQS's largest DelaySeconds.
	maxDelay = 15 * time.Minute
)

// Config configures a Plan.
type Config struct {
	// MaxReceiveCount is the source queue's redrive maxReceiveCount
	// (required; the CDK passes it in the function's environment).
	MaxReceiveCount int
	// Sender sends the copies on the last receive (required for that step;
	// without it the plan uses visibility changes only).
	Sender queue.Sender
	// Delay is how long the message waits (default 300 s, at most 15 min).
	Delay time.Duration
	// MaxDeferrals bounds the copies per message (default 72).
	MaxDeferrals int
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Plan returns messages for later. Safe for concurrent use.
type Plan struct {
	cfg Config
	log *slog.Logger
}

// New validates cfg.
func New(cfg Config) (*Plan, error) {
	if cfg.MaxReceiveCount < 1 || cfg.MaxReceiveCount > 1000 {
		return nil, fmt.Errorf("degrade: MaxReceiveCount %d not in 1..1000 (the queue's redrive policy)", cfg.MaxReceiveCount)
	}
	if cfg.Delay == 0 {
		cfg.Delay = DefaultDelay
	}
	if cfg.Delay < time.Second || cfg.Delay > maxDelay {
		return nil, fmt.Errorf("degrade: Delay %s not in 1s..15m", cfg.Delay)
	}
	if cfg.MaxDeferrals == 0 {
		cfg.MaxDeferrals = DefaultMaxDeferrals
	}
	if cfg.MaxDeferrals < 0 {
		return nil, fmt.Errorf("degrade: MaxDeferrals %d is negative", cfg.MaxDeferrals)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	return &Plan{cfg: cfg, log: cfg.Logger}, nil
}

// OnOpen is the usual call in a handler: if err says the dependency's
// circuit is open (errors.Is(err, breaker.ErrOpen)) the message is returned
// for later (Later); any other error is returned unchanged.
func (p *Plan) OnOpen(ctx context.Context, rec *sqsbatch.Record, err error) error {
	if err != nil && errors.Is(err, breaker.ErrOpen) {
		return p.Later(ctx, rec, err)
	}
	return err
}

// Later returns rec for Delay (see the package documentation for how): the
// handler returns what Later returns.
func (p *Plan) Later(ctx context.Context, rec *sqsbatch.Record, cause error) error {
	if cause == nil {
		cause = errors.New("dependency unavailable")
	}
	log := rec.Logger
	if log == nil {
		log = p.log
	}
	visibility := sqsbatch.RetryAfter(cause, p.cfg.Delay)
	if rec.ReceiveCount < p.cfg.MaxReceiveCount {
		return visibility
	}
	if reason := p.cannotCopy(rec); reason != "" {
		log.LogAttrs(ctx, slog.LevelWarn, "last receive before the DLQ and the message cannot be deferred by a copy",
			slog.String("reason", reason), slog.Int("receive_count", rec.ReceiveCount))
		return visibility
	}
	n := deferrals(rec) + 1
	arn, err := queue.ParseARN(rec.Message.EventSourceARN)
	if err != nil {
		return visibility
	}
	attrs := sqsbatch.ForwardAttributes(rec, map[string]queue.Attribute{AttrDeferrals: queue.NumberAttribute(int64(n))})
	out, err := p.cfg.Sender.SendMessage(ctx, &queue.SendMessageInput{
		QueueURL: arn.URL(), Body: rec.Message.Body, MessageAttributes: attrs, Delay: p.cfg.Delay,
	})
	if err != nil {
		log.LogAttrs(ctx, slog.LevelError, "deferral copy failed; the message will reach the DLQ after this receive",
			slog.String("error", err.Error()))
		return fmt.Errorf("%w (and the deferral copy failed: %v)", visibility, err)
	}
	log.LogAttrs(ctx, slog.LevelWarn, "dependency unavailable on the last receive: deferred as a delayed copy",
		slog.String("copy_message_id", out.MessageID), slog.Int("deferrals", n),
		slog.Duration("delay", p.cfg.Delay), slog.String("cause", cause.Error()))
	return nil
}

func (p *Plan) cannotCopy(rec *sqsbatch.Record) string {
	switch {
	case p.cfg.Sender == nil:
		return "no Sender configured"
	case rec.FIFO || strings.HasSuffix(rec.Message.EventSourceARN, ".fifo"):
		return "FIFO queue: a copy would break the group's order"
	case deferrals(rec) >= p.cfg.MaxDeferrals:
		return fmt.Sprintf("deferred %d times already (MaxDeferrals)", deferrals(rec))
	}
	return ""
}

// deferrals is the message's count of copies: 0 when absent, negative or
// not a number (see the package documentation).
func deferrals(rec *sqsbatch.Record) int {
	a, ok := rec.Message.MessageAttributes[AttrDeferrals]
	if !ok || a.StringValue == nil {
		return 0
	}
	n, err := strconv.Atoi(*a.StringValue)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
