// Package events is what carries the shop's events: rules on
// bus-mercadofresco or the default bus whose targets cannot lose an event
// silently (NewRule: retry policy, DLQ, alarms; docs/design.md#bus-rules),
// the durable SNS fan-out to SQS queues (NewTopic; #fanout), the ERP's
// webhook behind a rate-limited API destination (NewERPDestination;
// #erp-destination), the abandoned carts' table and pipe
// (NewCarts; #carts-pipe) and the schema registry that publishes the event
// contracts (NewSchemaRegistry; #event-contracts).
package events

import (
	"cmp"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/constructs/queues"
)

// Defaults of Props (docs/design.md#bus-rules).
const (
	// DefaultRetryAttempts: 10 retries, 11 deliveries at most (the attempts
	// guardrail counts them against the target's dependency, ≤ 15).
	DefaultRetryAttempts = 10
	// DefaultMaxEventAgeMinutes: an event not delivered in 2 h goes to the
	// DLQ (the archive can replay the window after the fix).
	DefaultMaxEventAgeMinutes = 120
	// MaxRetryAttempts is EventBridge's limit.
	MaxRetryAttempts = 185
)

// TargetOptions is what the target must be built with: the rule's DLQ and
// retry policy, and the rule (for the target's producer guard).
type TargetOptions struct {
	DeadLetterQueue awssqs.IQueue
	MaxEventAge     awscdk.Duration
	RetryAttempts   float64
	Rule            awsevents.IRule
}

// SqsTarget delivers the rule's events to queue with the rule's DLQ and
// retry policy, and admits the rule to the queue's producer guard.
func SqsTarget(queue awssqs.IQueue) func(o TargetOptions) awsevents.IRuleTarget {
	return func(o TargetOptions) awsevents.IRuleTarget {
		queues.ForQueue(queue).AdmitRule(o.Rule)
		return awseventstargets.NewSqsQueue(queue, &awseventstargets.SqsQueueProps{
			DeadLetterQueue: o.DeadLetterQueue, MaxEventAge: o.MaxEventAge, RetryAttempts: jsii.Number(o.RetryAttempts),
		})
	}
}

// RuleProps configures a Rule. Bus (or OnDefaultBus), Pattern, Target, the
// Context's Alerts and, unless Encryption says SQS-managed, its DataKey
// (the DLQ's key) are required.
type RuleProps struct {
	core.Context
	// Bus is bus-mercadofresco.
	Bus awsevents.IEventBus
	// OnDefaultBus puts the rule on the account's default bus instead, the
	// one AWS services put their events on (CloudTrail's "AWS API Call via
	// CloudTrail"). Bus must then be nil.
	OnDefaultBus bool
	// RuleName is the physical name (it names the alarms' dimension too).
	// Nil lets CloudFormation name it.
	RuleName *string
	// Description of the rule.
	Description string
	// Pattern selects the events.
	Pattern *awsevents.EventPattern
	// Target builds the rule's one target with the options (DLQ and retry
	// policy), e.g. SqsTarget(queue).
	Target func(o TargetOptions) awsevents.IRuleTarget
	// AdditionalTargets are more targets of the same events, each built
	// with the same options (the rule's DLQ and retry policy).
	AdditionalTargets []func(o TargetOptions) awsevents.IRuleTarget
	// TargetLabel names the target in alarm descriptions ("the starter
	// buffer queue cola-mercadofresco-inicio-pedido").
	TargetLabel string
	// RetryAttempts (0..185) and MaxEventAge (1 min..24 h) of the target.
	// Zero/nil mean the defaults.
	RetryAttempts float64
	MaxEventAge   awscdk.Duration
	// DeadLetterQueueName of the target's DLQ. Nil lets CloudFormation name it.
	DeadLetterQueueName *string
	// Encryption of the DLQ: the zero value is the data key;
	// queues.EncryptionSQSManaged is for a rule that must work while
	// the data key does not (the data key's own watch).
	Encryption queues.Encryption
}

// Rule is the rule with its target's DLQ and alarms.
type Rule struct {
	constructs.Construct
	Rule            awsevents.Rule
	DeadLetterQueue *queues.DeadLetterQueue
	// RetryAttempts and MaxEventAge are the effective retry policy.
	RetryAttempts float64
	MaxEventAge   awscdk.Duration
	// FailedInvocationsAlarm and SentToDlqAlarm watch the rule.
	FailedInvocationsAlarm, SentToDlqAlarm awscloudwatch.Alarm
	bus                                    awsevents.IEventBus
}

// NewRule creates the rule: each target has a retry policy (maximum event
// age, retry attempts) and the rule's dead-letter queue (encrypted with
// the data key unless told otherwise, alarmed on its depth), and the rule
// has alarms on FailedInvocations and InvocationsSentToDlq. An event that
// reaches the DLQ keeps its content there; the bus's archive can replay
// the window once the target works again (consumers are idempotent). Every problem is reported at synth and the rule is
// still built whole.
func NewRule(scope constructs.Construct, id string, props *RuleProps) *Rule {
	c, v, props := core.Begin(scope, id, "busrule", props)
	r := &Rule{Construct: c, bus: props.Bus}
	switch {
	case props.Bus == nil && !props.OnDefaultBus:
		v.Addf("Bus is required (or OnDefaultBus for the account's default bus)")
	case props.Bus != nil && props.OnDefaultBus:
		v.Addf("Bus and OnDefaultBus exclude each other: a rule is on one bus")
		r.bus = nil
	}
	if v.If(props.Pattern == nil, "Pattern is required: a rule without one matches nothing on a custom bus") {
		props.Pattern = &awsevents.EventPattern{Source: jsii.Strings("missing")}
	}
	v.If(props.Target == nil, "Target is required")
	r.RetryAttempts = v.Count("RetryAttempts", props.RetryAttempts, DefaultRetryAttempts, 0, MaxRetryAttempts)
	r.MaxEventAge = props.MaxEventAge
	if r.MaxEventAge == nil || v.Seconds("MaxEventAge", r.MaxEventAge, 0, 60, 86400) == 0 {
		r.MaxEventAge = awscdk.Duration_Minutes(jsii.Number(DefaultMaxEventAgeMinutes))
	}
	label := cmp.Or(props.TargetLabel, "its target")
	busLabel := "the event bus"
	if props.OnDefaultBus {
		busLabel = "the default event bus"
	}
	source := fmt.Sprintf("rule %s on %s (target: %s)", *cmp.Or(props.RuleName, jsii.String(*c.Node().Path())), busLabel, label)
	r.DeadLetterQueue = queues.NewDeadLetterQueue(c, "DeadLetterQueue", &queues.DeadLetterQueueProps{
		Context:    props.Context,
		QueueName:  props.DeadLetterQueueName,
		Encryption: props.Encryption,
		Source:     source,
	})
	r.Rule = awsevents.NewRule(c, jsii.String("Rule"), &awsevents.RuleProps{
		EventBus:     r.bus, // nil: the default bus
		RuleName:     props.RuleName,
		Description:  jsii.String(props.Description),
		EventPattern: props.Pattern,
	})
	opts := TargetOptions{DeadLetterQueue: r.DeadLetterQueue.Queue, MaxEventAge: r.MaxEventAge, RetryAttempts: r.RetryAttempts, Rule: r.Rule}
	if props.Target != nil {
		r.Rule.AddTarget(props.Target(opts))
	}
	for i, t := range props.AdditionalTargets {
		if !v.If(t == nil, "AdditionalTargets[%d] is nil", i) {
			r.Rule.AddTarget(t(opts))
		}
	}
	// EventBridge dead-letters for this rule (a queue or topic target is
	// admitted by whoever chose it: queues.ForQueue(q).AdmitRule(r.Rule)).
	queues.ForQueue(r.DeadLetterQueue.Queue).AdmitRule(r.Rule)

	r.contribute(props.Context, props.RuleName)

	r.FailedInvocationsAlarm = observability.NewAnyAlarm(c, "FailedInvocationsAlarm", r.Metric("FailedInvocations", observability.Per5Min("Sum")), props.Alerts,
		fmt.Sprintf("EventBridge could not deliver events of %s (they are retried, then dead-lettered). Check the target's permissions, key policy and health.", source))
	r.SentToDlqAlarm = observability.NewAnyAlarm(c, "SentToDlqAlarm", r.Metric("InvocationsSentToDlq", observability.Per5Min("Sum")), props.Alerts,
		fmt.Sprintf("Events of %s gave up and went to its DLQ: they did not reach the target. Follow docs/runbooks/dlq.md; after the fix, replay the window from the bus archive.", source))
	return r
}

// Metric is an AWS/Events metric of this rule (FailedInvocations,
// InvocationsSentToDlq, Invocations, TriggeredRules, ...).
func (r *Rule) Metric(name string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	dims := map[string]*string{"RuleName": r.Rule.RuleName()}
	if r.bus != nil {
		dims["EventBusName"] = r.bus.EventBusName()
	}
	props := &awscloudwatch.MetricProps{Namespace: jsii.String("AWS/Events"), MetricName: jsii.String(name), DimensionsMap: &dims}
	if opts != nil {
		props.Period, props.Statistic, props.Label = opts.Period, opts.Statistic, opts.Label
	}
	return awscloudwatch.NewMetric(props)
}
