package queues

import (
	"cmp"
	"fmt"
	"math"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/checks"
	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
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
)

// ConsumerOptions configures Queue.AddConsumer.
type ConsumerOptions struct {
	// MaximumConcurrency is the event source's concurrency ceiling (2..1000),
	// the backpressure valve of docs/design.md#consumer-concurrency: when a
	// dependency slows down, the queue grows instead of the pressure on it.
	// Required (an unlimited mapping scales pollers with the backlog). Keep
	// it at or below the function's reserved concurrency, so that Lambda
	// never throttles a batch (a throttled batch spends a receive).
	MaximumConcurrency float64
	// BatchSize is the largest batch per invocation. Zero means 10. FIFO
	// queues and mappings without a batching window allow at most 10;
	// standard queues with a window up to 10,000.
	BatchSize float64
	// MaxBatchingWindow is how long Lambda gathers messages before invoking
	// (0..5 min). Nil means none: invoke as soon as messages are available
	// (order preparation is latency sensitive). Not supported for FIFO queues.
	MaxBatchingWindow awscdk.Duration
	// FunctionTimeout is the consumer's timeout, needed when fn is an
	// imported function (an IFunction whose timeout the CDK cannot see).
	// Ignored for functions defined in this app.
	FunctionTimeout awscdk.Duration
	// SendsCopies says the consumer sends delayed copies of a message back
	// to this queue (sqsconsumer.Plan, on the last receive while a circuit is
	// open): it is granted sqs:SendMessage on the source queue (with
	// kms:GenerateDataKey for the data key) and admitted to its producer
	// guard. Standard queues only: a FIFO queue cannot delay one message.
	SendsCopies bool
}

// AddConsumer connects fn to the queue with one event source mapping:
// ReportBatchItemFailures on, the given batch size and batching window, and
// MaximumConcurrency (required). It grants fn consume on the queue (with
// kms:Decrypt on the data key through SQS) and send on the DLQ, admitting
// fn to the DLQ's producer guard (with SendsCopies, send on the queue too),
// adds this queue's DLQ to the function's lambdaapi.EnvDLQRoutes variable
// (a JSON object of source queue name to DLQ URL: the batch library sends a
// poison message there itself, with the failure reason; one route per
// source queue, so a function consuming several queues
// dead-letters each message to the DLQ of its own queue; consuming the same
// queue twice fails synth), and derives the queue's visibility timeout from
// fn's timeout:
//
//	visibility >= checks.VisibilityMultiplier x timeout + batching window
//
// (messages are in flight while Lambda gathers a batch). If Props.VisibilityTimeout
// was set explicitly and is below that, synth fails with a message that names
// both numbers. For a *golambda.Function pass its Function field. An
// imported function needs ConsumerOptions.FunctionTimeout, and its code
// must learn its DLQ some other way (its environment cannot be set here).
//
// It returns the mapping, or nil when the options are invalid (the error is
// then an annotation on the queue and synth fails).
func (q *Queue) AddConsumer(fn awslambda.IFunction, opts ConsumerOptions) awslambda.EventSourceMapping {
	v := core.Check(q.Construct, "queues.AddConsumer")
	if v.If(fn == nil, "function is nil") {
		return nil
	}
	fnName := *fn.Node().Path()
	mc := opts.MaximumConcurrency
	if !v.If(mc == 0, "MaximumConcurrency is required for consumer %s (the backpressure ceiling, %d..%d): docs/design.md#consumer-concurrency", fnName, MinMaximumConcurrency, MaxMaximumConcurrency) {
		v.If(mc < MinMaximumConcurrency || mc > MaxMaximumConcurrency || mc != math.Trunc(mc),
			"MaximumConcurrency for consumer %s must be an integer between %d and %d, got %v", fnName, MinMaximumConcurrency, MaxMaximumConcurrency, mc)
	}
	batch := cmp.Or(opts.BatchSize, DefaultBatchSize)
	window := 0.0
	if opts.MaxBatchingWindow != nil {
		w, err := core.Seconds(opts.MaxBatchingWindow)
		v.If(err != nil, "MaxBatchingWindow: %v", err)
		window = w
	}
	v.If(window < 0 || window > maxBatchingWindowSec, "MaxBatchingWindow must be between 0 and %d s, got %v s", maxBatchingWindowSec, window)
	v.If(q.Fifo && window > 0, "MaxBatchingWindow is not supported for FIFO queues (got %v s)", window)
	v.If(batch < 1 || batch != math.Trunc(batch), "BatchSize must be a positive integer, got %v", batch)
	v.If(q.Fifo && opts.SendsCopies, "SendsCopies is for standard queues: a FIFO queue cannot delay one message, and a copy would break its group's order")
	v.If((q.Fifo || window == 0) && batch > maxBatchSizeNoWindow, "BatchSize %v exceeds %d (the limit for FIFO queues and for mappings without a batching window)", batch, maxBatchSizeNoWindow)
	v.If(batch > maxBatchSizeStandard, "BatchSize %v exceeds %d", batch, maxBatchSizeStandard)

	timeout := float64(lambdaDefaultTimeout)
	fnTimeout := opts.FunctionTimeout
	if own, ok := fn.(interface{ Timeout() awscdk.Duration }); ok {
		fnTimeout = own.Timeout()
	} else {
		v.If(fnTimeout == nil, "consumer %s is an imported function: set ConsumerOptions.FunctionTimeout to its timeout (the queue's visibility timeout is derived from it)", fnName)
	}
	if fnTimeout != nil {
		t, err := core.Seconds(fnTimeout)
		v.If(err != nil, "timeout of %s: %v", fnName, err)
		timeout = t
	}
	routes := routesOf(fn)
	_, dup := routes[q.QueueName]
	v.If(dup, "consumer %s already consumes %s: a second event source mapping on the same queue would process its messages twice", fnName, q.QueueName)
	required := checks.VisibilityMultiplier*timeout + window
	v.If(q.explicitVisibility > 0 && q.explicitVisibility < required,
		"VisibilityTimeout %.0f s is below %d x the timeout of consumer %s (%.0f s)%s = %.0f s: raise it, leave it unset to derive it, or lower the timeout (docs/design.md#visibility-timeout)",
		q.explicitVisibility, checks.VisibilityMultiplier, fnName, timeout, windowText(window), required)
	if !v.OK() {
		return nil
	}
	if q.explicitVisibility == 0 && required > q.derivedVisibility {
		q.derivedVisibility = required
		q.Queue.Node().DefaultChild().(awssqs.CfnQueue).SetVisibilityTimeout(jsii.Number(required))
	}
	if v.If(q.VisibilityTimeoutSeconds() > 43200, "derived VisibilityTimeout %.0f s exceeds the SQS maximum of 43200 s", q.VisibilityTimeoutSeconds()) {
		return nil
	}

	esm := fn.AddEventSourceMapping(jsii.String("SqsConsumer"+*awscdk.Names_UniqueId(q.Queue)), &awslambda.EventSourceMappingOptions{
		EventSourceArn:          q.Queue.QueueArn(),
		BatchSize:               jsii.Number(batch),
		MaxBatchingWindow:       opts.MaxBatchingWindow,
		ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency:          jsii.Number(mc),
	})
	q.GrantConsumeMessages(fn)
	q.GrantSendToDeadLetterQueue(fn)
	if opts.SendsCopies {
		q.grantSendCopies(fn)
	}
	routes[q.QueueName] = *q.DeadLetterQueue.QueueUrl()
	fn.Node().AddMetadata(jsii.String(routeMetadata), map[string]any{"queue": q.QueueName, "dlqUrl": routes[q.QueueName]}, nil)
	if own, ok := fn.(interface {
		AddEnvironment(key, value *string, opts *awslambda.EnvironmentOptions) awslambda.Function
	}); ok {
		// The JSON object lambdaapi.ParseDLQRoutes reads; the URLs stay tokens for
		// CloudFormation to resolve.
		own.AddEnvironment(jsii.String(lambdaapi.EnvDLQRoutes), awscdk.Stack_Of(fn).ToJsonString(routes, nil), nil)
	}
	return esm
}

// grantSendCopies lets fn send to the source queue: sqs:SendMessage only
// (the copy is sent to the URL of the record's own queue, so neither
// GetQueueUrl nor GetQueueAttributes is needed) and kms:GenerateDataKey on
// the data key through SQS only (kms:Decrypt it already has to consume),
// and admits it to the queue's guard.
func (q *Queue) grantSendCopies(fn awslambda.IFunction) {
	q.Queue.Grant(fn, jsii.String("sqs:SendMessage"))
	GrantKeyThroughSQS(q.Queue, fn, "kms:GenerateDataKey")
	ForQueue(q.Queue).AdmitGrantable(fn)
}

// routeMetadata is the construct metadata type under which each
// AddConsumer records its route on the function's node, so the routes of
// one function are found on that function (whatever Go value stands for it,
// and however many apps a process synthesises).
const routeMetadata = "mercadofresco:dlq-route"

// routesOf reads fn's DLQ routes (source queue name -> DLQ URL token)
// back from its node's metadata.
func routesOf(fn awslambda.IFunction) map[string]any {
	routes := map[string]any{}
	for _, e := range *fn.Node().Metadata() {
		if d, ok := e.Data.(map[string]any); ok && e.Type != nil && *e.Type == routeMetadata {
			q, _ := d["queue"].(string)
			routes[q] = d["dlqUrl"]
		}
	}
	return routes
}

func windowText(window float64) string {
	if window == 0 {
		return ""
	}
	return fmt.Sprintf(" + batching window %.0f s", window)
}
