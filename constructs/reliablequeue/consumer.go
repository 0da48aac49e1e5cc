package reliablequeue

import (
	"fmt"
	"math"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// Limits of the Lambda SQS event source mapping.
const (
	// MinMaximumConcurrency and MaxMaximumConcurrency bound ScalingConfig.MaximumConcurrency.
	MinMaximumConcurrency = 2
	MaxMaximumConcurrency = 1000
	// DefaultBatchSize is the Lambda default for SQS.
	DefaultBatchSize = 10
	// maxBatchSizeNoWindow applies without a batching window and to FIFO queues.
	maxBatchSizeNoWindow = 10
	maxBatchSizeStandard = 10000
	maxBatchingWindowSec = 300
	// lambdaDefaultTimeout is Lambda's timeout when a function sets none.
	lambdaDefaultTimeout = 3
	// DefaultDeadLetterQueueURLEnv is the environment variable through which
	// the consumer learns its DLQ URL (the batch library sends poison
	// messages there itself, with the failure reason, before deleting them).
	DefaultDeadLetterQueueURLEnv = "DLQ_URL"
)

// ConsumerOptions configures Queue.AddConsumer.
type ConsumerOptions struct {
	// MaximumConcurrency is the event source's concurrency ceiling (2..1000)
	// and the backpressure valve of the lesson: when a dependency slows down
	// the queue grows instead of the pressure on the dependency. Required: the
	// zero value fails synth, because "unlimited" is how 20 pollers became 60
	// in the retry-storm scenario. Size it from the downstream limit (e.g.
	// Aurora's ~200 connections shared by every consumer) and keep it at or
	// below the function's reserved concurrency, so that Lambda never
	// throttles the invocations (a throttled batch burns a receive).
	MaximumConcurrency float64
	// BatchSize is the largest batch per invocation. Zero means 10. FIFO
	// queues and mappings without a batching window allow at most 10;
	// standard queues with a window up to 10,000.
	BatchSize float64
	// MaxBatchingWindow is how long Lambda gathers messages before invoking
	// (0..5 min). Nil means none: invoke as soon as messages are available
	// (order preparation is latency sensitive). Not supported for FIFO queues.
	MaxBatchingWindow awscdk.Duration
	// Filters are Lambda event filter patterns. Messages that do not match are
	// DELETED by Lambda without invoking the function, so filters are for
	// messages that are truly irrelevant, never for validation (an invalid
	// message must reach the DLQ to be visible).
	Filters []map[string]any
	// DeadLetterQueueURLEnv is the environment variable set to the DLQ URL on
	// the function. Empty means DefaultDeadLetterQueueURLEnv. The function is
	// granted sqs:SendMessage on the DLQ.
	DeadLetterQueueURLEnv string
	// Enabled, when non-nil and false, creates the mapping disabled (runbook
	// step 1 "contain" can then be applied in code).
	Enabled *bool
}

// AddConsumer connects fn to the queue with one event source mapping:
// ReportBatchItemFailures on, the given batch size and batching window, and
// MaximumConcurrency (required). It grants fn consume on the queue (with
// kms:Decrypt on the data key) and send on the DLQ, and derives the queue's
// visibility timeout from fn's timeout:
//
//	visibility >= VisibilityMultiplier x timeout + batching window
//
// (messages are in flight while Lambda gathers a batch). If Props.VisibilityTimeout
// was set explicitly and is below that, synth fails with a message that names
// both numbers. For a *golambda.Function pass its Function field.
//
// It returns the mapping, or nil when the options are invalid (the error is
// then an annotation on the queue and synth fails).
func (q *Queue) AddConsumer(fn awslambda.Function, opts ConsumerOptions) awslambda.EventSourceMapping {
	fail := func(format string, a ...any) awslambda.EventSourceMapping {
		awscdk.Annotations_Of(q.Construct).AddError(jsii.String(fmt.Sprintf("reliablequeue %s: AddConsumer: %s", *q.Node().Path(), fmt.Sprintf(format, a...))))
		return nil
	}
	if fn == nil {
		return fail("function is nil")
	}
	fnName := *fn.Node().Path()

	mc := opts.MaximumConcurrency
	switch {
	case mc == 0:
		return fail("MaximumConcurrency is required for consumer %s (the backpressure ceiling, %d..%d); an SQS event source without it scales pollers with the backlog and amplifies retry storms", fnName, MinMaximumConcurrency, MaxMaximumConcurrency)
	case mc < MinMaximumConcurrency || mc > MaxMaximumConcurrency || mc != math.Trunc(mc):
		return fail("MaximumConcurrency for consumer %s must be an integer between %d and %d, got %v", fnName, MinMaximumConcurrency, MaxMaximumConcurrency, mc)
	}

	batch := opts.BatchSize
	if batch == 0 {
		batch = DefaultBatchSize
	}
	window := 0.0
	if opts.MaxBatchingWindow != nil {
		w, err := Seconds(opts.MaxBatchingWindow)
		if err != nil {
			return fail("MaxBatchingWindow: %v", err)
		}
		window = w
	}
	switch {
	case window < 0 || window > maxBatchingWindowSec:
		return fail("MaxBatchingWindow must be between 0 and %d s, got %v s", maxBatchingWindowSec, window)
	case q.Fifo && window > 0:
		return fail("MaxBatchingWindow is not supported for FIFO queues (got %v s)", window)
	case batch < 1 || batch != math.Trunc(batch):
		return fail("BatchSize must be a positive integer, got %v", batch)
	case (q.Fifo || window == 0) && batch > maxBatchSizeNoWindow:
		return fail("BatchSize %v exceeds %d (the limit for FIFO queues and for mappings without a batching window)", batch, maxBatchSizeNoWindow)
	case batch > maxBatchSizeStandard:
		return fail("BatchSize %v exceeds %d", batch, maxBatchSizeStandard)
	}

	timeout := float64(lambdaDefaultTimeout)
	if fn.Timeout() != nil {
		t, err := Seconds(fn.Timeout())
		if err != nil {
			return fail("timeout of %s: %v", fnName, err)
		}
		timeout = t
	}
	required := VisibilityMultiplier*timeout + window
	if q.explicitVisibility > 0 {
		if q.explicitVisibility < required {
			return fail("VisibilityTimeout %.0f s is below %d x the timeout of consumer %s (%.0f s)%s = %.0f s; a message would become visible again while its first delivery is still running and be processed twice (the lesson's double charge: visibility 120 s vs a 180 s gateway read timeout). Raise VisibilityTimeout to at least %.0f s, or leave it unset to derive it, or lower the function timeout",
				q.explicitVisibility, VisibilityMultiplier, fnName, timeout, windowText(window), required, required)
		}
	} else if required > q.derivedVisibility {
		q.derivedVisibility = required
		q.Queue.Node().DefaultChild().(awssqs.CfnQueue).SetVisibilityTimeout(jsii.Number(required))
	}
	if q.VisibilityTimeoutSeconds() > 43200 {
		return fail("derived VisibilityTimeout %.0f s exceeds the SQS maximum of 43200 s", q.VisibilityTimeoutSeconds())
	}

	var filters *[]*map[string]any
	if len(opts.Filters) > 0 {
		fs := make([]*map[string]any, 0, len(opts.Filters))
		for i := range opts.Filters {
			fs = append(fs, &opts.Filters[i])
		}
		filters = &fs
	}
	esm := fn.AddEventSourceMapping(jsii.String("SqsConsumer"+*awscdk.Names_UniqueId(q.Queue)), &awslambda.EventSourceMappingOptions{
		EventSourceArn:          q.Queue.QueueArn(),
		BatchSize:               jsii.Number(batch),
		MaxBatchingWindow:       opts.MaxBatchingWindow,
		ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency:          jsii.Number(mc),
		Filters:                 filters,
		Enabled:                 opts.Enabled,
	})
	q.Queue.GrantConsumeMessages(fn)
	q.GrantSendToDeadLetterQueue(fn)
	env := opts.DeadLetterQueueURLEnv
	if env == "" {
		env = DefaultDeadLetterQueueURLEnv
	}
	fn.AddEnvironment(jsii.String(env), q.DeadLetterQueue.QueueUrl(), nil)
	return esm
}

func windowText(window float64) string {
	if window == 0 {
		return ""
	}
	return fmt.Sprintf(" + batching window %.0f s", window)
}
