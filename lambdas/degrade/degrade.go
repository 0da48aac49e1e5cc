// Package degrade is the plan of a queue consumer whose dependency's circuit
// is open: give the message back for later instead of failing it, without
// letting a long outage push legitimate messages into the DLQ.
//
// [Plan.Later] returns sqsbatch.RetryAfter(cause, Delay) (default 300 s)
// while the receive count is below maxReceiveCount; on the last receive of a
// standard queue it sends a copy delayed by Delay, counted in the
// mf-aplazamientos attribute, and lets the original be deleted (send before
// delete: a crash leaves two copies, never none). After MaxDeferrals copies
// (72: a day at 4 receives × 5 min), or when no copy can be made (FIFO, a
// failed send), the queue's redrive dead-letters the message. Reasoning and
// the alternatives: docs/design.md#degrade-plan.
package degrade

import (
	"cmp"
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
	cfg.Delay = cmp.Or(cfg.Delay, DefaultDelay)
	if cfg.Delay < time.Second || cfg.Delay > maxDelay {
		return nil, fmt.Errorf("degrade: Delay %s not in 1s..15m", cfg.Delay)
	}
	cfg.MaxDeferrals = cmp.Or(cfg.MaxDeferrals, DefaultMaxDeferrals)
	if cfg.MaxDeferrals < 0 {
		return nil, fmt.Errorf("degrade: MaxDeferrals %d is negative", cfg.MaxDeferrals)
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.NewJSONHandler(io.Discard, nil)))
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
	cause = cmp.Or(cause, errors.New("dependency unavailable"))
	log := rec.Logger
	log = cmp.Or(log, p.log)
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
