// Package dlq is the DLQ runbook as code: the library behind cmd/mf-dlq.
// Each runbook step is a method of Tool (Contain, Inspect, Classify,
// Redrive, Verify) over small interfaces (SQS, EventSources,
// Metrics, retry.Clock), so tests run on in-memory fakes in virtual time.
//
// Inspect and Classify never delete: they receive with a 5 s visibility
// timeout, make every message visible again when done, and refuse a queue
// with a redrive policy of its own. Redrive needs the operator's word that
// the cause is fixed, leaves in the DLQ messages older than their consumer's
// replay window unless re-admitted, sends each message before deleting it (a
// kill leaves at worst a duplicate), and holds a rate (a token bucket, or
// SQS's move task). The numbers: docs/design.md#dlq-tool.
package dlq

import (
	"cmp"
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/mercadofresco/integration/lambdas/retry"
)

// Sentinel errors; cmd/mf-dlq maps them to exit codes.
var (
	// ErrEmpty: the DLQ holds no message.
	ErrEmpty = errors.New("the dead-letter queue is empty")
	// ErrNotConfirmed: redrive without --confirm-fixed.
	ErrNotConfirmed = errors.New("redrive refused: the cause is not confirmed fixed")
	// ErrNotDLQ: the queue is not the dead-letter queue of any SQS queue and
	// has no dead-letter queue of its own.
	ErrNotDLQ = errors.New("the queue is not a dead-letter queue of any SQS queue")
	// ErrNotVerified: verify found messages in the DLQ, or fewer deletions on
	// the source than expected.
	ErrNotVerified = errors.New("not verified")
	// ErrInterrupted: the operator stopped a redrive (Ctrl-C); what was moved
	// stays moved.
	ErrInterrupted = errors.New("interrupted")
	// ErrUsage: a flag or argument is wrong.
	ErrUsage = errors.New("usage")
	// ErrExpired: a redrive left messages older than their consumer's
	// replay window in the DLQ (without --readmit-expired).
	ErrExpired = errors.New("messages older than the consumer's replay window stay in the DLQ")
)

// EventSourceMapping is a Lambda event source mapping of a queue.
type EventSourceMapping struct {
	UUID               string `json:"uuid"`
	FunctionARN        string `json:"function_arn"`
	State              string `json:"state"` // Enabled, Disabled, Enabling, Disabling, Updating, ...
	BatchSize          int    `json:"batch_size"`
	MaximumConcurrency int    `json:"maximum_concurrency,omitempty"` // 0 when unset
}

// EventSources lists and toggles the Lambda event source mappings of a queue.
type EventSources interface {
	ListEventSourceMappings(ctx context.Context, queueARN string) ([]EventSourceMapping, error)
	SetEventSourceMappingEnabled(ctx context.Context, uuid string, enabled bool) (EventSourceMapping, error)
}

// Metrics reads the CloudWatch metrics of SQS queues (namespace AWS/SQS).
type Metrics interface {
	// OldestMessageAge is the latest ApproximateAgeOfOldestMessage (Maximum)
	// of the queue within lookback; ok is false without datapoints.
	OldestMessageAge(ctx context.Context, queueName string, lookback time.Duration) (age time.Duration, at time.Time, ok bool, err error)
	// SumDeleted is NumberOfMessagesDeleted (Sum) of the queue in [from, to).
	SumDeleted(ctx context.Context, queueName string, from, to time.Time) (float64, error)
}

// Tool runs the runbook steps. SQS and Clock are required; Lambda and
// Metrics may be nil (the steps that need them say so and carry on).
type Tool struct {
	SQS     SQS
	Lambda  EventSources
	Metrics Metrics
	Clock   retry.Clock
	// Out receives results (tables, reports); Log receives progress and
	// warnings. Both default to io.Discard.
	Out, Log io.Writer
	// Connection are the flags that chose the account, region and endpoint
	// (--profile, --region, --endpoint-url as given): every command the
	// tool suggests carries them, so that a pasted next step goes where
	// this one went.
	Connection []string
}

// Command is the mf-dlq command line of args with the Connection flags.
func (t *Tool) Command(args ...string) string {
	parts := []string{"mf-dlq"}
	for _, a := range append(args, t.Connection...) {
		if a == "" || strings.ContainsAny(a, " \t'\"$*?;&|<>()") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

func (t *Tool) out() io.Writer { return cmp.Or(t.Out, io.Discard) }

func (t *Tool) log() io.Writer { return cmp.Or(t.Log, io.Discard) }
