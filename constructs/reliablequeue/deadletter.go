package reliablequeue

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
	"github.com/mercadofresco/integration/constructs/producers"
	"github.com/mercadofresco/integration/constructs/removal"
)

// DeadLetterQueueProps configures a standalone DLQ: the dead-letter target of
// something that is not an SQS queue (an SNS subscription, an EventBridge
// rule target, a pipe). The zero value is safe in the same way as Props:
// data-key encryption (EncryptionKey required), 14-day retention, TLS only,
// an alarm to AlarmTopic (required).
type DeadLetterQueueProps struct {
	// QueueName is the physical name. Nil lets CloudFormation name it.
	QueueName *string
	// Fifo makes it a FIFO queue (the DLQ of a FIFO subscription must be FIFO).
	Fifo bool
	// Encryption and EncryptionKey: as in Props. The source service must be
	// able to use the key (the platform data key's policy admits SNS and
	// EventBridge).
	Encryption    Encryption
	EncryptionKey awskms.IKey
	// RetentionPeriod. Default 14 days (the SQS maximum).
	RetentionPeriod awscdk.Duration
	// AlarmTopic receives the DLQ alarm's alarm and ok actions. Required.
	AlarmTopic awssns.ITopic
	// RemovalPolicy of the queue: the environment's policy, mapped by
	// removal.For (empty and SNAPSHOT mean RETAIN).
	RemovalPolicy awscdk.RemovalPolicy
	// Source says what dead-letters into this queue ("SNS subscription of
	// cola-mercadofresco-pedidos to mercadofresco-pedido-confirmado"). It is
	// written into the alarm description and the cdk-nag acknowledgement.
	// Required.
	Source string
}

// DeadLetterQueue is a standalone DLQ with its alarm.
type DeadLetterQueue struct {
	constructs.Construct
	// Queue is the DLQ.
	Queue awssqs.Queue
	// Alarm fires when the DLQ holds any visible message.
	Alarm awscloudwatch.Alarm
}

// NewDeadLetterQueue creates a standalone DLQ. Its redrive-allow policy is
// denyAll: it belongs to a non-SQS source, so no SQS queue may adopt it as
// its own DLQ (that would mix two failure streams in one runbook). It
// carries a known-producers guard (constructs/producers) that admits
// nobody: whoever wires the source admits it
// (producers.ForQueue(d.Queue).AdmitTopic, AdmitRule, AdmitRole).
func NewDeadLetterQueue(scope constructs.Construct, id string, props *DeadLetterQueueProps) *DeadLetterQueue {
	if props == nil {
		props = &DeadLetterQueueProps{}
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	d := &DeadLetterQueue{Construct: c}
	fail := func(format string, a ...any) {
		awscdk.Annotations_Of(c).AddError(jsii.String(fmt.Sprintf("reliablequeue.NewDeadLetterQueue %s: %s", *c.Node().Path(), fmt.Sprintf(format, a...))))
	}
	if props.Source == "" {
		fail("Source is required: say what dead-letters into this queue")
	}
	if props.AlarmTopic == nil {
		fail("AlarmTopic is required (alertas-mercadofresco)")
	}
	qp := &awssqs.QueueProps{
		QueueName:       props.QueueName,
		RetentionPeriod: durationOr(props.RetentionPeriod, awscdk.Duration_Days(jsii.Number(DefaultDeadLetterRetentionDays))),
		EnforceSSL:      jsii.Bool(true),
		RemovalPolicy:   removal.For(props.RemovalPolicy, removal.Data),
		// denyAll: see the function comment.
		RedriveAllowPolicy: &awssqs.RedriveAllowPolicy{RedrivePermission: awssqs.RedrivePermission_DENY_ALL},
	}
	if props.QueueName != nil && props.Fifo {
		qp.QueueName = jsii.String(queueName(c, props.QueueName, true, ""))
	}
	if props.Fifo {
		qp.Fifo = jsii.Bool(true)
	}
	switch props.Encryption {
	case EncryptionDataKey:
		if props.EncryptionKey == nil {
			fail("EncryptionKey is required: dead-lettered messages carry the same order data as the source (alias/mercadofresco-datos)")
			qp.Encryption = awssqs.QueueEncryption_SQS_MANAGED
		} else {
			qp.Encryption = awssqs.QueueEncryption_KMS
			qp.EncryptionMasterKey = props.EncryptionKey
			qp.DataKeyReuse = awscdk.Duration_Minutes(jsii.Number(DefaultDataKeyReuseMinutes))
		}
	case EncryptionSQSManaged:
		qp.Encryption = awssqs.QueueEncryption_SQS_MANAGED
	default:
		fail("unknown Encryption %d", props.Encryption)
	}
	d.Queue = awssqs.NewQueue(c, jsii.String("Queue"), qp)
	producers.ForQueue(d.Queue)
	d.Alarm = NewDeadLetterAlarm(c, "Alarm", d.Queue, props.AlarmTopic,
		fmt.Sprintf("Dead-letter queue of %s has messages: deliveries that never reached their consumer. Runbook: docs/runbooks/dlq.md (mf-dlq inspect and classify work on this queue; SQS cannot redrive it to a non-SQS source).", props.Source))
	cdknag.NagSuppressions_AddResourceSuppressions(d.Queue, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-SQS3"),
		Reason: jsii.String(fmt.Sprintf("This queue IS a dead-letter queue (of the %s); cdk-nag only recognises DLQs referenced by an SQS redrive policy. A DLQ of a DLQ would hide failures: it has its own alarm (ApproximateNumberOfMessagesVisible > 0) instead.",
			props.Source)),
	}}, jsii.Bool(true))
	return d
}

// GrantConsumeMessages lets an operator tool read (and delete)
// dead-lettered messages (the key's kms:Decrypt through SQS only).
func (d *DeadLetterQueue) GrantConsumeMessages(grantee awsiam.IGrantable) awsiam.Grant {
	return grantConsume(d.Queue, grantee)
}
