// Package guardrails holds CDK Aspects that stop a synthesis when the
// messaging layer is configured in a way the MercadoFresco lesson showed to
// lose or duplicate work. They inspect L1 resources (CfnQueue,
// CfnEventSourceMapping, CfnSubscription, CfnTopic, CfnAlarm, CfnFunction),
// so they also catch resources made without the project's constructs, and
// they resolve references (Fn::GetAtt / Ref / literal ARNs and names) to find
// which queue a redrive policy, an alarm or an event source mapping points at.
//
// Each finding is an error annotation on the offending L1 resource, so `cdk
// synth` fails with a message that names the resource and the rule:
//
//	[MF-SQS-VISIBILITY] ... VisibilityTimeout 120 s < 6 x timeout of consumer ... (180 s) = 1080 s
//
// Checks (rule ids):
//   - MF-SQS-DLQ: an SQS queue with no redrive policy that is not itself a DLQ
//     (of a queue, SNS subscription, EventBridge target, Lambda or pipe).
//   - MF-SQS-DLQ-ALARM: a DLQ without an alarm on ApproximateNumberOfMessagesVisible
//     that fires on the first message and has an alarm action.
//   - MF-SQS-VISIBILITY: an SQS event source whose queue's VisibilityTimeout is
//     below 6 x the function timeout (+ the batching window).
//   - MF-SNS-LAMBDA: an SNS subscription with protocol lambda (fan out to SQS).
//   - MF-SQS-FIFO-DLQ: a FIFO queue with a standard DLQ (or the reverse).
//   - MF-SQS-DLQ-RETENTION: a standard queue whose DLQ does not retain longer
//     than the source (messages keep their enqueue time in the DLQ).
//   - MF-ESM-MAXCONCURRENCY / MF-ESM-PARTIAL-BATCH: an SQS event source mapping
//     without ScalingConfig.MaximumConcurrency or without ReportBatchItemFailures.
//   - MF-ESM-RESERVED: SQS mappings whose MaximumConcurrency add up to more
//     than the function's reserved concurrency (the excess is throttled, and
//     a throttled batch spends a receive).
//
// A finding can be acknowledged on a construct (or any ancestor) with
// Acknowledge and a written reason; the check then reports nothing there.
//
// Limits: properties set with raw overrides (AddPropertyOverride) are not
// seen, and references that cross stacks (Fn::ImportValue) cannot be followed;
// a mapping whose function cannot be resolved gets a warning, not an error.
package guardrails

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Rule identifiers, used as message prefixes and with Acknowledge.
const (
	RuleQueueWithoutDLQ            = "MF-SQS-DLQ"
	RuleDLQWithoutAlarm            = "MF-SQS-DLQ-ALARM"
	RuleVisibilityTimeout          = "MF-SQS-VISIBILITY"
	RuleSNSToLambda                = "MF-SNS-LAMBDA"
	RuleFifoDLQType                = "MF-SQS-FIFO-DLQ"
	RuleDLQRetention               = "MF-SQS-DLQ-RETENTION"
	RuleESMMaximumConcurrency      = "MF-ESM-MAXCONCURRENCY"
	RuleESMReportBatchItemFailures = "MF-ESM-PARTIAL-BATCH"
	RuleESMReservedConcurrency     = "MF-ESM-RESERVED"
)

// VisibilityMultiplier is the AWS rule: queue visibility >= 6 x function timeout.
const VisibilityMultiplier = 6

// CloudFormation defaults used when a property is absent.
const (
	defaultVisibilitySeconds = 30
	defaultRetentionSeconds  = 345600 // 4 days
	defaultLambdaTimeout     = 3
)

const (
	ackMetadataType     = "mercadofresco:guardrails:acknowledged"
	checkedMetadataType = "mercadofresco:guardrails:checked"
)

const (
	typeQueue        = "AWS::SQS::Queue"
	typeESM          = "AWS::Lambda::EventSourceMapping"
	typeFunction     = "AWS::Lambda::Function"
	typeAlias        = "AWS::Lambda::Alias"
	typeVersion      = "AWS::Lambda::Version"
	typeSubscription = "AWS::SNS::Subscription"
	typeTopic        = "AWS::SNS::Topic"
	typeAlarm        = "AWS::CloudWatch::Alarm"
)

// MessagingChecks is the aspect. Add it with Apply (or awscdk.Aspects_Of(app).Add
// with priority READONLY so it sees what mutating aspects produce).
type MessagingChecks struct{}

// NewMessagingChecks returns the aspect.
func NewMessagingChecks() *MessagingChecks { return &MessagingChecks{} }

// Apply adds the checks to scope (an App, Stage or Stack) with READONLY priority.
func Apply(scope constructs.IConstruct) {
	awscdk.Aspects_Of(scope).Add(NewMessagingChecks(), &awscdk.AspectOptions{Priority: awscdk.AspectPriority_READONLY()})
}

// Acknowledge records that rule does not apply to c (and its children) for
// the given reason. The reason is required and should say why the risk the
// rule guards against cannot happen there.
func Acknowledge(c constructs.IConstruct, rule, reason string) {
	if strings.TrimSpace(reason) == "" {
		awscdk.Annotations_Of(c).AddError(jsii.String(fmt.Sprintf("guardrails.Acknowledge(%s) on %s needs a reason", rule, *c.Node().Path())))
		return
	}
	c.Node().AddMetadata(jsii.String(ackMetadataType), map[string]any{"rule": rule, "reason": reason}, nil)
}

// Visit runs every check once per stack, when the aspect reaches the stack.
func (m *MessagingChecks) Visit(node constructs.IConstruct) {
	if !*awscdk.Stack_IsStack(node) {
		return
	}
	stack := awscdk.Stack_Of(node)
	// The aspect may be added both to the app and to a stack; check once.
	for _, e := range *stack.Node().Metadata() {
		if *e.Type == checkedMetadataType {
			return
		}
	}
	stack.Node().AddMetadata(jsii.String(checkedMetadataType), true, nil)
	ix := newIndex(stack)
	ix.checkQueues()
	ix.checkEventSourceMappings()
	ix.checkSubscriptions()
}

// resource is one L1 resource of the stack with its resolved properties.
type resource struct {
	id    string
	typ   string
	cfn   awscdk.CfnResource
	props map[string]any
}

func (r *resource) path() string { return *r.cfn.Node().Path() }

func (r *resource) str(key string) string {
	s, _ := get(r.props, key).(string)
	return s
}

type index struct {
	stack     awscdk.Stack
	byID      map[string]*resource
	ordered   []*resource
	queueName map[string]*resource // literal physical names
	fnName    map[string]*resource
	dlqOf     map[string][]string // DLQ id -> who uses it as DLQ (paths)
	alarms    map[string][]*resource
}

func newIndex(stack awscdk.Stack) *index {
	ix := &index{
		stack:     stack,
		byID:      map[string]*resource{},
		queueName: map[string]*resource{},
		fnName:    map[string]*resource{},
		dlqOf:     map[string][]string{},
		alarms:    map[string][]*resource{},
	}
	stackPath := *stack.Node().Path()
	for _, c := range *stack.Node().FindAll(constructs.ConstructOrder_PREORDER) {
		if !*awscdk.CfnResource_IsCfnResource(c) {
			continue
		}
		if *awscdk.Stack_Of(c).Node().Path() != stackPath {
			continue // a nested stack checks its own resources
		}
		cfn, ok := c.(awscdk.CfnResource)
		if !ok {
			continue
		}
		r := &resource{cfn: cfn, typ: *cfn.CfnResourceType()}
		r.id, _ = stack.Resolve(cfn.LogicalId()).(string)
		r.props = ix.resolveProps(cfn)
		ix.byID[r.id] = r
		ix.ordered = append(ix.ordered, r)
		switch r.typ {
		case typeQueue:
			if n := r.str("QueueName"); n != "" {
				ix.queueName[n] = r
			}
		case typeFunction:
			if n := r.str("FunctionName"); n != "" {
				ix.fnName[n] = r
			}
		}
	}
	for _, r := range ix.ordered {
		ix.collectDLQRefs(r, r.props, false)
		if r.typ == typeAlarm {
			ix.collectAlarm(r)
		}
	}
	return ix
}

// resolveProps renders the L1's properties in CloudFormation shape and
// resolves tokens (references become Ref / Fn::GetAtt maps).
func (ix *index) resolveProps(cfn awscdk.CfnResource) (props map[string]any) {
	defer func() {
		if recover() != nil {
			props = map[string]any{}
		}
	}()
	// CfnProperties is the L1's current property bag in CDK (camelCase) form;
	// round-tripping it through RenderProperties from Go breaks on lazy values,
	// so keys are matched case-insensitively instead (see get).
	props, _ = ix.stack.Resolve(cfn.CfnProperties()).(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	return props
}

// target returns the in-stack resource a resolved value refers to, if any.
func (ix *index) target(v any) *resource {
	switch x := v.(type) {
	case map[string]any:
		if ga, ok := x["Fn::GetAtt"].([]any); ok && len(ga) > 0 {
			id, _ := ga[0].(string)
			return ix.byID[id]
		}
		if ga, ok := x["Fn::GetAtt"].(string); ok {
			return ix.byID[strings.SplitN(ga, ".", 2)[0]]
		}
		if id, ok := x["Ref"].(string); ok {
			return ix.byID[id]
		}
		if j, ok := x["Fn::Join"].([]any); ok && len(j) == 2 {
			parts, _ := j[1].([]any)
			if len(parts) > 0 {
				if last, ok := parts[len(parts)-1].(string); ok {
					if r := ix.byName(last); r != nil {
						return r
					}
				}
			}
		}
		if s, ok := x["Fn::Sub"].(string); ok {
			if r := ix.byName(s); r != nil {
				return r
			}
		}
		// Derived values (an alias name is Fn::Join of Fn::Select over the
		// alias ARN, for example): the first reference inside identifies it.
		for k, v := range x {
			if strings.HasPrefix(k, "Fn::") {
				if r := ix.firstRef(v); r != nil {
					return r
				}
			}
		}
	case string:
		return ix.byName(x)
	}
	return nil
}

// firstRef returns the first in-stack resource referenced anywhere in v.
func (ix *index) firstRef(v any) *resource {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["Ref"]; ok {
			return ix.target(x)
		}
		if _, ok := x["Fn::GetAtt"]; ok {
			return ix.target(x)
		}
		for _, e := range x {
			if r := ix.firstRef(e); r != nil {
				return r
			}
		}
	case []any:
		for _, e := range x {
			if r := ix.firstRef(e); r != nil {
				return r
			}
		}
	}
	return nil
}

// byName maps an ARN, URL or name (or its literal tail) to a queue or function.
func (ix *index) byName(s string) *resource {
	if strings.Contains(s, ":lambda:") {
		parts := strings.Split(s, ":")
		for i, p := range parts {
			if p == "function" && i+1 < len(parts) {
				return ix.fnName[parts[i+1]]
			}
		}
		return nil
	}
	tail := s[strings.LastIndexAny(s, ":/")+1:]
	if q := ix.queueName[tail]; q != nil {
		return q
	}
	return ix.fnName[tail]
}

// collectDLQRefs marks every queue referenced under a dead-letter property
// (RedrivePolicy.deadLetterTargetArn of queues and subscriptions,
// DeadLetterConfig of Lambda functions, EventBridge targets and pipes,
// DestinationConfig.OnFailure of event source mappings).
func (ix *index) collectDLQRefs(owner *resource, v any, inDLQ bool) {
	switch x := v.(type) {
	case map[string]any:
		if inDLQ {
			if t := ix.target(x); t != nil && t.typ == typeQueue {
				ix.dlqOf[t.id] = append(ix.dlqOf[t.id], owner.path())
				return
			}
		}
		for k, val := range x {
			lk := strings.ToLower(k)
			switch lk {
			case "redriveallowpolicy":
				continue // names sources, not DLQs
			case "redrivepolicy":
				if s, ok := val.(string); ok { // JSON string form
					var m map[string]any
					if json.Unmarshal([]byte(s), &m) == nil {
						val = m
					}
				}
			}
			dlq := inDLQ || lk == "deadlettertargetarn" || lk == "deadletterconfig" || lk == "onfailure"
			ix.collectDLQRefs(owner, val, dlq)
		}
	case []any:
		for _, e := range x {
			ix.collectDLQRefs(owner, e, inDLQ)
		}
	case string:
		if inDLQ {
			if t := ix.byName(x); t != nil && t.typ == typeQueue {
				ix.dlqOf[t.id] = append(ix.dlqOf[t.id], owner.path())
			}
		}
	}
}

// collectAlarm records alarms on ApproximateNumberOfMessagesVisible by queue.
func (ix *index) collectAlarm(a *resource) {
	metrics := []map[string]any{a.props}
	if ms, ok := get(a.props, "Metrics").([]any); ok {
		for _, m := range ms {
			mm, _ := m.(map[string]any)
			if metric, ok := get(mm, "MetricStat", "Metric").(map[string]any); ok {
				metrics = append(metrics, metric)
			}
		}
	}
	for _, m := range metrics {
		if get(m, "MetricName") != "ApproximateNumberOfMessagesVisible" || get(m, "Namespace") != "AWS/SQS" {
			continue
		}
		dims, _ := get(m, "Dimensions").([]any)
		for _, d := range dims {
			dm, _ := d.(map[string]any)
			if get(dm, "Name") != "QueueName" {
				continue
			}
			if q := ix.target(get(dm, "Value")); q != nil && q.typ == typeQueue {
				ix.alarms[q.id] = append(ix.alarms[q.id], a)
			}
		}
	}
}

func (ix *index) fail(r *resource, rule, format string, a ...any) {
	if acknowledged(r.cfn, rule) {
		return
	}
	msg := fmt.Sprintf("[%s] %s: %s", rule, r.path(), fmt.Sprintf(format, a...))
	awscdk.Annotations_Of(r.cfn).AddError(jsii.String(msg))
}

func (ix *index) warn(r *resource, rule, format string, a ...any) {
	if acknowledged(r.cfn, rule) {
		return
	}
	msg := fmt.Sprintf("[%s] %s: %s", rule, r.path(), fmt.Sprintf(format, a...))
	awscdk.Annotations_Of(r.cfn).AddWarningV2(jsii.String("mercadofresco:guardrails:"+rule), jsii.String(msg), nil)
}

func acknowledged(c constructs.IConstruct, rule string) bool {
	for _, s := range *c.Node().Scopes() {
		for _, e := range *s.Node().Metadata() {
			if *e.Type != ackMetadataType {
				continue
			}
			if m, ok := e.Data.(map[string]any); ok && m["rule"] == rule {
				return true
			}
		}
	}
	return false
}

func (ix *index) checkQueues() {
	for _, q := range ix.ordered {
		if q.typ != typeQueue {
			continue
		}
		name := queueLabel(q)
		rp := redrivePolicy(get(q.props, "RedrivePolicy"))
		target, hasTarget := rp["deadLetterTargetArn"]
		usedAsDLQ := len(ix.dlqOf[q.id]) > 0 || declaresDLQ(get(q.props, "RedriveAllowPolicy"))
		if !hasTarget && !usedAsDLQ {
			ix.fail(q, RuleQueueWithoutDLQ, "queue %s has no dead-letter queue (RedrivePolicy) and is not the DLQ of anything; a failing message would be retried until it expires and then be deleted silently. Give it a DLQ of the same type with an alarm (reliablequeue.New does)", name)
		}
		if hasTarget {
			if dlq := ix.target(target); dlq != nil && dlq.typ == typeQueue {
				srcFifo, dlqFifo := isFifo(q), isFifo(dlq)
				if srcFifo != dlqFifo {
					ix.fail(q, RuleFifoDLQType, "queue %s is %s but its DLQ %s is %s; SQS requires the DLQ of a FIFO queue to be FIFO (and of a standard queue to be standard)", name, kind(srcFifo), queueLabel(dlq), kind(dlqFifo))
				}
				if !srcFifo {
					sr, dr := num(get(q.props, "MessageRetentionPeriod"), defaultRetentionSeconds), num(get(dlq.props, "MessageRetentionPeriod"), defaultRetentionSeconds)
					if dr <= sr {
						ix.fail(q, RuleDLQRetention, "DLQ %s retains messages %.0f s, not longer than its source %s (%.0f s); a standard queue's message keeps its original enqueue time in the DLQ, so it would expire there almost at once", queueLabel(dlq), dr, name, sr)
					}
				}
			}
		}
		if usedAsDLQ {
			ix.checkDLQAlarm(q, name)
		}
	}
}

func (ix *index) checkDLQAlarm(q *resource, name string) {
	alarms := ix.alarms[q.id]
	if len(alarms) == 0 {
		ix.fail(q, RuleDLQWithoutAlarm, "DLQ %s (dead-letter queue of %s) has no CloudWatch alarm on ApproximateNumberOfMessagesVisible; messages there are paid work that was not done and nobody would know. Add an alarm > 0 (5 min, Maximum) with actions to alertas-mercadofresco (reliablequeue.NewDeadLetterAlarm)", name, strings.Join(uniq(ix.dlqOf[q.id]), ", "))
		return
	}
	var reasons []string
	for _, a := range alarms {
		op := a.str("ComparisonOperator")
		th := num(get(a.props, "Threshold"), -1)
		firesOnFirst := (op == "GreaterThanThreshold" && th >= 0 && th < 1) || (op == "GreaterThanOrEqualToThreshold" && th > 0 && th <= 1)
		actions, _ := get(a.props, "AlarmActions").([]any)
		enabled, isBool := get(a.props, "ActionsEnabled").(bool)
		switch {
		case !firesOnFirst:
			reasons = append(reasons, fmt.Sprintf("%s does not fire on the first message (%s %v)", a.path(), op, get(a.props, "Threshold")))
		case len(actions) == 0 || (isBool && !enabled):
			reasons = append(reasons, fmt.Sprintf("%s has no enabled AlarmActions", a.path()))
		default:
			return
		}
	}
	ix.fail(q, RuleDLQWithoutAlarm, "DLQ %s has no usable alarm: %s", name, strings.Join(reasons, "; "))
}

func (ix *index) checkEventSourceMappings() {
	ceilings := map[string]float64{}     // function id -> sum of MaximumConcurrency
	mappings := map[string][]*resource{} // function id -> its SQS mappings
	defer func() {
		for id, total := range ceilings {
			fn := ix.byID[id]
			reserved, ok := get(fn.props, "ReservedConcurrentExecutions").(float64)
			if !ok || total <= reserved {
				continue
			}
			for _, e := range mappings[id] {
				ix.fail(e, RuleESMReservedConcurrency, "the SQS mappings of %s allow %.0f concurrent invocations (sum of MaximumConcurrency) but its ReservedConcurrentExecutions is %.0f; Lambda throttles the excess and every throttled batch goes back to the queue and spends a receive towards the DLQ. Keep the sum of MaximumConcurrency <= reserved concurrency", fn.path(), total, reserved)
			}
		}
	}()
	for _, e := range ix.ordered {
		if e.typ != typeESM {
			continue
		}
		src := ix.target(get(e.props, "EventSourceArn"))
		arn, _ := get(e.props, "EventSourceArn").(string)
		isSQS := (src != nil && src.typ == typeQueue) || strings.Contains(arn, ":sqs:")
		if src == nil && arn == "" {
			// Unresolvable (imported) source: SQS is the only source without a
			// starting position, Kafka topics or MQ queues.
			sp := get(e.props, "StartingPosition") != nil
			topics := get(e.props, "Topics") != nil
			mq := get(e.props, "Queues") != nil
			self := get(e.props, "SelfManagedEventSource") != nil
			isSQS = !sp && !topics && !mq && !self
		}
		if !isSQS {
			continue
		}
		srcLabel := "its SQS queue"
		if src != nil {
			srcLabel = queueLabel(src)
		}
		if !containsString(get(e.props, "FunctionResponseTypes"), "ReportBatchItemFailures") {
			ix.fail(e, RuleESMReportBatchItemFailures, "SQS event source mapping on %s has no FunctionResponseTypes [ReportBatchItemFailures]; one bad message makes the whole batch return to the queue and be processed again (duplicates, and receives burnt towards the DLQ)", srcLabel)
		}
		sc := get(e.props, "ScalingConfig")
		if get(sc, "MaximumConcurrency") == nil {
			ix.fail(e, RuleESMMaximumConcurrency, "SQS event source mapping on %s has no ScalingConfig.MaximumConcurrency (2..1000); without a ceiling Lambda adds pollers as the backlog grows and multiplies pressure on a dependency that is already failing", srcLabel)
		}
		if fn, _ := ix.function(get(e.props, "FunctionName")); fn != nil {
			if mc, ok := get(sc, "MaximumConcurrency").(float64); ok {
				ceilings[fn.id] += mc
				mappings[fn.id] = append(mappings[fn.id], e)
			}
		}
		if src == nil || src.typ != typeQueue {
			continue
		}
		fn, timeout := ix.function(get(e.props, "FunctionName"))
		if fn == nil {
			ix.warn(e, RuleVisibilityTimeout, "cannot resolve the function of the mapping on %s to check VisibilityTimeout >= %d x its timeout", srcLabel, VisibilityMultiplier)
			continue
		}
		vis := num(get(src.props, "VisibilityTimeout"), defaultVisibilitySeconds)
		window := num(get(e.props, "MaximumBatchingWindowInSeconds"), 0)
		required := VisibilityMultiplier*timeout + window
		if vis < required {
			extra := ""
			if window > 0 {
				extra = fmt.Sprintf(" + batching window %.0f s", window)
			}
			ix.fail(e, RuleVisibilityTimeout, "queue %s has VisibilityTimeout %.0f s < %d x timeout of consumer %s (%.0f s)%s = %.0f s; a message becomes visible again while its first delivery is still running and is processed twice (the lesson's double charge: 120 s visibility vs a 180 s gateway timeout)", srcLabel, vis, VisibilityMultiplier, fn.path(), timeout, extra, required)
		}
	}
}

// function follows FunctionName through aliases and versions to the
// CfnFunction and returns it with its timeout.
func (ix *index) function(v any) (*resource, float64) {
	for range 4 {
		r := ix.target(v)
		if r == nil {
			return nil, 0
		}
		switch r.typ {
		case typeFunction:
			return r, num(get(r.props, "Timeout"), defaultLambdaTimeout)
		case typeAlias, typeVersion:
			v = get(r.props, "FunctionName")
		default:
			return nil, 0
		}
	}
	return nil, 0
}

func (ix *index) checkSubscriptions() {
	const msg = "SNS topic %s delivers to a Lambda function (protocol lambda); SNS retries a failing Lambda only a few times and then drops the message. Subscribe an SQS queue (with its DLQ) and consume it with an event source mapping"
	for _, r := range ix.ordered {
		switch r.typ {
		case typeSubscription:
			if strings.EqualFold(r.str("Protocol"), "lambda") {
				ix.fail(r, RuleSNSToLambda, msg, topicLabel(ix, get(r.props, "TopicArn")))
			}
		case typeTopic:
			subs, _ := get(r.props, "Subscription").([]any)
			for _, s := range subs {
				if sm, _ := s.(map[string]any); sm != nil && strings.EqualFold(fmt.Sprint(get(sm, "Protocol")), "lambda") {
					ix.fail(r, RuleSNSToLambda, msg, r.path())
				}
			}
		}
	}
}

func topicLabel(ix *index, v any) string {
	if t := ix.target(v); t != nil {
		if n := t.str("TopicName"); n != "" {
			return n
		}
		return t.path()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func queueLabel(q *resource) string {
	if n := q.str("QueueName"); n != "" {
		return fmt.Sprintf("%q (%s)", n, q.path())
	}
	return q.path()
}

func redrivePolicy(v any) map[string]any {
	switch x := v.(type) {
	case map[string]any:
		return x
	case string:
		var m map[string]any
		if json.Unmarshal([]byte(x), &m) == nil {
			return m
		}
	}
	return nil
}

// declaresDLQ reports whether a RedriveAllowPolicy names source queues or
// allows all: the queue declares itself a DLQ (its sources may live in
// another stack, where the reference cannot be followed).
func declaresDLQ(v any) bool {
	m := redrivePolicy(v)
	if m == nil {
		return false
	}
	switch m["redrivePermission"] {
	case "byQueue":
		s, _ := m["sourceQueueArns"].([]any)
		return len(s) > 0
	case "allowAll":
		return true
	}
	return false
}

func isFifo(q *resource) bool {
	switch x := get(q.props, "FifoQueue").(type) {
	case bool:
		return x
	case string:
		return x == "true"
	}
	return strings.HasSuffix(q.str("QueueName"), ".fifo")
}

func kind(fifo bool) string {
	if fifo {
		return "FIFO"
	}
	return "standard"
}

func num(v any, def float64) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	case string:
		var f float64
		if _, err := fmt.Sscan(x, &f); err == nil {
			return f
		}
	}
	return def
}

func containsString(v any, want string) bool {
	xs, _ := v.([]any)
	for _, x := range xs {
		if x == want {
			return true
		}
	}
	return false
}

func uniq(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// get navigates maps by keys compared case-insensitively: L1 properties are
// read in their CDK (camelCase) form, CloudFormation names differ only in case.
func get(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		val, found := m[k]
		if !found {
			for mk, mv := range m {
				if strings.EqualFold(mk, k) {
					val, found = mv, true
					break
				}
			}
		}
		if !found {
			return nil
		}
		v = val
	}
	return v
}
