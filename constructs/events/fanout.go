package events

import (
	"cmp"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/constructs/queues"
)

// TopicProps configures a Topic. The Context's DataKey (the topic carries
// confirmed orders; GrantPublish grants its use through SNS only) and
// Alerts (the subscription DLQs' and failed-redrive alarms) are required.
type TopicProps struct {
	core.Context
	// TopicName is the physical name (e.g. env.PhysicalName("mercadofresco-pedido-confirmado")).
	TopicName *string
	// DisplayName of the topic.
	DisplayName *string
}

// Topic is the fan-out topic.
type Topic struct {
	constructs.Construct
	// Topic is the SNS topic.
	Topic awssns.Topic
	// FailedRedriveAlarm fires when SNS could not even move an undeliverable
	// message to the subscription's DLQ: the message is then lost.
	FailedRedriveAlarm awscloudwatch.Alarm

	props TopicProps
	name  string
}

// SubscriptionOptions configures AddQueue.
type SubscriptionOptions struct {
	// FilterPolicy on message attributes. Nil delivers every message. Use it
	// to route, never to validate: a message no subscription accepts is
	// dropped silently, so an unknown event version must still be delivered
	// (and dead-lettered by the consumer with its reason).
	FilterPolicy map[string]awssns.SubscriptionFilter
	// DeadLetterQueueName is the physical name of the subscription's DLQ.
	// Nil means "<queue name>-entrega-dlq" (a generated name if that is
	// longer than the 80 characters SQS allows).
	DeadLetterQueueName *string
}

// Subscription is a queue subscribed to the topic, with its DLQ.
type Subscription struct {
	// Subscription is the SNS subscription (protocol sqs, raw delivery).
	Subscription awssns.Subscription
	// DeadLetterQueue receives what SNS could not deliver to the queue.
	DeadLetterQueue *queues.DeadLetterQueue
}

// NewTopic creates the durable SNS fan-out: an encrypted, TLS-only topic
// that delivers to SQS queues only (AddQueue), never straight to a Lambda.
// Every subscription has raw message delivery, a dead-letter queue of its
// own with an alarm, an optional filter policy, and a statement in the
// queue's policy that admits this topic only. The topic's known-producers
// guard admits GrantPublish's grantees; AddQueue admits the topic to the
// queue's and the DLQ's guards.
func NewTopic(scope constructs.Construct, id string, props *TopicProps) *Topic {
	c, v, props := core.Begin(scope, id, "fanout", props)
	t := &Topic{Construct: c, props: *props}
	props.Require(v, core.DataKey|core.Alerts)
	t.Topic = awssns.NewTopic(c, jsii.String("Topic"), &awssns.TopicProps{
		TopicName:   props.TopicName,
		DisplayName: props.DisplayName,
		MasterKey:   props.DataKey,
		// Topic policy denying any request not made over TLS (cdk-nag SNS3).
		EnforceSSL: jsii.Bool(true),
	})
	queues.RequireTLS(t.Topic) // every call, not only sns:Publish
	queues.ForTopic(t.Topic)
	t.name = *cmp.Or(props.TopicName, jsii.String(*c.Node().Path()))
	t.FailedRedriveAlarm = observability.NewAnyAlarm(c, "FailedRedriveAlarm", t.Topic.Metric(jsii.String("NumberOfNotificationsFailedToRedriveToDlq"), observability.Per5Min("Sum")), props.Alerts,
		fmt.Sprintf("SNS could not deliver messages of %s to a queue NOR to the subscription's DLQ: those messages are lost. Check the DLQ's queue policy and the data key policy.", t.name))
	return t
}

// AddQueue subscribes q's source queue with raw message delivery, a DLQ of
// its own (encrypted like the queue, with an alarm) and the filter policy in
// opts, and adds to q's queue policy the statement that lets this topic
// (and only this topic, by aws:SourceArn) send to it.
func (t *Topic) AddQueue(id string, q *queues.Queue, opts SubscriptionOptions) *Subscription {
	scope := constructs.NewConstruct(t.Construct, jsii.String(id))
	v := core.Check(scope, "events.AddQueue")
	if v.If(q == nil, "queue is nil") ||
		v.If(q.Fifo, "%s is FIFO; a standard topic cannot deliver to a FIFO queue", *q.Node().Path()) {
		return nil
	}

	dlqName := opts.DeadLetterQueueName
	if dlqName == nil && len(q.QueueName)+len("-entrega-dlq") <= 80 {
		dlqName = jsii.String(q.QueueName + "-entrega-dlq")
	}
	// The DLQ is encrypted like the queue.
	ctx, encryption := t.props.Context, queues.EncryptionDataKey
	if ctx.DataKey = q.Queue.EncryptionMasterKey(); ctx.DataKey == nil {
		encryption = queues.EncryptionSQSManaged
	}
	dlq := queues.NewDeadLetterQueue(scope, "DeadLetterQueue", &queues.DeadLetterQueueProps{
		Context:    ctx,
		QueueName:  dlqName,
		Encryption: encryption,
		Source:     fmt.Sprintf("SNS subscription of %s to %s", *q.Node().Path(), t.name),
	})

	var filter *map[string]awssns.SubscriptionFilter
	if opts.FilterPolicy != nil {
		filter = &opts.FilterPolicy
	}
	// awssns.Subscription, not SqsSubscription, which would edit the
	// platform's key policy (docs/design.md#fanout).
	sub := awssns.NewSubscription(scope, jsii.String("Subscription"), &awssns.SubscriptionProps{
		Topic:              t.Topic,
		Endpoint:           q.Queue.QueueArn(),
		Protocol:           awssns.SubscriptionProtocol_SQS,
		RawMessageDelivery: jsii.Bool(true),
		DeadLetterQueue:    dlq.Queue,
		FilterPolicy:       filter,
	})
	q.Queue.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("AllowSnsTopic" + *awscdk.Names_UniqueId(scope)),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("sns.amazonaws.com"), nil)},
		Actions:    jsii.Strings("sqs:SendMessage"),
		Resources:  &[]*string{q.Queue.QueueArn()},
		Conditions: &map[string]any{"ArnEquals": map[string]any{"aws:SourceArn": t.Topic.TopicArn()}},
	}))
	// SNS delivers to the queue, and to the DLQ what it could not deliver:
	// both admit this topic as a source.
	queues.ForQueue(q.Queue).AdmitTopic(t.Topic)
	queues.ForQueue(dlq.Queue).AdmitTopic(t.Topic)
	// SNS must not deliver before the queue policy exists, or the first
	// messages go to the DLQ.
	sub.Node().AddDependency(q.Queue)
	return &Subscription{Subscription: sub, DeadLetterQueue: dlq}
}

// GrantPublish lets grantee publish to the topic (sns:Publish and, for the
// encrypted topic, kms:GenerateDataKey and kms:Decrypt on the data key
// through SNS only: kms:ViaService) and admits its role to the topic's
// guard. A grantee in a stack that references this topic's stack is
// admitted by name instead (queues.ForTopic(t.Topic).AdmitRoleName): a
// reference back would be a cycle.
func (t *Topic) GrantPublish(grantee awsiam.IGrantable) awsiam.Grant {
	queues.ForTopic(t.Topic).AdmitGrantable(grantee)
	g := awsiam.Grant_AddToPrincipalOrResource(&awsiam.GrantWithResourceOptions{
		Grantee:      grantee,
		Actions:      jsii.Strings("sns:Publish"),
		ResourceArns: jsii.Strings(*t.Topic.TopicArn()),
		Resource:     t.Topic,
	})
	return g.Combine(core.GrantKey(t.props.DataKey, grantee, "sns", "kms:GenerateDataKey", "kms:Decrypt"))
}
