// Package reliablequeue provides an SQS queue construct that is safe by
// default: every queue gets a dead-letter queue of the same type, a redrive
// policy, retention that keeps failed messages longer than the source keeps
// its own, encryption, TLS-only access and the two alarms the MercadoFresco
// DLQ runbook starts from (DLQ depth and age of the oldest source message).
//
// The zero value of Props is the safe configuration: a standard queue that
// carries order data, encrypted with the customer-managed data key
// (alias/mercadofresco-datos), maxReceiveCount 4, 4 days of retention and a
// 14-day DLQ. What the zero value cannot know (the key and the alerts topic)
// is required, and leaving it out fails synth with a message instead of
// silently producing a weaker queue.
//
// Both queues carry a known-producers guard (constructs/producers): only
// the producers admitted may send to them. AddConsumer admits the consumer
// to the DLQ (it dead-letters poison itself) and, when it sends delayed
// copies, to the source; AdmitRedriver admits the on-call's redrive; the
// constructs that wire other producers (a topic, a rule, the workflow)
// admit them.
//
// When a DLQ alarm fires, the on-call follows docs/runbooks/dlq.md with the
// tool cmd/mf-dlq (contain, inspect, classify, redrive, verify); every DLQ
// alarm description names both.
//
// A Lambda consumer is connected with Queue.AddConsumer, which also derives
// the queue's visibility timeout from the function timeout (at least 6x, as
// AWS advises) so the lesson's double charge (visibility 120 s, consumer that
// can take 180 s) cannot be configured.
package reliablequeue

import (
	"fmt"
	"math"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/mercadofresco/integration/constructs/alarm"
	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/producers"
	"github.com/mercadofresco/integration/constructs/removal"
)

// Defaults applied when the corresponding Props field is left at its zero value.
const (
	// DefaultMaxReceiveCount is the lesson's value: the queue's redrive is a
	// safety net behind the SDK (max_attempts 2) and the workflow's Retry, so
	// 2 SDK attempts x 4 receives = 8 calls stays under the 15-attempt budget.
	// AWS advises >= 5 where the consumer can be throttled; queues in that
	// situation set MaxReceiveCount explicitly and say why.
	DefaultMaxReceiveCount = 4
	// DefaultRetentionDays is the source queue retention (lesson: a stopped
	// consumer lets messages accumulate for 4 days instead of failing them).
	DefaultRetentionDays = 4
	// DefaultDeadLetterRetentionDays is the DLQ retention. It must exceed the
	// source retention: for standard queues a message keeps its original
	// enqueue timestamp when it is moved to the DLQ, so a DLQ with the same
	// retention would drop old messages almost immediately. 14 days is the SQS
	// maximum and leaves two weekends for the runbook.
	DefaultDeadLetterRetentionDays = 14
	// DefaultOldestMessageAgeMinutes is the default ApproximateAgeOfOldestMessage
	// threshold of the source queue: 3 h, above the lesson's Friday backlog
	// (docs/design.md#age-alarm).
	DefaultOldestMessageAgeMinutes = 180
	// VisibilityMultiplier is the AWS rule for Lambda consumers: visibility
	// timeout >= 6 x function timeout, so a batch whose invocation was
	// throttled and retried is not redelivered while still being processed.
	VisibilityMultiplier = 6
	// DefaultDataKeyReuseMinutes is how long SQS reuses a KMS data key: 5 min
	// (the SQS default) keeps KMS calls, and cost, low at 240,000 orders/month.
	DefaultDataKeyReuseMinutes = 5

	maxQueueNameLength = 80
	fifoSuffix         = ".fifo"
)

// Encryption selects how a queue (and its DLQ) is encrypted at rest.
type Encryption int

const (
	// EncryptionDataKey (the zero value) encrypts with the customer-managed
	// data key alias/mercadofresco-datos passed in Props.EncryptionKey. Use it
	// for every queue that carries order or payment data (order ids with
	// customer, address, amount or card references): the key policy, not only
	// IAM, then decides who can read the messages, and CloudTrail records
	// every decrypt.
	EncryptionDataKey Encryption = iota
	// EncryptionSQSManaged uses SQS-managed SSE (SSE-SQS). Acceptable only for
	// queues whose messages carry no customer, order amount or payment data
	// (for example pure technical signals such as cache invalidations); it is
	// free and needs no key grants.
	EncryptionSQSManaged
)

// Props configures a Queue. The zero value is the safe default; see the
// package documentation. EncryptionKey (unless EncryptionSQSManaged) and
// AlarmTopic are required.
type Props struct {
	// QueueName is the physical name of the source queue (for example
	// config.Environment.PhysicalName("cola-mercadofresco-pedidos")). For a
	// FIFO queue ".fifo" is appended when missing. Default: a deterministic
	// name derived from the construct path (a physical name is needed so the
	// DLQ's redrive-allow policy can name its source without a cycle).
	QueueName *string
	// DeadLetterQueueName is the physical name of the DLQ. Default: the source
	// name with "-dlq" (before ".fifo" for FIFO queues).
	DeadLetterQueueName *string
	// Fifo makes the source a FIFO queue; its DLQ is then FIFO too (SQS
	// requires it and the guardrails check it).
	Fifo bool
	// ContentBasedDeduplication enables SHA-256 body deduplication on a FIFO
	// queue. Default false: producers send an explicit MessageDeduplicationId
	// derived from the domain (the same idempotency key the consumer uses).
	ContentBasedDeduplication bool
	// HighThroughputFifo sets DeduplicationScope=messageGroup and
	// FifoThroughputLimit=perMessageGroupId, so throughput scales with the
	// number of message groups (3,400 SKUs for stock movements) instead of
	// the 300 msg/s per-queue FIFO limit.
	HighThroughputFifo bool
	// Encryption selects the encryption at rest. Zero value: the data key.
	Encryption Encryption
	// EncryptionKey is the customer-managed data key (alias/mercadofresco-datos).
	// Required unless Encryption is EncryptionSQSManaged.
	EncryptionKey awskms.IKey
	// MaxReceiveCount is the number of receives before SQS moves a message to
	// the DLQ (1..1000). Default DefaultMaxReceiveCount (4). Set >= 5 where the
	// consumer can be throttled (AWS advice) and write the reason at the call
	// site.
	MaxReceiveCount float64
	// RetentionPeriod of the source queue. Default 4 days.
	RetentionPeriod awscdk.Duration
	// DeadLetterRetentionPeriod of the DLQ. Default 14 days. For standard
	// queues it must be longer than RetentionPeriod.
	DeadLetterRetentionPeriod awscdk.Duration
	// VisibilityTimeout of the source queue. Default: derived by AddConsumer
	// as VisibilityMultiplier x function timeout + batching window (30 s, the
	// SQS default, until a consumer is added). When set explicitly and lower
	// than that, synth fails naming both numbers.
	VisibilityTimeout awscdk.Duration
	// OldestMessageAgeThreshold is the ApproximateAgeOfOldestMessage alarm
	// threshold on the source queue. Default 3 h (see
	// DefaultOldestMessageAgeMinutes). Must be below RetentionPeriod, or the
	// alarm could only fire after messages were lost.
	OldestMessageAgeThreshold awscdk.Duration
	// AlarmTopic receives alarm AND ok actions (alertas-mercadofresco).
	// Required: an alarm nobody receives is not an alarm.
	AlarmTopic awssns.ITopic
	// RemovalPolicy of both queues: pass config.Environment.RemovalPolicy.
	// Mapped by removal.For: empty and SNAPSHOT mean RETAIN (queues hold
	// messages in flight and have no snapshots).
	RemovalPolicy awscdk.RemovalPolicy
}

// Queue is a source queue with its DLQ and alarms.
type Queue struct {
	constructs.Construct

	// Queue is the source queue.
	Queue awssqs.Queue
	// DeadLetterQueue receives messages after MaxReceiveCount receives.
	DeadLetterQueue awssqs.Queue
	// DeadLetterAlarm fires when the DLQ holds any visible message.
	DeadLetterAlarm awscloudwatch.Alarm
	// OldestMessageAlarm fires when the source's oldest message is too old.
	OldestMessageAlarm awscloudwatch.Alarm
	// MaxReceiveCount is the effective redrive maxReceiveCount.
	MaxReceiveCount float64
	// Fifo reports whether the queue (and its DLQ) are FIFO.
	Fifo bool
	// QueueName and DeadLetterQueueName are the physical names (literal
	// strings, usable where a token is not, e.g. to derive other names).
	QueueName           string
	DeadLetterQueueName string

	explicitVisibility float64 // seconds; 0 when derived from consumers
	derivedVisibility  float64 // seconds; max over consumers
}

// New creates a Queue. Invalid props do not panic: they add an error
// annotation so that synth fails with the message.
func New(scope constructs.Construct, id string, props *Props) *Queue {
	if props == nil {
		props = &Props{}
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	q := &Queue{Construct: c, Fifo: props.Fifo}
	fail := func(format string, a ...any) {
		awscdk.Annotations_Of(c).AddError(jsii.String(fmt.Sprintf("reliablequeue %s: %s", *c.Node().Path(), fmt.Sprintf(format, a...))))
	}

	q.MaxReceiveCount = props.MaxReceiveCount
	if q.MaxReceiveCount == 0 {
		q.MaxReceiveCount = DefaultMaxReceiveCount
	}
	if q.MaxReceiveCount < 1 || q.MaxReceiveCount > 1000 || q.MaxReceiveCount != math.Trunc(q.MaxReceiveCount) {
		fail("MaxReceiveCount must be an integer between 1 and 1000, got %v", props.MaxReceiveCount)
		q.MaxReceiveCount = DefaultMaxReceiveCount
	}

	retention := durationOr(props.RetentionPeriod, awscdk.Duration_Days(jsii.Number(DefaultRetentionDays)))
	dlqRetention := durationOr(props.DeadLetterRetentionPeriod, awscdk.Duration_Days(jsii.Number(DefaultDeadLetterRetentionDays)))
	ageThreshold := durationOr(props.OldestMessageAgeThreshold, awscdk.Duration_Minutes(jsii.Number(DefaultOldestMessageAgeMinutes)))
	retentionS, err1 := Seconds(retention)
	dlqRetentionS, err2 := Seconds(dlqRetention)
	ageS, err3 := Seconds(ageThreshold)
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			fail("%v", err)
		}
	}
	if !props.Fifo && err1 == nil && err2 == nil && dlqRetentionS <= retentionS {
		fail("DeadLetterRetentionPeriod (%.0f s) must be longer than RetentionPeriod (%.0f s): a standard queue's message keeps its enqueue time in the DLQ and would expire there almost at once", dlqRetentionS, retentionS)
	}
	if err1 == nil && err3 == nil && ageS >= retentionS {
		fail("OldestMessageAgeThreshold (%.0f s) must be below RetentionPeriod (%.0f s), otherwise messages expire before the alarm fires", ageS, retentionS)
	}
	if props.VisibilityTimeout != nil {
		v, err := Seconds(props.VisibilityTimeout)
		if err != nil {
			fail("%v", err)
		} else {
			q.explicitVisibility = v
		}
	}

	encryption, key := awssqs.QueueEncryption_SQS_MANAGED, awskms.IKey(nil)
	switch props.Encryption {
	case EncryptionDataKey:
		if props.EncryptionKey == nil {
			fail("EncryptionKey is required: queues carry order data by default and are encrypted with the data key alias/mercadofresco-datos (set Encryption: EncryptionSQSManaged only for queues without order or payment data)")
		} else {
			encryption, key = awssqs.QueueEncryption_KMS, props.EncryptionKey
		}
	case EncryptionSQSManaged:
		if props.EncryptionKey != nil {
			fail("EncryptionKey is set but Encryption is EncryptionSQSManaged; choose one")
		}
	default:
		fail("unknown Encryption %d", props.Encryption)
	}
	if props.AlarmTopic == nil {
		fail("AlarmTopic is required (alertas-mercadofresco): the DLQ and age alarms must notify someone")
	}
	if !props.Fifo && (props.ContentBasedDeduplication || props.HighThroughputFifo) {
		fail("ContentBasedDeduplication and HighThroughputFifo apply only to FIFO queues")
	}

	sourceName := queueName(c, props.QueueName, props.Fifo, "")
	dlqName := queueName(c, jsii.String(sourceName), props.Fifo, "-dlq")
	if props.DeadLetterQueueName != nil {
		dlqName = queueName(c, props.DeadLetterQueueName, props.Fifo, "")
	}
	q.QueueName, q.DeadLetterQueueName = sourceName, dlqName
	for _, n := range []string{sourceName, dlqName} {
		if len(n) > maxQueueNameLength {
			fail("queue name %q is longer than %d characters", n, maxQueueNameLength)
		}
	}
	if props.QueueName != nil && !props.Fifo && strings.HasSuffix(*props.QueueName, fifoSuffix) {
		fail("queue name %q ends in .fifo but Fifo is false", *props.QueueName)
	}

	common := func(name string, ret awscdk.Duration) *awssqs.QueueProps {
		p := &awssqs.QueueProps{
			QueueName:       jsii.String(name),
			RetentionPeriod: ret,
			EnforceSSL:      jsii.Bool(true),
			Encryption:      encryption,
			RemovalPolicy:   removal.For(props.RemovalPolicy, removal.Data),
		}
		if key != nil {
			p.EncryptionMasterKey = key
			p.DataKeyReuse = awscdk.Duration_Minutes(jsii.Number(DefaultDataKeyReuseMinutes))
		}
		if props.Fifo {
			p.Fifo = jsii.Bool(true)
			p.ContentBasedDeduplication = jsii.Bool(props.ContentBasedDeduplication)
			if props.HighThroughputFifo {
				p.DeduplicationScope = awssqs.DeduplicationScope_MESSAGE_GROUP
				p.FifoThroughputLimit = awssqs.FifoThroughputLimit_PER_MESSAGE_GROUP_ID
			}
		}
		return p
	}

	// The DLQ is created first because the source's redrive policy points at
	// it. Its redrive-allow policy names the source by ARN built from the
	// source's physical name (not a reference) to avoid a CloudFormation
	// dependency cycle.
	stack := awscdk.Stack_Of(c)
	sourceArn := stack.FormatArn(&awscdk.ArnComponents{
		Service:   jsii.String("sqs"),
		Resource:  jsii.String(sourceName),
		ArnFormat: awscdk.ArnFormat_NO_RESOURCE_NAME,
	})
	dlqProps := common(dlqName, dlqRetention)
	q.DeadLetterQueue = awssqs.NewQueue(c, jsii.String("DeadLetterQueue"), dlqProps)
	q.DeadLetterQueue.Node().DefaultChild().(awssqs.CfnQueue).SetRedriveAllowPolicy(map[string]any{
		"redrivePermission": "byQueue",
		"sourceQueueArns":   []any{sourceArn},
	})

	srcProps := common(sourceName, retention)
	srcProps.DeadLetterQueue = &awssqs.DeadLetterQueue{
		Queue:           q.DeadLetterQueue,
		MaxReceiveCount: jsii.Number(q.MaxReceiveCount),
	}
	if q.explicitVisibility > 0 {
		srcProps.VisibilityTimeout = props.VisibilityTimeout
	}
	q.Queue = awssqs.NewQueue(c, jsii.String("Queue"), srcProps)
	producers.ForQueue(q.DeadLetterQueue)
	producers.ForQueue(q.Queue)

	q.DeadLetterAlarm = NewDeadLetterAlarm(c, "DeadLetterAlarm", q.DeadLetterQueue, props.AlarmTopic,
		fmt.Sprintf("DLQ %s of %s has messages: paid work that was not done. Runbook: docs/runbooks/dlq.md. Start with: mf-dlq contain %s, then mf-dlq classify %s (never delete to look; no redrive before the fix).", dlqName, sourceName, dlqName, dlqName))

	q.OldestMessageAlarm = alarm.New(c, "OldestMessageAlarm", &alarm.Props{
		Metric: q.Queue.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{
			Period:    awscdk.Duration_Minutes(jsii.Number(5)),
			Statistic: jsii.String("Maximum"),
		}),
		Topic:     props.AlarmTopic,
		Threshold: ageS,
		// No data means no messages (SQS publishes the metric for active
		// queues only); that is healthy.
		MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
		Description: fmt.Sprintf("Oldest message in %s is older than %.0f s: the consumer is stopped, failing or throttled. Messages expire after %.0f s.", sourceName, ageS, retentionS),
	})
	return q
}

// NewDeadLetterAlarm creates the DLQ health alarm of the lesson:
// ApproximateNumberOfMessagesVisible > 0 (Maximum over 5 minutes, one
// datapoint), missing data not breaching, alarm AND ok actions to topic.
// It is exported so DLQs made elsewhere (SNS subscriptions, EventBridge
// targets, pipes) get the same alarm.
func NewDeadLetterAlarm(scope constructs.Construct, id string, dlq awssqs.IQueue, topic awssns.ITopic, description string) awscloudwatch.Alarm {
	return alarm.New(scope, id, &alarm.Props{
		Metric: dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period:    awscdk.Duration_Minutes(jsii.Number(5)),
			Statistic: jsii.String("Maximum"),
		}),
		Topic:       topic,
		Threshold:   0,
		MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING, // an empty DLQ reports nothing
		Description: description,
	})
}

// GrantConsumeMessages grants receive, delete, change-visibility and
// get-attributes on the source queue, and kms:Decrypt on the data key
// through SQS only (kms:ViaService sqs.<region>.amazonaws.com: the grant
// decrypts the messages SQS hands over, never other ciphertext).
func (q *Queue) GrantConsumeMessages(grantee awsiam.IGrantable) awsiam.Grant {
	return grantConsume(q.Queue, grantee)
}

// GrantSendMessages grants sqs:SendMessage on the source queue and, for a
// KMS-encrypted queue, exactly kms:GenerateDataKey and kms:Decrypt on the
// key through SQS only (what an SSE-KMS producer needs; the CDK's own
// grant adds kms:ReEncrypt* and kms:GenerateDataKey* wildcards, for any
// caller of KMS), and admits grantee's role to the queue's producer guard.
// A grantee in a stack that references this queue's stack is admitted by
// name instead (producers.ForQueue(q.Queue).AdmitRoleName): a reference
// back would be a cycle.
func (q *Queue) GrantSendMessages(grantee awsiam.IGrantable) awsiam.Grant {
	producers.ForQueue(q.Queue).AdmitGrantable(grantee)
	return grantSend(q.Queue, grantee)
}

// GrantSendToDeadLetterQueue grants send on the DLQ (as GrantSendMessages)
// and admits grantee's role to the DLQ's guard. A consumer that classifies
// a message as poison sends it to the DLQ itself (with the failure reason
// as message attributes) before deleting it.
func (q *Queue) GrantSendToDeadLetterQueue(grantee awsiam.IGrantable) awsiam.Grant {
	producers.ForQueue(q.DeadLetterQueue).AdmitGrantable(grantee)
	return grantSend(q.DeadLetterQueue, grantee)
}

// AdmitRedriver admits roleArn (the on-call's role,
// config.Environment.RoleArn of Roles.Operator) as a producer of the source
// queue: the DLQ runbook's redrive (cmd/mf-dlq redrive, its loop and SQS's
// move task alike) sends the DLQ's messages back there as that role. The
// role's IAM permissions come from the account's identity setup; this only
// lets them through the guard. An empty roleArn admits nobody.
func (q *Queue) AdmitRedriver(roleArn string) {
	if roleArn == "" {
		return
	}
	producers.ForQueue(q.Queue).AdmitRoleArn(roleArn)
}

func grantSend(queue awssqs.IQueue, grantee awsiam.IGrantable) awsiam.Grant {
	g := queue.Grant(grantee, jsii.String("sqs:SendMessage"), jsii.String("sqs:GetQueueAttributes"), jsii.String("sqs:GetQueueUrl"))
	if key := queue.EncryptionMasterKey(); key != nil {
		g = g.Combine(core.GrantKey(key, grantee, "sqs", "kms:GenerateDataKey", "kms:Decrypt"))
	}
	return g
}

// grantConsume is what awssqs.Queue.GrantConsumeMessages grants, with the
// key's kms:Decrypt through SQS only.
func grantConsume(queue awssqs.IQueue, grantee awsiam.IGrantable) awsiam.Grant {
	g := queue.Grant(grantee, jsii.String("sqs:ReceiveMessage"), jsii.String("sqs:ChangeMessageVisibility"),
		jsii.String("sqs:GetQueueUrl"), jsii.String("sqs:DeleteMessage"), jsii.String("sqs:GetQueueAttributes"))
	if key := queue.EncryptionMasterKey(); key != nil {
		g = g.Combine(core.GrantKey(key, grantee, "sqs", "kms:Decrypt"))
	}
	return g
}

// GrantKeyThroughSQS grants actions on the key of queue (if it has one)
// through SQS only: for producers and consumers granted outside this
// package (a pipe's DLQ).
func GrantKeyThroughSQS(queue awssqs.IQueue, grantee awsiam.IGrantable, actions ...string) awsiam.Grant {
	return core.GrantKey(queue.EncryptionMasterKey(), grantee, "sqs", actions...)
}

// MetricApproximateAgeOfOldestMessage is the age of the source's oldest
// message (runbook step 1: is the problem still live?).
func (q *Queue) MetricApproximateAgeOfOldestMessage(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return q.Queue.MetricApproximateAgeOfOldestMessage(opts)
}

// MetricDeadLetterMessagesVisible is the DLQ depth.
func (q *Queue) MetricDeadLetterMessagesVisible(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return q.DeadLetterQueue.MetricApproximateNumberOfMessagesVisible(opts)
}

// VisibilityTimeoutSeconds is the effective visibility timeout: the explicit
// value, else the largest value derived from the consumers, else 30 (SQS
// default).
func (q *Queue) VisibilityTimeoutSeconds() float64 {
	switch {
	case q.explicitVisibility > 0:
		return q.explicitVisibility
	case q.derivedVisibility > 0:
		return q.derivedVisibility
	default:
		return 30
	}
}

// Seconds converts a literal Duration to seconds without panicking on
// unresolved tokens or fractional values.
func Seconds(d awscdk.Duration) (secs float64, err error) {
	if d == nil {
		return 0, fmt.Errorf("duration is nil")
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("duration %v cannot be converted to seconds: %v", *d.ToHumanString(), r)
		}
	}()
	return *d.ToSeconds(&awscdk.TimeConversionOptions{Integral: jsii.Bool(false)}), nil
}

func durationOr(d, def awscdk.Duration) awscdk.Duration {
	if d == nil {
		return def
	}
	return d
}

// queueName returns the physical name: the given one (with suffix and
// ".fifo" applied), or a deterministic one from the construct path.
func queueName(c constructs.Construct, name *string, fifo bool, suffix string) string {
	var base string
	if name != nil {
		base = strings.TrimSuffix(*name, fifoSuffix)
	} else {
		base = *awscdk.Names_UniqueResourceName(c, &awscdk.UniqueResourceNameOptions{
			MaxLength: jsii.Number(maxQueueNameLength - len(fifoSuffix) - 4),
		})
	}
	base += suffix
	if fifo {
		base += fifoSuffix
	}
	return base
}
