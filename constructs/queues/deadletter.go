package queues

import (
	"cmp"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/observability"
)

// DeadLetterQueueProps configures a standalone DLQ: the dead-letter target
// of something that is not an SQS queue (an SNS subscription, a rule
// target, a pipe). The zero value is safe as Props is: the data key
// (Context.DataKey required; the source service must be able to use it),
// 14-day retention, TLS only, an alarm to Context.Alerts (required).
type DeadLetterQueueProps struct {
	core.Context
	// QueueName is the physical name. Nil lets CloudFormation name it.
	QueueName *string
	// Fifo makes it a FIFO queue (the DLQ of a FIFO subscription must be FIFO).
	Fifo bool
	// Encryption: as in Props.
	Encryption Encryption
	// RetentionPeriod. Default 14 days (the SQS maximum).
	RetentionPeriod awscdk.Duration
	// Source says what dead-letters into this queue, for the alarm's
	// description and the cdk-nag acknowledgement. Required.
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
// carries a known-producers guard (constructs/queues) that admits
// nobody: whoever wires the source admits it
// (queues.ForQueue(d.Queue).AdmitTopic, AdmitRule, AdmitRole).
func NewDeadLetterQueue(scope constructs.Construct, id string, props *DeadLetterQueueProps) *DeadLetterQueue {
	c, v, props := core.Begin(scope, id, "queues.NewDeadLetterQueue", props)
	d := &DeadLetterQueue{Construct: c}
	v.If(props.Source == "", "Source is required: say what dead-letters into this queue")
	props.Require(v, core.Alerts)
	qp := &awssqs.QueueProps{
		QueueName:       props.QueueName,
		RetentionPeriod: cmp.Or(props.RetentionPeriod, awscdk.Duration_Days(jsii.Number(DefaultDeadLetterRetentionDays))),
		EnforceSSL:      jsii.Bool(true),
		RemovalPolicy:   observability.RemovalFor(props.RemovalPolicy, observability.Data),
		// denyAll: see the function comment.
		RedriveAllowPolicy: &awssqs.RedriveAllowPolicy{RedrivePermission: awssqs.RedrivePermission_DENY_ALL},
	}
	if props.QueueName != nil && props.Fifo {
		qp.QueueName = jsii.String(queueName(c, props.QueueName, true, ""))
	}
	if props.Fifo {
		qp.Fifo = jsii.Bool(true)
	}
	encrypt(qp, v, props.Encryption, props.DataKey, "dead-lettered messages carry the source's order data")
	d.Queue = awssqs.NewQueue(c, jsii.String("Queue"), qp)
	ForQueue(d.Queue)
	d.Alarm = NewDeadLetterAlarm(c, "Alarm", d.Queue, props.Alerts,
		fmt.Sprintf("Dead-letter queue of %s has messages: deliveries that never reached their consumer. Runbook: docs/runbooks/dlq.md (mf-dlq inspect and classify work on this queue; SQS cannot redrive it to a non-SQS source).", props.Source))
	title := ""
	if qp.QueueName != nil {
		title = *qp.QueueName
	}
	contributeDeadLetter(props.Dashboard, title, d.Queue)
	core.AcknowledgeNag(d.Queue, true, "AwsSolutions-SQS3", fmt.Sprintf("This queue IS a dead-letter queue (of the %s); cdk-nag only recognises DLQs referenced by an SQS redrive policy. A DLQ of a DLQ would hide failures: it has its own alarm (ApproximateNumberOfMessagesVisible > 0) instead.", props.Source))
	return d
}

// GrantConsumeMessages lets an operator tool read (and delete)
// dead-lettered messages (the key's kms:Decrypt through SQS only).
func (d *DeadLetterQueue) GrantConsumeMessages(grantee awsiam.IGrantable) awsiam.Grant {
	return grantConsume(d.Queue, grantee)
}
