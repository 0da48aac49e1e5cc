package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/queue"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// settings is the consumer's configuration, read from the environment.
type settings struct {
	IdempotencyTable  string
	DLQURL            string
	ConsumerVersion   string
	Concurrency       int
	SupportedVersions []int
	DeadlineMargin    time.Duration
	LogLevel          slog.Level
}

// loadSettings reads the environment through getenv and rejects bad values
// (a typo must fail the deployment's first invocation, not silently default).
func loadSettings(getenv func(string) string) (settings, error) {
	s := settings{
		IdempotencyTable:  strings.TrimSpace(getenv(idempotency.EnvTableName)),
		DLQURL:            strings.TrimSpace(getenv("DLQ_URL")),
		ConsumerVersion:   strings.TrimSpace(getenv("CONSUMER_VERSION")),
		Concurrency:       sqsbatch.DefaultConcurrency,
		SupportedVersions: []int{1},
		DeadlineMargin:    sqsbatch.DefaultDeadlineMargin,
		LogLevel:          slog.LevelInfo,
	}
	if s.ConsumerVersion == "" {
		s.ConsumerVersion = "unknown"
	}
	if v := getenv("BATCH_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return s, fmt.Errorf("BATCH_CONCURRENCY=%q: want an integer in 1..100", v)
		}
		s.Concurrency = n
	}
	if v := getenv("SUPPORTED_VERSIONS"); v != "" {
		s.SupportedVersions = nil
		for _, part := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(part))
			if err != nil || n < 0 {
				return s, fmt.Errorf("SUPPORTED_VERSIONS=%q: want comma-separated major versions", v)
			}
			s.SupportedVersions = append(s.SupportedVersions, n)
		}
	}
	if v := getenv("DEADLINE_MARGIN"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("DEADLINE_MARGIN=%q: want a positive Go duration such as 2s", v)
		}
		s.DeadlineMargin = d
	}
	if v := getenv("LOG_LEVEL"); v != "" {
		if err := s.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return s, fmt.Errorf("LOG_LEVEL=%q: want DEBUG, INFO, WARN or ERROR", v)
		}
	}
	if s.IdempotencyTable == "" {
		// Never run the side effect without its idempotency record.
		return s, fmt.Errorf("%s is not set: the consumer refuses to run without its idempotency table", idempotency.EnvTableName)
	}
	if s.DLQURL != "" && !isQueueURL(s.DLQURL) {
		return s, fmt.Errorf("DLQ_URL=%q is not an SQS queue URL (https://<host>/<account>/<queue>)", s.DLQURL)
	}
	return s, nil
}

// isQueueURL accepts any https URL whose path is /<account>/<queue>: the
// current sqs.<region>.amazonaws.com form, the legacy
// <region>.queue.amazonaws.com one and VPC endpoint host names. It catches
// the usual mistake of passing the queue ARN or name.
func isQueueURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return false
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	return len(parts) == 2 && parts[0] != "" && parts[1] != ""
}

// PedidoConfirmado is the event this consumer handles (version 1). Unknown
// fields are ignored; new fields are additive.
type PedidoConfirmado struct {
	PedidoID string  `json:"pedido_id"`
	Lineas   []Linea `json:"lineas"`
}

// Linea is one order line.
type Linea struct {
	SKU      string `json:"sku"`
	Cantidad int    `json:"cantidad"`
}

// Validate implements sqsbatch.Validator: an order no warehouse could prepare
// is poison, not something to retry.
func (p *PedidoConfirmado) Validate() error {
	if len(p.Lineas) == 0 {
		return errors.New("order has no lines")
	}
	for i, l := range p.Lineas {
		if l.SKU == "" || l.Cantidad <= 0 {
			return fmt.Errorf("line %d: sku %q, cantidad %d: want a SKU and a positive quantity", i, l.SKU, l.Cantidad)
		}
	}
	return nil
}

// ErrNoPreparable is returned by a Preparer when the order can never be
// prepared (cancelled, unknown to the warehouse): a permanent failure.
var ErrNoPreparable = errors.New("order cannot be prepared")

// Preparer asks the warehouse to prepare an order. Implementations must be
// idempotent on key (a redelivered message calls it again with the same
// key) and return the same reference for the same key.
type Preparer interface {
	Prepare(ctx context.Context, key string, p *PedidoConfirmado) (ref string, err error)
}

// idempotencyKey is derived from the domain, never from the SQS message id.
func idempotencyKey(pedidoID string) (string, error) { return idempotency.KeyPreparacion(pedidoID) }

// newProcessor wires the handler into the batch library.
func newProcessor(s settings, dlq queue.Sender, vis queue.VisibilityChanger, prep Preparer, logger *slog.Logger) (*sqsbatch.Processor, error) {
	return sqsbatch.New(sqsbatch.Config{
		Handler:           sqsbatch.JSON(handler(prep)),
		ConsumerVersion:   s.ConsumerVersion,
		DLQ:               dlq,
		DLQURL:            s.DLQURL,
		Visibility:        vis,
		Concurrency:       s.Concurrency,
		SupportedVersions: s.SupportedVersions,
		RequiredKeys:      []string{"pedido_id", "lineas"},
		IdempotencyKey: func(rec *sqsbatch.Record) (string, error) {
			var head struct {
				PedidoID string `json:"pedido_id"`
			}
			if err := rec.Decode(&head); err != nil {
				return "", err
			}
			return idempotencyKey(head.PedidoID)
		},
		DeadlineMargin: s.DeadlineMargin,
		Logger:         logger,
	})
}

func handler(prep Preparer) func(ctx context.Context, rec *sqsbatch.Record, p *PedidoConfirmado) error {
	return func(ctx context.Context, rec *sqsbatch.Record, p *PedidoConfirmado) error {
		ref, err := prep.Prepare(ctx, rec.IdempotencyKey(), p)
		switch {
		case errors.Is(err, ErrNoPreparable):
			return sqsbatch.Permanent(fmt.Errorf("pedido %s: %w", p.PedidoID, err))
		case err != nil:
			return fmt.Errorf("pedido %s: prepare: %w", p.PedidoID, err)
		}
		rec.Logger.Info("order sent to preparation", slog.String("pedido_id", p.PedidoID),
			slog.String("referencia_preparacion", ref), slog.Int("lineas", len(p.Lineas)))
		return nil
	}
}

// stubPreparer stands in for the warehouse integration until it exists: it
// logs the request and returns a reference derived from the key, which makes
// it trivially idempotent.
type stubPreparer struct{ log *slog.Logger }

// Prepare implements Preparer.
func (s stubPreparer) Prepare(ctx context.Context, key string, p *PedidoConfirmado) (string, error) {
	s.log.LogAttrs(ctx, slog.LevelDebug, "stub preparation", slog.String("idempotency_key", key), slog.String("pedido_id", p.PedidoID))
	return "prep-" + p.PedidoID, nil
}
