package queues

import (
	"strings"
	"sync"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
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
	// ActionSend, ActionPublish and ActionPutEvents are the actions guarded.
	ActionSend      = "sqs:SendMessage"
	ActionPublish   = "sns:Publish"
	ActionPutEvents = "events:PutEvents"

	// guardID is the construct id of the guard under its queue or topic.
	guardID = "ProductoresConocidos"

	// SidElevatedSession is the Sid of RequireElevation's Deny.
	SidElevatedSession = "GuardiaConSesionElevada"
	// KeyMFA is the condition key of a session signed in with MFA.
	KeyMFA = "aws:MultiFactorAuthPresent"
	// SessionTag is the session tag that admits an elevated role without
	// MFA (aws:PrincipalTag/mf-redrive, set by sts:TagSession).
	SessionTag = "mf-redrive"
)

// Guard makes "only known producers send" a property of a queue, topic or
// bus: one explicit Deny in its policy, of sqs:SendMessage, sns:Publish or
// events:PutEvents, for every principal but the admitted roles
// (aws:PrincipalArn) and sources (aws:SourceArn: a topic, a rule, the
// account's alarms). Whoever wires a producer admits it beside the wiring;
// a role of another stack by name (NameRole, AdmitRoleName).
// RequireElevation admits the on-call's role only with MFA or SessionTag.
// A Guard is the known-producers statement of one queue or topic. A nil
// *Guard (what ForQueue and ForTopic return for a resource this app does
// not define, whose policy is not the app's to write) admits nothing and
// does nothing.
type Guard struct {
	constructs.Construct
	resourceArn  string
	action       string
	addStatement func(awsiam.PolicyStatement)
	elevated     map[string]bool
	roles        []string
	sources      []string
	seen         map[string]bool
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

// ForBus returns bus's guard, attaching it on first use: a Deny of
// events:PutEvents in bus's resource policy (BusPolicy) for everyone not
// admitted (the bus's events start the order workflow, which charges what
// they say).
func ForBus(bus awsevents.EventBus) *Guard {
	if bus == nil {
		return nil
	}
	return attach(bus, ActionPutEvents, BusArn(bus), func(s awsiam.PolicyStatement) { BusPolicy(bus).AddStatements(s) })
}

// BusPolicy is bus's resource policy: the document of its own Policy
// property, made on first use. (bus.AddToResourcePolicy makes an
// AWS::Events::EventBusPolicy per statement, whose deprecated Principal
// cdk-nag reads, printing a deprecation warning on every synthesis.) Its
// statements name the bus by BusArn: the bus's Fn::GetAtt in its own
// property would be a cycle.
func BusPolicy(bus awsevents.EventBus) awsiam.PolicyDocument {
	cfn := bus.Node().DefaultChild().(awsevents.CfnEventBus)
	if doc, ok := cfn.Policy().(awsiam.PolicyDocument); ok {
		return doc
	}
	doc := awsiam.NewPolicyDocument(nil)
	cfn.SetPolicy(doc)
	return doc
}

// BusArn is bus's ARN, built from its name.
func BusArn(bus awsevents.EventBus) *string {
	return awscdk.Stack_Of(bus).FormatArn(&awscdk.ArnComponents{Service: jsii.String("events"), Resource: jsii.String("event-bus"),
		ResourceName: bus.Node().DefaultChild().(awsevents.CfnEventBus).Name()})
}

// NameRole gives role the physical name name, so that a guard of another
// stack admits it with AdmitRoleName (a role of the stack that references
// the guard's stack cannot be referenced back).
func NameRole(role awsiam.Role, name string) {
	if role == nil {
		return
	}
	cfn, ok := role.Node().DefaultChild().(awsiam.CfnRole)
	if core.Check(role, "producers").If(!ok || name == "" || strings.ContainsAny(name, ":/"), "NameRole: %q is not a role name, or the role has no CfnRole", name) {
		return
	}
	cfn.SetRoleName(jsii.String(name))
}

func attach(resource constructs.Construct, action string, arn *string, add func(awsiam.PolicyStatement)) *Guard {
	mu.Lock()
	defer mu.Unlock()
	if c := resource.Node().TryFindChild(jsii.String(guardID)); c != nil {
		if g, ok := guards[c]; ok {
			return g
		}
	}
	g := &Guard{Construct: constructs.NewConstruct(resource, jsii.String(guardID)), resourceArn: *arn, action: action, addStatement: add, seen: map[string]bool{}, elevated: map[string]bool{}}
	guards[g.Construct] = g
	add(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String(StatementSid),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings(action),
		Resources:  jsii.Strings(*arn),
		Conditions: &map[string]any{Operator: core.LazyAny(g.condition)},
	}))
	return g
}

// RequireElevation makes every guard under scope that admits roleArn admit
// it only in an elevated session: one more Deny in the resource's policy,
// of the guard's action for roleArn's requests that carry neither MFA
// (aws:MultiFactorAuthPresent true) nor the session tag SessionTag. Call
// it after every producer is admitted (a guard admitting roleArn later is
// not covered); it returns how many guards it covered.
func RequireElevation(scope constructs.IConstruct, roleArn string) int {
	if core.Check(scope, "producers").If(!strings.HasPrefix(roleArn, "arn:") || !strings.Contains(roleArn, ":role/"), "RequireElevation: %q is not the ARN of a role", roleArn) {
		return 0
	}
	n := 0
	// A map lookup per construct, not a question to jsii: the tree of an
	// environment has about a thousand constructs, and each jsii call is a
	// round trip (docs/design.md#performance).
	for _, c := range *scope.Node().FindAll(constructs.ConstructOrder_PREORDER) {
		mu.Lock()
		g := guards[c]
		mu.Unlock()
		if g == nil || !g.seen[roleArn] || g.elevated[roleArn] {
			continue
		}
		g.elevated[roleArn] = true
		g.addStatement(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String(SidElevatedSession),
			Effect:     awsiam.Effect_DENY,
			Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
			Actions:    jsii.Strings(g.action),
			Resources:  jsii.Strings(g.resourceArn),
			Conditions: &map[string]any{
				"ArnLike":      map[string]any{KeyPrincipalArn: roleArn},
				"BoolIfExists": map[string]any{KeyMFA: "false"},
				"Null":         map[string]any{"aws:PrincipalTag/" + SessionTag: "true"},
			},
		}))
		n++
	}
	return n
}

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

// refuses reports whether the admission is refused: g is nil (a resource
// of no guard of this app's), or bad, which it reports.
func (g *Guard) refuses(bad bool, format string, a ...any) bool {
	return g == nil || core.Check(g.Construct, "producers").If(bad, format, a...)
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
	if g.refuses(role == nil, "AdmitRole: the role is nil (an imported function has no role to admit: admit its role's ARN with AdmitRoleArn)") {
		return
	}
	g.add(&g.roles, *role.RoleArn())
}

// AdmitGrantable admits grantee's principal, which must be a role (a
// Lambda function's, a state machine's).
func (g *Guard) AdmitGrantable(grantee awsiam.IGrantable) {
	var role awsiam.IRole
	if grantee != nil {
		role, _ = grantee.GrantPrincipal().(awsiam.IRole)
	}
	if !g.refuses(role == nil, "AdmitGrantable: the grantee's principal is not a role: admit its role's ARN with AdmitRoleArn") {
		g.AdmitRole(role)
	}
}

// AdmitRoleName admits the role named name (with its path, if any) in the
// guard's account: for a role of another stack, which the guard may not
// reference (see the package documentation).
func (g *Guard) AdmitRoleName(name string) {
	if g.refuses(name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, ":"), "AdmitRoleName: %q is not a role name (name or path/name)", name) {
		return
	}
	g.add(&g.roles, *awscdk.Stack_Of(g.Construct).FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("iam"), Region: jsii.String(""), Resource: jsii.String("role"), ResourceName: jsii.String(name),
	}))
}

// AdmitRoleArn admits the role whose ARN is arn (a role of the account's
// identity setup, config.Environment.RoleArn).
func (g *Guard) AdmitRoleArn(arn string) {
	if g.refuses(!*awscdk.Token_IsUnresolved(jsii.String(arn)) && (!strings.HasPrefix(arn, "arn:") || !strings.Contains(arn, ":role/")), "AdmitRoleArn: %q is not the ARN of a role", arn) {
		return
	}
	g.add(&g.roles, arn)
}

// AdmitSource admits the AWS resource whose ARN is arn as a source:
// requests an AWS service makes on its behalf (aws:SourceArn) pass the
// guard.
func (g *Guard) AdmitSource(arn *string) {
	if g.refuses(arn == nil || *arn == "", "AdmitSource: the source ARN is empty") {
		return
	}
	g.add(&g.sources, *arn)
}

// AdmitRule admits an EventBridge rule: what it delivers to this queue or
// topic as a target, or dead-letters into this queue.
func (g *Guard) AdmitRule(rule awsevents.IRule) {
	if g.refuses(rule == nil, "AdmitRule: the rule is nil") {
		return
	}
	g.AdmitSource(rule.RuleArn())
}

// AdmitTopic admits an SNS topic: what it delivers to this queue (a
// subscription), or dead-letters into it (the subscription's DLQ).
func (g *Guard) AdmitTopic(topic awssns.ITopic) {
	if g.refuses(topic == nil, "AdmitTopic: the topic is nil") {
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

// TopicActions are the actions a topic policy may name: every call on
// a topic (SNS refuses "sns:*" in a topic policy).
func TopicActions() []string {
	return []string{"sns:Publish", "sns:Subscribe", "sns:GetTopicAttributes", "sns:SetTopicAttributes",
		"sns:AddPermission", "sns:RemovePermission", "sns:DeleteTopic", "sns:ListSubscriptionsByTopic"}
}

// SidTopicTLSOnly is the Sid of RequireTLS's statement.
const SidTopicTLSOnly = "SoloTLS"

// RequireTLS denies every TopicActions call on topic not made over TLS:
// the CDK's enforceSSL (the topic's props) denies sns:Publish only.
func RequireTLS(topic awssns.ITopic) {
	topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String(SidTopicTLSOnly),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings(TopicActions()...),
		Resources:  jsii.Strings(*topic.TopicArn()),
		Conditions: &map[string]interface{}{"Bool": map[string]interface{}{"aws:SecureTransport": "false"}},
	}))
}
