// Package producers makes "only known producers send" a property of every
// queue and topic of the app: a Guard is one explicit Deny in the
// resource's policy, of sqs:SendMessage (queues) or sns:Publish (topics),
// for every principal ("*") except the producers the app wires, which the
// constructs doing the wiring admit beside it (the order workflow's role
// for the stock queue and the confirmed topic, SNS for the queues it
// delivers to, EventBridge rules for their targets and DLQs, a consumer
// for its own DLQ and, when it defers messages, its own queue, CloudWatch
// alarms for the alerts topic, the on-call role for a consumer queue).
//
// An explicit Deny in a resource policy wins over every Allow, so a grant
// made by mistake elsewhere (an IAM policy with sqs:SendMessage on "*", a
// role of the account's identity setup) cannot put a message in a queue:
// what a consumer receives was sent by a producer the templates name.
//
// # The statement
//
//	{"Sid": "SoloProductoresConocidos", "Effect": "Deny", "Principal": {"AWS": "*"},
//	 "Action": "sqs:SendMessage", "Resource": <the queue>,
//	 "Condition": {"ArnNotLike": {
//	   "aws:PrincipalArn": [<admitted roles>],
//	   "aws:SourceArn":    [<admitted sources>]}}}
//
// Both keys sit in one condition block, so both must hold for the Deny to
// apply: a request is refused when its principal is not an admitted role
// AND its source is not an admitted source. The two kinds of producer
// carry different keys:
//
//   - an IAM role (a Lambda function, the state machine, the pipe, the
//     on-call) signs its own request: aws:PrincipalArn is the role's ARN
//     (the role, not the session), and there is no aws:SourceArn;
//   - an AWS service acting for a resource of ours (SNS delivering a
//     topic's message, an EventBridge rule delivering to its target or DLQ,
//     a CloudWatch alarm publishing its state) calls as a service
//     principal: aws:SourceArn is that resource's ARN, and there is no
//     aws:PrincipalArn of ours.
//
// A key missing from the request makes a negated operator such as
// ArnNotLike true (IAM's rule for condition keys absent from the request
// context), so a role is judged by aws:PrincipalArn alone and a service by
// aws:SourceArn alone: an admitted role passes, an admitted source passes,
// and anything else (another role, a service acting for another topic or
// rule, a request with neither key) meets both conditions and is refused.
// A key whose list is empty is left out (its condition would be void), so
// a guard that admits only sources refuses every role, and one that admits
// only roles refuses every service. A guard that admits nothing holds the
// resource's own ARN under aws:PrincipalArn, which no principal's ARN can
// match: it refuses everyone. Only what AWS itself sets is compared (no
// caller can choose its aws:PrincipalArn or aws:SourceArn), and the values
// are ARNs, so ArnNotLike's wildcards are used only where a whole family is
// meant (AdmitAlarms).
//
// The reasoning and the list of producers per queue: docs/design.md#producers.
//
// # Use
//
// ForQueue and ForTopic attach the guard to a queue or topic defined in the
// app (once: they return the same guard on every call) and return it; the
// constructs that create queues and topics (constructs/reliablequeue,
// constructs/fanout, constructs/platform) attach one to every resource they
// make, and whoever wires a producer admits it with one call, e.g.
//
//	producers.ForTopic(alerts).AdmitRule(rule) // a rule that publishes alerts
//
// Admitted values are read when the template is synthesised, so admissions
// may come in any order. A role in another stack is admitted by name
// (AdmitRoleName), never by reference: the producer's stack already
// references the resource's (for the grant), and a reference back would be
// a cycle.
package producers

import (
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Names in the synthesised policy.
const (
	// StatementSid is the Sid of the guard's Deny statement.
	StatementSid = "SoloProductoresConocidos"
	// KeyPrincipalArn and KeySourceArn are the condition keys compared.
	KeyPrincipalArn = "aws:PrincipalArn"
	KeySourceArn    = "aws:SourceArn"
	// Operator is the condition operator of both keys.
	Operator = "ArnNotLike"
	// ActionSend and ActionPublish are the actions guarded.
	ActionSend    = "sqs:SendMessage"
	ActionPublish = "sns:Publish"

	// guardID is the construct id of the guard under its queue or topic.
	guardID = "ProductoresConocidos"
)

// Guard is the known-producers statement of one queue or topic. A nil
// *Guard (what ForQueue and ForTopic return for a resource this app does
// not define, whose policy is not the app's to write) admits nothing and
// does nothing.
type Guard struct {
	constructs.Construct
	resourceArn string
	roles       []string
	sources     []string
	seen        map[string]bool
}

// guards finds the Go value of a guard from its construct: the jsii
// runtime hands back the same Go value for the same construct.
var (
	mu     sync.Mutex
	guards = map[constructs.IConstruct]*Guard{}
)

// ForQueue returns q's guard, attaching it on first use: a Deny of
// sqs:SendMessage in q's queue policy for everyone not admitted. It
// returns nil when q is not defined in this app (an imported queue).
func ForQueue(q awssqs.IQueue) *Guard {
	scope, ok := q.(constructs.Construct)
	if !ok || q.Node().DefaultChild() == nil {
		return nil
	}
	return attach(scope, ActionSend, q.QueueArn(), func(s awsiam.PolicyStatement) { q.AddToResourcePolicy(s) })
}

// ForTopic returns t's guard, attaching it on first use: a Deny of
// sns:Publish in t's topic policy for everyone not admitted. It returns nil
// when t is not defined in this app (an imported topic).
func ForTopic(t awssns.ITopic) *Guard {
	scope, ok := t.(constructs.Construct)
	if !ok || t.Node().DefaultChild() == nil {
		return nil
	}
	return attach(scope, ActionPublish, t.TopicArn(), func(s awsiam.PolicyStatement) { t.AddToResourcePolicy(s) })
}

func attach(resource constructs.Construct, action string, arn *string, add func(awsiam.PolicyStatement)) *Guard {
	mu.Lock()
	defer mu.Unlock()
	if c := resource.Node().TryFindChild(jsii.String(guardID)); c != nil {
		if g, ok := guards[c]; ok {
			return g
		}
	}
	g := &Guard{Construct: constructs.NewConstruct(resource, jsii.String(guardID)), resourceArn: *arn, seen: map[string]bool{}}
	guards[g.Construct] = g
	add(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String(StatementSid),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings(action),
		Resources:  jsii.Strings(*arn),
		Conditions: &map[string]any{Operator: awscdk.Lazy_Any(&producer{g.condition}, nil)},
	}))
	return g
}

// producer adapts a function to awscdk.IStableAnyProducer.
type producer struct{ produce func() any }

func (p *producer) Produce() any { return p.produce() }

// condition is the ArnNotLike block, read at synthesis.
func (g *Guard) condition() any {
	m := map[string]any{}
	if len(g.roles) > 0 {
		m[KeyPrincipalArn] = g.roles
	}
	if len(g.sources) > 0 {
		m[KeySourceArn] = g.sources
	}
	if len(m) == 0 {
		m[KeyPrincipalArn] = []string{g.resourceArn} // no principal has this ARN: nobody passes
	}
	return m
}

func (g *Guard) fail(format string, a ...any) {
	awscdk.Annotations_Of(g.Construct).AddError(jsii.String(fmt.Sprintf("producers %s: %s", *g.Node().Path(), fmt.Sprintf(format, a...))))
}

func (g *Guard) add(list *[]string, v string) {
	if g.seen[v] {
		return
	}
	g.seen[v] = true
	*list = append(*list, v)
}

// AdmitRole admits role: requests it signs pass the guard. role must be
// in the guard's stack or in a stack the guard's stack may reference (a
// role of a stack that references this one is admitted with
// AdmitRoleName).
func (g *Guard) AdmitRole(role awsiam.IRole) {
	if g == nil {
		return
	}
	if role == nil {
		g.fail("AdmitRole: the role is nil (an imported function has no role to admit: admit its role's ARN with AdmitRoleArn)")
		return
	}
	g.add(&g.roles, *role.RoleArn())
}

// AdmitGrantable admits grantee's principal, which must be a role (a
// Lambda function's, a state machine's).
func (g *Guard) AdmitGrantable(grantee awsiam.IGrantable) {
	if g == nil {
		return
	}
	var role awsiam.IRole
	if grantee != nil {
		role, _ = grantee.GrantPrincipal().(awsiam.IRole)
	}
	if role == nil {
		g.fail("AdmitGrantable: the grantee's principal is not a role: admit its role's ARN with AdmitRoleArn")
		return
	}
	g.AdmitRole(role)
}

// AdmitRoleName admits the role named name (with its path, if any) in the
// guard's account: for a role of another stack, which the guard may not
// reference (see the package documentation).
func (g *Guard) AdmitRoleName(name string) {
	if g == nil {
		return
	}
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, ":") {
		g.fail("AdmitRoleName: %q is not a role name (name or path/name)", name)
		return
	}
	g.add(&g.roles, *awscdk.Stack_Of(g.Construct).FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("iam"), Region: jsii.String(""), Resource: jsii.String("role"), ResourceName: jsii.String(name),
	}))
}

// AdmitRoleArn admits the role whose ARN is arn (a role of the account's
// identity setup, config.Environment.RoleArn).
func (g *Guard) AdmitRoleArn(arn string) {
	if g == nil {
		return
	}
	if !*awscdk.Token_IsUnresolved(jsii.String(arn)) && (!strings.HasPrefix(arn, "arn:") || !strings.Contains(arn, ":role/")) {
		g.fail("AdmitRoleArn: %q is not the ARN of a role", arn)
		return
	}
	g.add(&g.roles, arn)
}

// AdmitSource admits the AWS resource whose ARN is arn as a source:
// requests an AWS service makes on its behalf (aws:SourceArn) pass the
// guard.
func (g *Guard) AdmitSource(arn *string) {
	if g == nil {
		return
	}
	if arn == nil || *arn == "" {
		g.fail("AdmitSource: the source ARN is empty")
		return
	}
	g.add(&g.sources, *arn)
}

// AdmitRule admits an EventBridge rule: what it delivers to this queue or
// topic as a target, or dead-letters into this queue.
func (g *Guard) AdmitRule(rule awsevents.IRule) {
	if g == nil {
		return
	}
	if rule == nil {
		g.fail("AdmitRule: the rule is nil")
		return
	}
	g.AdmitSource(rule.RuleArn())
}

// AdmitTopic admits an SNS topic: what it delivers to this queue (a
// subscription), or dead-letters into it (the subscription's DLQ).
func (g *Guard) AdmitTopic(topic awssns.ITopic) {
	if g == nil {
		return
	}
	if topic == nil {
		g.fail("AdmitTopic: the topic is nil")
		return
	}
	g.AdmitSource(topic.TopicArn())
}

// AdmitAlarms admits the CloudWatch alarms of the guard's account and
// region (arn:...:cloudwatch:<region>:<account>:alarm:*): every alarm of
// the app notifies the alerts topic.
func (g *Guard) AdmitAlarms() {
	if g == nil {
		return
	}
	g.AdmitSource(awscdk.Stack_Of(g.Construct).FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("cloudwatch"), Resource: jsii.String("alarm"), ResourceName: jsii.String("*"),
		ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
	}))
}
