package platform

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawsevents"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/events"
	"github.com/mercadofresco/integration/constructs/queues"
)

// Names of the key watch (environments add their suffix).
const (
	KeyAlertsTopic      = "alertas-mercadofresco-clave"
	KeyWatchRule        = "mf-clave-datos-vigilancia"
	KeyWatchRuleDLQName = "mercadofresco-regla-clave-datos-fallidos"
)

// WatchedKeyCalls are the KMS calls on the data key that alert: those that
// make it unusable (ScheduleKeyDeletion, DisableKey), change who may use it
// (PutKeyPolicy), turn its rotation off (DisableKeyRotation), or undo a
// scheduled deletion (CancelKeyDeletion: someone had scheduled it). Attempts count as much as successes: CloudTrail
// records the calls the key policy denied too.
func WatchedKeyCalls() []string {
	return []string{"ScheduleKeyDeletion", "DisableKey", "DisableKeyRotation", "PutKeyPolicy", "CancelKeyDeletion"}
}

// KeyWatchPattern is the event pattern of the CloudTrail events of
// WatchedKeyCalls on the key with ARN keyArn. It matches the key in the
// event's detail.resources list, where KMS always writes the key's ARN:
// requestParameters.keyId holds whatever the caller passed (a key id or an
// ARN) and responseElements is empty when the call was denied.
func KeyWatchPattern(keyArn *string) *awsevents.EventPattern {
	return &awsevents.EventPattern{
		Source:     jsii.Strings("aws.kms"),
		DetailType: jsii.Strings("AWS API Call via CloudTrail"),
		Detail: &map[string]interface{}{
			"eventSource": []interface{}{"kms.amazonaws.com"},
			"eventName":   jsii.Strings(WatchedKeyCalls()...),
			"resources":   map[string]interface{}{"ARN": []interface{}{keyArn}},
		},
	}
}

// KeyWatchProps configures NewKeyWatch. The Context's DataKey (the watched
// key) and Alerts (alertas-mercadofresco, one of the two topics alerted)
// are required; its RemovalPolicy applies to the rule's DLQ.
type KeyWatchProps struct {
	core.Context
	// TopicName of the watch's own topic. Nil means KeyAlertsTopic.
	TopicName *string
	// Email, when not empty, is subscribed to the watch's own topic (the
	// environment's alarm address).
	Email string
	// RuleName of the rule. Nil means KeyWatchRule.
	RuleName *string
	// DeadLetterQueueName of the rule's DLQ. Nil means KeyWatchRuleDLQName.
	DeadLetterQueueName *string
	// Trail is the ARN of the CloudTrail trail that records the account's
	// management events in the key's region (config AuditTrail): the
	// rule sees the key's calls only through it. Required; the rule's
	// description names it.
	Trail string
}

// KeyWatch is the alert on the data key's deletion, disabling and policy
// changes.
type KeyWatch struct {
	constructs.Construct
	// Topic is alertas-mercadofresco-clave: not encrypted with the data key
	// (a key pending deletion or disabled cannot encrypt the alert about
	// itself), TLS only. The rule's own alarms go to it for the same reason.
	Topic awssns.Topic
	// Rule is the rule on the default bus (events.OnDefaultBus) with two
	// targets, Alerts and Topic, sharing an SQS-managed encrypted DLQ.
	Rule *events.Rule
}

// NewKeyWatch sends the CloudTrail events of WatchedKeyCalls on Key to
// Alerts and to a topic of its own. The events reach EventBridge only if
// the account has a CloudTrail trail recording management events (write
// events at least) in the key's region: the app does not create one, and
// props.Trail names it.
func NewKeyWatch(scope constructs.Construct, id string, props *KeyWatchProps) *KeyWatch {
	c, v, props := core.Begin(scope, id, "platform.NewKeyWatch", props)
	w := &KeyWatch{Construct: c}
	props.Require(v, core.DataKey|core.Alerts)
	v.If(!strings.HasPrefix(props.Trail, "arn:") || !strings.Contains(props.Trail, ":trail/"),
		"KeyWatchProps.Trail (config AuditTrail) %q is not a CloudTrail trail's ARN: the rule sees the key's calls only if a trail records the account's management events in this region", props.Trail)
	stack := awscdk.Stack_Of(c)
	keyArn := jsii.String(fmt.Sprintf("arn:%s:kms:%s:%s:key/missing", *stack.Partition(), *stack.Region(), *stack.Account()))
	if props.DataKey != nil {
		keyArn = props.DataKey.KeyArn()
	}
	// Not encrypted with the data key: see the nag acknowledgement.
	w.Topic = newAlarmTopic(c, "Topic", *cmp.Or(props.TopicName, jsii.String(KeyAlertsTopic)), "MercadoFresco clave de datos", nil, props.Email)
	core.AcknowledgeNag(w.Topic.Node().DefaultChild(), false, "AwsSolutions-SNS2", "Not encrypted with the data key on purpose: it alerts that the data key is being deleted, disabled or re-permissioned, and such a key cannot encrypt the alert about itself. It carries CloudTrail records of key calls, no customer data.")

	snsTarget := func(topic awssns.ITopic) func(o events.TargetOptions) awsevents.IRuleTarget {
		return func(o events.TargetOptions) awsevents.IRuleTarget {
			return &snsTarget{topic: topic, opts: o, sid: "AllowKeyWatchRule"}
		}
	}
	ruleProps := &events.RuleProps{
		// SQS-managed: an event about the key must be kept even when the
		// key cannot encrypt it; the rule's own alarms go to the watch's
		// topic.
		Context:             core.Context{Alerts: w.Topic, RemovalPolicy: props.RemovalPolicy, Dashboard: props.Dashboard},
		OnDefaultBus:        true,
		RuleName:            cmp.Or(props.RuleName, jsii.String(KeyWatchRule)),
		Description:         "CloudTrail (trail " + props.Trail + "): deletion, disabling or policy change of the data key (attempts included) -> alertas-mercadofresco and its own topic",
		Pattern:             KeyWatchPattern(keyArn),
		Target:              snsTarget(w.Topic),
		TargetLabel:         "the topics alertas-mercadofresco and " + *cmp.Or(props.TopicName, jsii.String(KeyAlertsTopic)),
		DeadLetterQueueName: cmp.Or(props.DeadLetterQueueName, jsii.String(KeyWatchRuleDLQName)),
		Encryption:          queues.EncryptionSQSManaged,
	}
	if props.Alerts != nil {
		ruleProps.AdditionalTargets = append(ruleProps.AdditionalTargets, snsTarget(props.Alerts))
	}
	w.Rule = events.NewRule(c, "Rule", ruleProps)
	return w
}

// snsTarget publishes a rule's events to topic with the rule's retry
// policy and DLQ. The topic's policy admits EventBridge for this rule only
// (aws:SourceArn), and so does the DLQ's; the topic's known-producers guard
// admits the rule (constructs/queues; busrule admits it on the DLQ's). Unlike awseventstargets.SnsTopic
// it adds nothing to the policy of the topic's key: the data key admits
// EventBridge for this account's resources already
// (AllowEventBridgeDeliveryToEncryptedTargets), and the CDK's statement
// would admit EventBridge unconditioned.
type snsTarget struct {
	topic awssns.ITopic
	opts  events.TargetOptions
	sid   string // of the topic policy's statement admitting the rule
}

// Bind implements awsevents.IRuleTarget.
func (t *snsTarget) Bind(rule interfacesawsevents.IRuleRef, _ *string) *awsevents.RuleTargetConfig {
	ruleArn := rule.RuleRef().RuleArn
	fromRule := &map[string]interface{}{"ArnEquals": map[string]interface{}{"aws:SourceArn": ruleArn}}
	events := &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("events.amazonaws.com"), nil)}
	queues.ForTopic(t.topic).AdmitSource(ruleArn)
	t.topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String(t.sid),
		Principals: events,
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  jsii.Strings(*t.topic.TopicArn()),
		Conditions: fromRule,
	}))
	t.opts.DeadLetterQueue.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Principals: events,
		Actions:    jsii.Strings("sqs:SendMessage"),
		Resources:  jsii.Strings(*t.opts.DeadLetterQueue.QueueArn()),
		Conditions: fromRule,
	}))
	maxAge, _ := core.Seconds(t.opts.MaxEventAge) // literal: busrule checked it
	return &awsevents.RuleTargetConfig{
		Arn:              t.topic.TopicArn(),
		TargetResource:   t.topic,
		DeadLetterConfig: &awsevents.CfnRule_DeadLetterConfigProperty{Arn: t.opts.DeadLetterQueue.QueueArn()},
		RetryPolicy: &awsevents.CfnRule_RetryPolicyProperty{
			MaximumEventAgeInSeconds: jsii.Number(maxAge),
			MaximumRetryAttempts:     jsii.Number(t.opts.RetryAttempts),
		},
	}
}

// Names of the on-call role's send watch (environments add their suffix).
const (
	SendWatchRule        = "mf-guardia-envios"
	SendWatchRuleDLQName = "mercadofresco-regla-guardia-envios-fallidos"
)

// WatchedSendCalls are the SQS calls of the on-call role that alert: every
// way its redrive puts a message on a queue (mf-dlq's loop sends, its move
// task).
func WatchedSendCalls() []string {
	return []string{"SendMessage", "SendMessageBatch", "StartMessageMoveTask"}
}

// SendWatchProps configures NewSendWatch. The Context's Alerts (alerted)
// and DataKey (the rule's DLQ) are required.
type SendWatchProps struct {
	core.Context
	// RoleArn is the watched role's ARN, with its path (the on-call's,
	// config Roles.Operator). Required.
	RoleArn string
	// Trail is the ARN of the CloudTrail trail that records the account's
	// SQS data events in this region (config AuditTrail). Required; the
	// rule's description names it.
	Trail string
	// RuleName of the rule. Nil means SendWatchRule.
	RuleName *string
	// DeadLetterQueueName of the rule's DLQ. Nil means SendWatchRuleDLQName.
	DeadLetterQueueName *string
}

// NewSendWatch alerts Alerts on every call of WatchedSendCalls signed by
// RoleArn's sessions, successful or denied: a rule on the default bus for
// CloudTrail's SQS data events, which reach EventBridge only if Trail
// records them.
func NewSendWatch(scope constructs.Construct, id string, props *SendWatchProps) *events.Rule {
	c, v, props := core.Begin(scope, id, "platform.NewSendWatch", props)
	props.Require(v, core.DataKey|core.Alerts)
	v.If(!strings.HasPrefix(props.RoleArn, "arn:") || !strings.Contains(props.RoleArn, ":role/"), "SendWatchProps.RoleArn %q is not the ARN of a role", props.RoleArn)
	v.If(!strings.HasPrefix(props.Trail, "arn:") || !strings.Contains(props.Trail, ":trail/"),
		"SendWatchProps.Trail (config AuditTrail) %q is not a CloudTrail trail's ARN: the rule sees the role's sends only if a trail records the account's SQS data events", props.Trail)
	ruleProps := &events.RuleProps{
		Context:      props.Context,
		OnDefaultBus: true,
		RuleName:     cmp.Or(props.RuleName, jsii.String(SendWatchRule)),
		Description:  "CloudTrail (trail " + props.Trail + ", SQS data events): messages sent by the on-call role -> alertas-mercadofresco",
		Pattern: &awsevents.EventPattern{
			Source:     jsii.Strings("aws.sqs"),
			DetailType: jsii.Strings("AWS API Call via CloudTrail"),
			Detail: &map[string]interface{}{
				"eventSource":  []interface{}{"sqs.amazonaws.com"},
				"eventName":    jsii.Strings(WatchedSendCalls()...),
				"userIdentity": map[string]interface{}{"sessionContext": map[string]interface{}{"sessionIssuer": map[string]interface{}{"arn": []interface{}{props.RoleArn}}}},
			},
		},
		TargetLabel:         "the topic alertas-mercadofresco",
		DeadLetterQueueName: cmp.Or(props.DeadLetterQueueName, jsii.String(SendWatchRuleDLQName)),
	}
	if props.Alerts != nil {
		ruleProps.Target = func(o events.TargetOptions) awsevents.IRuleTarget {
			return &snsTarget{topic: props.Alerts, opts: o, sid: "AllowSendWatchRule"}
		}
	}
	return events.NewRule(c, "Rule", ruleProps)
}
