package sqsconsumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/retry"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// AttrDeferrals is the message attribute (Number) counting the copies made
// by Later.
const AttrDeferrals = "mf-aplazamientos"

// AttrReceives is the message attribute (Number) a copy carries: the
// receives of the earlier copies that may have called the dependency.
const AttrReceives = "mf-recepciones"

// ErrCallsSpent is returned by Admit when the message's receives across
// all its copies reached maxReceiveCount: the consumer must not call the
// dependency again: the message goes to the DLQ with this reason
// (a permanent failure without a code: no idempotency record keeps it).
var ErrCallsSpent = failure.Permanent("", errors.New("sqsconsumer: the message's receives across its deferred copies reached maxReceiveCount"))

// ErrDeferralsSpent is the reason of a message dead-lettered after
// MaxDeferrals copies.
var ErrDeferralsSpent = errors.New("sqsconsumer: the dependency stayed unavailable for every deferral")

// The deferral's numbers are lambdas/lambdaapi's, which the CDK counts in
// a queue's longest pass (docs/design.md#replay-windows): each copy waits
// lambdaapi.DeferralDelay, and the default MaxDeferrals is
// lambdaapi.MaxDeferrals × MaxReceiveCount.

// PlanConfig configures a Plan.
type PlanConfig struct {
	// MaxReceiveCount is the source queue's redrive maxReceiveCount
	// (required; the CDK passes it in the function's environment).
	MaxReceiveCount int
	// Sender sends the copies on the last receive (required for that step;
	// without it the plan uses visibility changes only).
	Sender sqsbatch.Sender
	// MaxDeferrals bounds the copies per message (default
	// MaxReceiveCount × 72: with 300 s each, a day).
	MaxDeferrals int
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Rand draws each copy's delay (default: math/rand/v2's global source).
	Rand retry.Rand
}

// Plan is a queue consumer's plan while its dependency cannot take a
// message: give it back for later instead of failing it, without pushing
// legitimate messages into the DLQ during a long outage and without the
// copies multiplying the calls a message makes.
//
// [Plan.Later], on a standard queue, sends a copy delayed by
// retry.HalfJitter of lambdaapi.DeferralDelay (150 to 300 s) and lets the original be deleted (send before delete: a crash
// leaves two copies, never none). The copy counts itself in mf-aplazamientos
// and carries in mf-recepciones the receives of the earlier copies;
// [Plan.Admit] refuses a call once those reach maxReceiveCount, so a message
// makes at most maxReceiveCount × (attempts per receive) calls across its
// copies (what MF-ATTEMPTS counts). After MaxDeferrals copies it is
// dead-lettered with its reason; a FIFO queue or a failed send falls back to
// ChangeMessageVisibility. Safe for concurrent use. Reasoning:
// docs/design.md#degrade-plan.
type Plan struct {
	cfg PlanConfig
	log *slog.Logger
}

// New validates cfg.
func NewPlan(cfg PlanConfig) (*Plan, error) {
	if cfg.MaxReceiveCount < 1 || cfg.MaxReceiveCount > 1000 {
		return nil, fmt.Errorf("sqsconsumer: MaxReceiveCount %d not in 1..1000 (the queue's redrive policy)", cfg.MaxReceiveCount)
	}
	cfg.MaxDeferrals = cmp.Or(cfg.MaxDeferrals, lambdaapi.MaxDeferrals*cfg.MaxReceiveCount)
	if cfg.MaxDeferrals < 0 {
		return nil, fmt.Errorf("sqsconsumer: MaxDeferrals %d is negative", cfg.MaxDeferrals)
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	return &Plan{cfg: cfg, log: cfg.Logger}, nil
}

// Admit reports whether the consumer may call the dependency for rec: an
// error wrapping ErrCallsSpent when the receives of rec's earlier copies
// plus this receive exceed MaxReceiveCount. Call it right before the call
// (inside the idempotency claim) and dead-letter the message on its error.
func (p *Plan) Admit(rec *sqsbatch.Record) error {
	spent := counter(rec, AttrReceives)
	if spent+rec.ReceiveCount > p.cfg.MaxReceiveCount {
		return fmt.Errorf("%w: %d receive(s) spent by %d earlier copies, this copy's receive %d, maxReceiveCount %d",
			ErrCallsSpent, spent, counter(rec, AttrDeferrals), rec.ReceiveCount, p.cfg.MaxReceiveCount)
	}
	return nil
}

// Later returns rec for half to all of lambdaapi.DeferralDelay (see the package
// documentation for how): the handler returns what Later returns. A cause
// that wraps breaker.ErrOpen says this receive made no call; any other
// cause counts this receive as one that may have called.
func (p *Plan) Later(ctx context.Context, rec *sqsbatch.Record, cause error) error {
	cause = cmp.Or(cause, errors.New("dependency unavailable"))
	log := cmp.Or(rec.Logger, p.log)
	visibility := failure.RetryAfter(cause, lambdaapi.DeferralDelay) // sqsbatch jitters it
	delay := retry.HalfJitter(lambdaapi.DeferralDelay, p.cfg.Rand)
	if reason := p.cannotCopy(rec); reason != "" {
		log.LogAttrs(ctx, slog.LevelWarn, "the message cannot be deferred by a copy; it waits by visibility (the queue's redrive bounds its receives)",
			slog.String("reason", reason), slog.Int("receive_count", rec.ReceiveCount))
		return visibility
	}
	n := counter(rec, AttrDeferrals)
	if n >= p.cfg.MaxDeferrals {
		return failure.Permanent("", fmt.Errorf("%w: %d copies of %s each (MaxDeferrals); last cause: %w", ErrDeferralsSpent, n, lambdaapi.DeferralDelay, cause))
	}
	// The receives before this one all reached the dependency or failed
	// otherwise (a receive that meets the open circuit makes a copy), so
	// they count; this one counts unless the circuit refused it.
	spent := counter(rec, AttrReceives) + rec.ReceiveCount - 1
	if !errors.Is(cause, breaker.ErrOpen) {
		spent++
	}
	url, err := sqsbatch.QueueURL(rec.Message.EventSourceARN)
	if err != nil {
		return visibility
	}
	attrs := sqsbatch.ForwardAttributes(rec, map[string]types.MessageAttributeValue{
		AttrDeferrals: sqsbatch.NumberAttribute(int64(n + 1)),
		AttrReceives:  sqsbatch.NumberAttribute(int64(spent)),
	})
	// Whole seconds, rounded up: the copy never comes back early.
	out, err := p.cfg.Sender.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(url), MessageBody: aws.String(rec.Message.Body), MessageAttributes: attrs,
		DelaySeconds: int32(math.Ceil(delay.Seconds())),
	})
	if err != nil {
		log.LogAttrs(ctx, slog.LevelError, "deferral copy failed; the message waits by visibility and spends this receive",
			slog.String("error", err.Error()))
		return fmt.Errorf("%w (and the deferral copy failed: %v)", visibility, err)
	}
	log.LogAttrs(ctx, slog.LevelWarn, "dependency unavailable: deferred as a delayed copy",
		slog.String("copy_message_id", aws.ToString(out.MessageId)), slog.Int("deferrals", n+1), slog.Int("receives_spent", spent),
		slog.Duration("delay", delay), slog.String("cause", cause.Error()))
	return nil
}

func (p *Plan) cannotCopy(rec *sqsbatch.Record) string {
	switch {
	case p.cfg.Sender == nil:
		return "no Sender configured"
	case rec.FIFO || strings.HasSuffix(rec.Message.EventSourceARN, ".fifo"):
		return "FIFO queue: a copy would break the group's order"
	}
	return ""
}

// counter reads one of the plan's Number attributes: 0 when absent,
// negative or not a number (see the package documentation).
func counter(rec *sqsbatch.Record, name string) int {
	a, ok := rec.Message.MessageAttributes[name]
	if !ok || a.StringValue == nil {
		return 0
	}
	n, err := strconv.Atoi(*a.StringValue)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
