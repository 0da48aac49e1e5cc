// Package queues is the app's SQS queues and what drains them: a queue
// safe by default with its dead-letter queue, redrive, encryption, TLS and
// the DLQ runbook's alarms (NewQueue; docs/design.md#queue-receives,
// #visibility-timeout, #retention, #age-alarm, #dlq-alarm); a queue and the
// Go Lambda that drains it as one construct (NewConsumer;
// #consumer-ceilings); the four consumers of the order flow (NewPreparacion,
// NewCorreo, NewAvisoERP, NewMovimientosStock; #replay-windows); and the
// known-producers guard of every queue, topic and bus (ForQueue, ForTopic,
// ForBus; docs/design.md#producers).
package queues

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/observability"
)

// Defaults applied when the corresponding Props field is left at its zero
// value (docs/design.md#queue-receives, #retention, #age-alarm).
const (
	// DefaultMaxReceiveCount: 2 SDK attempts x 4 receives = 8 calls, within
	// the 15 of docs/design.md#retry-layers.
	DefaultMaxReceiveCount = 4
	// DefaultRetentionDays is the source queue's retention.
	DefaultRetentionDays = 4
	// DefaultDeadLetterRetentionDays is the DLQ's retention (the SQS
	// maximum); it must exceed the source's.
	DefaultDeadLetterRetentionDays = 14
	// DefaultOldestMessageAgeMinutes is the age alarm's threshold (3 h).
	DefaultOldestMessageAgeMinutes = 180
	// DefaultDataKeyReuseMinutes is how long SQS reuses a KMS data key (the
	// SQS default, 5 min).
	DefaultDataKeyReuseMinutes = 5

	maxQueueNameLength = 80
	fifoSuffix         = ".fifo"
)

// Encryption selects how a queue (and its DLQ) is encrypted at rest.
type Encryption int

const (
	// EncryptionDataKey (the zero value) encrypts with Context.DataKey: for
	// every queue that carries order or payment data (the key policy then
	// decides who reads, and CloudTrail records every decrypt).
	EncryptionDataKey Encryption = iota
	// EncryptionSQSManaged is SSE-SQS: only for queues without customer,
	// order or payment data, or that must work while the data key does not.
	EncryptionSQSManaged
)

// QueueProps configures a Queue. The zero value is the safe default; the
// Context's DataKey (unless EncryptionSQSManaged) and Alerts are required.
type QueueProps struct {
	core.Context
	// QueueName is the source's physical name; ".fifo" is appended to a
	// FIFO queue's. Nil: a deterministic name from the construct path (the
	// DLQ's redrive-allow policy names its source without a cycle).
	QueueName *string
	// DeadLetterQueueName is the DLQ's. Nil: the source's with "-dlq"
	// (before ".fifo").
	DeadLetterQueueName *string
	// Fifo makes both queues FIFO.
	Fifo bool
	// ContentBasedDeduplication (FIFO only). Default false: producers send
	// a MessageDeduplicationId derived from the domain.
	ContentBasedDeduplication bool
	// HighThroughputFifo scales a FIFO queue per message group
	// (DeduplicationScope messageGroup, FifoThroughputLimit perMessageGroupId).
	HighThroughputFifo bool
	// Encryption at rest. Zero value: the data key.
	Encryption Encryption
	// MaxReceiveCount before a message moves to the DLQ (1..1000). Zero
	// means DefaultMaxReceiveCount; set >= 5 where the consumer can be
	// throttled and say why at the call site.
	MaxReceiveCount float64
	// RetentionPeriod of the source (default 4 days) and
	// DeadLetterRetentionPeriod of the DLQ (default 14 days, longer than
	// the source's for a standard queue).
	RetentionPeriod, DeadLetterRetentionPeriod awscdk.Duration
	// VisibilityTimeout of the source. Nil: derived by AddConsumer (30 s,
	// the SQS default, until a consumer is added). Set below what a
	// consumer needs, synthesis fails naming both numbers.
	VisibilityTimeout awscdk.Duration
	// OldestMessageAgeThreshold of the age alarm, below RetentionPeriod.
	// Nil means 3 h.
	OldestMessageAgeThreshold awscdk.Duration
}

// Queue is a source queue with its DLQ and alarms. The zero value of
// QueueProps is the safe configuration: a standard queue encrypted with
// Context.DataKey, maxReceiveCount 4, 4 days of retention, a 14-day DLQ, an
// age alarm at 3 h; DataKey and Alerts are required. AddConsumer derives
// the visibility timeout from the function's timeout (at least
// checks.VisibilityMultiplier times), so a message cannot become visible again
// while its first delivery runs.
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
	QueueName, DeadLetterQueueName string

	explicitVisibility float64 // seconds; 0 when derived from consumers
	derivedVisibility  float64 // seconds; max over consumers
}

// NewQueue creates a Queue. Invalid props are synthesis errors, every one of
// them.
func NewQueue(scope constructs.Construct, id string, props *QueueProps) *Queue {
	c, v, props := core.Begin(scope, id, "reliablequeue", props)
	q := &Queue{Construct: c, Fifo: props.Fifo}
	props.Require(v, core.Alerts)
	q.MaxReceiveCount = v.Count("MaxReceiveCount", props.MaxReceiveCount, DefaultMaxReceiveCount, 1, 1000)

	retention := cmp.Or(props.RetentionPeriod, awscdk.Duration_Days(jsii.Number(DefaultRetentionDays)))
	dlqRetention := cmp.Or(props.DeadLetterRetentionPeriod, awscdk.Duration_Days(jsii.Number(DefaultDeadLetterRetentionDays)))
	ageThreshold := cmp.Or(props.OldestMessageAgeThreshold, awscdk.Duration_Minutes(jsii.Number(DefaultOldestMessageAgeMinutes)))
	retentionS, err1 := core.Seconds(retention)
	dlqRetentionS, err2 := core.Seconds(dlqRetention)
	ageS, err3 := core.Seconds(ageThreshold)
	for _, err := range []error{err1, err2, err3} {
		v.If(err != nil, "%v", err)
	}
	v.If(!props.Fifo && err1 == nil && err2 == nil && dlqRetentionS <= retentionS,
		"DeadLetterRetentionPeriod (%.0f s) must be longer than RetentionPeriod (%.0f s): a standard queue's message keeps its enqueue time in the DLQ (docs/design.md#retention)", dlqRetentionS, retentionS)
	v.If(err1 == nil && err3 == nil && ageS >= retentionS,
		"OldestMessageAgeThreshold (%.0f s) must be below RetentionPeriod (%.0f s), or messages expire before the alarm fires", ageS, retentionS)
	if props.VisibilityTimeout != nil {
		s, err := core.Seconds(props.VisibilityTimeout)
		if !v.If(err != nil, "%v", err) {
			q.explicitVisibility = s
		}
	}

	encrypted := &awssqs.QueueProps{}
	encrypt(encrypted, v, props.Encryption, props.DataKey, "queues carry order data (EncryptionSQSManaged only for queues without it)")
	v.If(!props.Fifo && (props.ContentBasedDeduplication || props.HighThroughputFifo), "ContentBasedDeduplication and HighThroughputFifo apply only to FIFO queues")

	sourceName := queueName(c, props.QueueName, props.Fifo, "")
	dlqName := queueName(c, jsii.String(sourceName), props.Fifo, "-dlq")
	if props.DeadLetterQueueName != nil {
		dlqName = queueName(c, props.DeadLetterQueueName, props.Fifo, "")
	}
	q.QueueName, q.DeadLetterQueueName = sourceName, dlqName
	for _, n := range []string{sourceName, dlqName} {
		v.If(len(n) > maxQueueNameLength, "queue name %q is longer than %d characters", n, maxQueueNameLength)
	}
	if props.QueueName != nil {
		v.If(!props.Fifo && strings.HasSuffix(*props.QueueName, fifoSuffix), "queue name %q ends in .fifo but Fifo is false", *props.QueueName)
	}

	common := func(name string, ret awscdk.Duration) *awssqs.QueueProps {
		p := &awssqs.QueueProps{
			QueueName:           jsii.String(name),
			RetentionPeriod:     ret,
			EnforceSSL:          jsii.Bool(true),
			Encryption:          encrypted.Encryption,
			EncryptionMasterKey: encrypted.EncryptionMasterKey,
			DataKeyReuse:        encrypted.DataKeyReuse,
			RemovalPolicy:       observability.RemovalFor(props.RemovalPolicy, observability.Data),
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

	// The DLQ first: the source's redrive policy points at it. Its
	// redrive-allow policy names the source by an ARN built from the
	// source's physical name (a reference would be a cycle).
	sourceArn := awscdk.Stack_Of(c).FormatArn(&awscdk.ArnComponents{
		Service:   jsii.String("sqs"),
		Resource:  jsii.String(sourceName),
		ArnFormat: awscdk.ArnFormat_NO_RESOURCE_NAME,
	})
	q.DeadLetterQueue = awssqs.NewQueue(c, jsii.String("DeadLetterQueue"), common(dlqName, dlqRetention))
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
	ForQueue(q.DeadLetterQueue)
	ForQueue(q.Queue)

	q.DeadLetterAlarm = NewDeadLetterAlarm(c, "DeadLetterAlarm", q.DeadLetterQueue, props.Alerts,
		fmt.Sprintf("DLQ %s of %s has messages: paid work that was not done. Runbook: docs/runbooks/dlq.md. Start with: mf-dlq contain %s, then mf-dlq classify %s (never delete to look; no redrive before the fix).", dlqName, sourceName, dlqName, dlqName))

	q.OldestMessageAlarm = observability.NewAlarm(c, "OldestMessageAlarm", &observability.AlarmProps{
		Metric:    q.Queue.MetricApproximateAgeOfOldestMessage(observability.Per5Min("Maximum")),
		Topic:     props.Alerts,
		Threshold: ageS,
		// No data means no messages (SQS publishes the metric for active
		// queues only); that is healthy.
		MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
		Description: fmt.Sprintf("Oldest message in %s is older than %.0f s: the consumer is stopped, failing or throttled. Messages expire after %.0f s.", sourceName, ageS, retentionS),
	})
	q.contribute(props.Dashboard, ageS)
	return q
}

// encrypt sets p's encryption as e says, with key (the data key, reused by
// SQS for DefaultDataKeyReuseMinutes), reporting a missing key (why the
// queue needs it) or a key that SSE-SQS would ignore.
func encrypt(p *awssqs.QueueProps, v *core.Problems, e Encryption, key awskms.IKey, why string) {
	p.Encryption = awssqs.QueueEncryption_SQS_MANAGED
	switch e {
	case EncryptionDataKey:
		if !v.If(key == nil, "DataKey is required: %s, encrypted with alias/mercadofresco-datos", why) {
			p.Encryption, p.EncryptionMasterKey = awssqs.QueueEncryption_KMS, key
			p.DataKeyReuse = awscdk.Duration_Minutes(jsii.Number(DefaultDataKeyReuseMinutes))
		}
	case EncryptionSQSManaged:
		v.If(key != nil, "DataKey is set but Encryption is EncryptionSQSManaged; choose one")
	default:
		v.Addf("unknown Encryption %d", e)
	}
}

// NewDeadLetterAlarm creates the DLQ alarm of docs/design.md#dlq-alarm:
// ApproximateNumberOfMessagesVisible > 0 (Maximum over 5 minutes),
// missing data not breaching, ALARM and OK to topic. For DLQs made
// elsewhere too (SNS subscriptions, rule targets, pipes).
func NewDeadLetterAlarm(scope constructs.Construct, id string, dlq awssqs.IQueue, topic awssns.ITopic, description string) awscloudwatch.Alarm {
	return observability.NewAnyAlarm(scope, id, dlq.MetricApproximateNumberOfMessagesVisible(observability.Per5Min("Maximum")), topic, description)
}

// GrantConsumeMessages grants receive, delete, change-visibility and
// get-attributes on the source queue, and kms:Decrypt on its key through
// SQS only (core.GrantKey).
func (q *Queue) GrantConsumeMessages(grantee awsiam.IGrantable) awsiam.Grant {
	return grantConsume(q.Queue, grantee)
}

// GrantSendMessages grants sqs:SendMessage on the source queue and, for a
// KMS-encrypted queue, exactly kms:GenerateDataKey and kms:Decrypt through
// SQS only (the CDK's own grant adds kms:ReEncrypt* and
// kms:GenerateDataKey* for any caller of KMS), and admits grantee's role to
// the queue's producer guard. A grantee in a stack that references this
// one is admitted by name instead (queues.ForQueue(q.Queue).AdmitRoleName).
func (q *Queue) GrantSendMessages(grantee awsiam.IGrantable) awsiam.Grant {
	ForQueue(q.Queue).AdmitGrantable(grantee)
	return grantSend(q.Queue, grantee)
}

// GrantSendToDeadLetterQueue grants send on the DLQ (as GrantSendMessages)
// and admits grantee to the DLQ's guard: a consumer sends a poison message
// to the DLQ itself, with the failure reason, before deleting it.
func (q *Queue) GrantSendToDeadLetterQueue(grantee awsiam.IGrantable) awsiam.Grant {
	ForQueue(q.DeadLetterQueue).AdmitGrantable(grantee)
	return grantSend(q.DeadLetterQueue, grantee)
}

// AdmitRedriver admits roleArn (the on-call's role, config Roles.Operator)
// as a producer of the source queue, for the DLQ runbook's redrive (its
// IAM permissions come from the account's identity setup). An empty
// roleArn admits nobody.
func (q *Queue) AdmitRedriver(roleArn string) {
	if roleArn == "" {
		return
	}
	ForQueue(q.Queue).AdmitRoleArn(roleArn)
}

func grantSend(queue awssqs.IQueue, grantee awsiam.IGrantable) awsiam.Grant {
	g := queue.Grant(grantee, jsii.String("sqs:SendMessage"), jsii.String("sqs:GetQueueAttributes"), jsii.String("sqs:GetQueueUrl"))
	return withKey(g, queue, grantee, "kms:GenerateDataKey", "kms:Decrypt")
}

// grantConsume is what awssqs.Queue.GrantConsumeMessages grants, with the
// key's kms:Decrypt through SQS only.
func grantConsume(queue awssqs.IQueue, grantee awsiam.IGrantable) awsiam.Grant {
	g := queue.Grant(grantee, jsii.String("sqs:ReceiveMessage"), jsii.String("sqs:ChangeMessageVisibility"),
		jsii.String("sqs:GetQueueUrl"), jsii.String("sqs:DeleteMessage"), jsii.String("sqs:GetQueueAttributes"))
	return withKey(g, queue, grantee, "kms:Decrypt")
}

// withKey adds to g the key's actions through SQS, for an encrypted queue.
func withKey(g awsiam.Grant, queue awssqs.IQueue, grantee awsiam.IGrantable, actions ...string) awsiam.Grant {
	if queue.EncryptionMasterKey() == nil {
		return g
	}
	return g.Combine(GrantKeyThroughSQS(queue, grantee, actions...))
}

// GrantKeyThroughSQS grants actions on the key of queue (if it has one)
// through SQS only: for producers and consumers granted outside this
// package (a pipe's DLQ).
func GrantKeyThroughSQS(queue awssqs.IQueue, grantee awsiam.IGrantable, actions ...string) awsiam.Grant {
	return core.GrantKey(queue.EncryptionMasterKey(), grantee, "sqs", actions...)
}

// VisibilityTimeoutSeconds is the effective visibility timeout: the
// explicit value, else the largest derived from the consumers, else 30
// (the SQS default).
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
