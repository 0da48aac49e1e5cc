// Package guardrails holds the CDK Aspects that fail a synthesis when the
// messaging layer is configured to lose or duplicate work. They read L1
// resources (through constructs/cfnindex), so they also catch resources made
// without the project's constructs. Each finding is an error annotation on
// the offending resource that names its rule:
//
//	[MF-SQS-VISIBILITY] ... VisibilityTimeout 120 s < 6 x timeout of consumer ... (180 s) = 1080 s
//
// Rules: MF-SQS-DLQ, MF-SQS-DLQ-ALARM, MF-SQS-VISIBILITY, MF-SNS-LAMBDA,
// MF-SQS-FIFO-DLQ, MF-SQS-DLQ-RETENTION, MF-ESM-MAXCONCURRENCY,
// MF-ESM-PARTIAL-BATCH, MF-ESM-RESERVED, MF-ATTEMPTS, MF-CONTRACT and
// MF-CONTRACT-ORDER, each stated in docs/design.md#guardrails. What a rule
// cannot read is a finding too, never a skipped check. Acknowledge silences
// the findings on a construct and its children, with a written reason.
package guardrails

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/mercadofresco/integration/constructs/cfnindex"
	"github.com/mercadofresco/integration/constructs/reliablequeue"
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
const VisibilityMultiplier = reliablequeue.VisibilityMultiplier

// CloudFormation defaults used when a property is absent.
const (
	defaultVisibilitySeconds = 30
	defaultRetentionSeconds  = 345600 // 4 days
)

const (
	ackMetadataType = "mercadofresco:guardrails:acknowledged"
)

const (
	typeQueue        = cfnindex.TypeQueue
	typeESM          = cfnindex.TypeESM
	typeFunction     = cfnindex.TypeFunction
	typeSubscription = cfnindex.TypeSubscription
	typeTopic        = cfnindex.TypeTopic
	typeAlarm        = cfnindex.TypeAlarm
)

// Apply adds the checks to scope (an App, Stage or Stack) with READONLY
// priority: the messaging rules, then the contract rules, for every stack
// under scope, on one listing of the app's tree. The aspect sits on a
// construct of its own with no children, added to scope (id
// GuardrailsChecks), so the CDK calls into Go once per Apply rather than
// once per construct (docs/design.md#performance).
func Apply(scope constructs.Construct) {
	at := constructs.NewConstruct(scope, jsii.String("GuardrailsChecks"))
	awscdk.Aspects_Of(at).Add(&checks{scope: scope, s: newSession()}, &awscdk.AspectOptions{Priority: awscdk.AspectPriority_READONLY()})
}

// checks is the aspect Apply adds.
type checks struct {
	scope constructs.Construct
	s     *session
}

// Visit runs on the one construct the aspect is on: it checks every stack
// under scope, in construct-tree order.
func (k *checks) Visit(constructs.IConstruct) {
	t := k.s.tree(k.scope)
	under := *k.scope.Node().Path()
	for _, ix := range t.Indexes {
		if p := ix.StackPath(); under == "" || p == under || strings.HasPrefix(p, under+"/") {
			k.checkMessaging(ix.Stack)
			k.checkContracts(ix.Stack)
		}
	}
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
	recordAcknowledgement(c, rule, reason)
}

// checkMessaging runs the messaging rules on stack, once.
func (k *checks) checkMessaging(stack awscdk.Stack) {
	if !once(&messagingChecked, stack) {
		return
	}
	t := k.s.tree(stack)
	ix := newIndex(t, t.Of(stack))
	ix.checkQueues()
	ix.checkEventSourceMappings()
	ix.checkSubscriptions()
	ix.checkAttempts()
}

// index is the stack's resources (cfnindex) with what the rules need
// beyond references: who uses each queue as a DLQ, and the alarms on each
// queue's depth.
type index struct {
	*cfnindex.Index
	tree   *cfnindex.Tree
	dlqOf  map[string][]string // DLQ id -> who uses it as DLQ (paths)
	alarms map[string][]*resource
	// findings are the messages reported, in the order they were reported
	// (deterministic: every rule walks resources in tree order or in
	// sorted order, never in map order).
	findings []string
}

type resource = cfnindex.Resource

func newIndex(t *cfnindex.Tree, stack *cfnindex.Index) *index {
	ix := &index{Index: stack, tree: t, dlqOf: map[string][]string{}, alarms: map[string][]*resource{}}
	for _, r := range ix.Ordered {
		ix.collectDLQRefs(r, r.Props, false)
		if r.Type == typeAlarm {
			ix.collectAlarm(r)
		}
	}
	return ix
}

// collectDLQRefs marks every queue referenced under a dead-letter property
// (RedrivePolicy.deadLetterTargetArn of queues and subscriptions,
// DeadLetterConfig of Lambda functions, EventBridge targets and pipes,
// DestinationConfig.OnFailure of event source mappings).
func (ix *index) collectDLQRefs(owner *resource, v any, inDLQ bool) {
	switch x := v.(type) {
	case map[string]any:
		if inDLQ {
			if t := ix.Target(x); t != nil && t.Type == typeQueue {
				ix.dlqOf[t.ID] = append(ix.dlqOf[t.ID], owner.Path())
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
			if t := ix.ByName(x); t != nil && t.Type == typeQueue {
				ix.dlqOf[t.ID] = append(ix.dlqOf[t.ID], owner.Path())
			}
		}
	}
}

// collectAlarm records alarms on ApproximateNumberOfMessagesVisible by queue.
func (ix *index) collectAlarm(a *resource) {
	metrics := []map[string]any{a.Props}
	if ms, ok := cfnindex.Get(a.Props, "Metrics").([]any); ok {
		for _, m := range ms {
			mm, _ := m.(map[string]any)
			if metric, ok := cfnindex.Get(mm, "MetricStat", "Metric").(map[string]any); ok {
				metrics = append(metrics, metric)
			}
		}
	}
	for _, m := range metrics {
		if cfnindex.Get(m, "MetricName") != "ApproximateNumberOfMessagesVisible" || cfnindex.Get(m, "Namespace") != "AWS/SQS" {
			continue
		}
		dims, _ := cfnindex.Get(m, "Dimensions").([]any)
		for _, d := range dims {
			dm, _ := d.(map[string]any)
			if cfnindex.Get(dm, "Name") != "QueueName" {
				continue
			}
			if q := ix.Target(cfnindex.Get(dm, "Value")); q != nil && q.Type == typeQueue {
				ix.alarms[q.ID] = append(ix.alarms[q.ID], a)
			}
		}
	}
}

func (ix *index) fail(r *resource, rule, format string, a ...any) {
	if acknowledgedReason(ix.tree.Root, r, rule) != "" {
		return
	}
	msg := fmt.Sprintf("[%s] %s: %s", rule, r.Path(), fmt.Sprintf(format, a...))
	ix.findings = append(ix.findings, msg)
	awscdk.Annotations_Of(r.Cfn).AddError(jsii.String(msg))
}

func jsiiString(s string) *string { return jsii.String(s) }

func (ix *index) checkQueues() {
	for _, q := range ix.Ordered {
		if q.Type != typeQueue {
			continue
		}
		name := queueLabel(q)
		rp := redrivePolicy(cfnindex.Get(q.Props, "RedrivePolicy"))
		target, hasTarget := rp["deadLetterTargetArn"]
		usedAsDLQ := len(ix.dlqOf[q.ID]) > 0 || declaresDLQ(cfnindex.Get(q.Props, "RedriveAllowPolicy"))
		if !hasTarget && !usedAsDLQ {
			ix.fail(q, RuleQueueWithoutDLQ, "queue %s has no dead-letter queue (RedrivePolicy) and is not the DLQ of anything; a failing message would be retried until it expires and then be deleted silently. Give it a DLQ of the same type with an alarm (reliablequeue.New does)", name)
		}
		if hasTarget {
			if dlq := ix.Target(target); dlq != nil && dlq.Type == typeQueue {
				srcFifo, dlqFifo := isFifo(q), isFifo(dlq)
				if srcFifo != dlqFifo {
					ix.fail(q, RuleFifoDLQType, "queue %s is %s but its DLQ %s is %s; SQS requires the DLQ of a FIFO queue to be FIFO (and of a standard queue to be standard)", name, kind(srcFifo), queueLabel(dlq), kind(dlqFifo))
				}
				if !srcFifo {
					sr, dr := cfnindex.Num(cfnindex.Get(q.Props, "MessageRetentionPeriod"), defaultRetentionSeconds), cfnindex.Num(cfnindex.Get(dlq.Props, "MessageRetentionPeriod"), defaultRetentionSeconds)
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
	alarms := ix.alarms[q.ID]
	if len(alarms) == 0 {
		ix.fail(q, RuleDLQWithoutAlarm, "DLQ %s (dead-letter queue of %s) has no alarm on ApproximateNumberOfMessagesVisible > 0 (5 min, Maximum) to alertas-mercadofresco: add reliablequeue.NewDeadLetterAlarm (docs/design.md#dlq-alarm)", name, strings.Join(uniq(ix.dlqOf[q.ID]), ", "))
		return
	}
	var reasons []string
	for _, a := range alarms {
		op := a.Str("ComparisonOperator")
		th := cfnindex.Num(cfnindex.Get(a.Props, "Threshold"), -1)
		firesOnFirst := (op == "GreaterThanThreshold" && th >= 0 && th < 1) || (op == "GreaterThanOrEqualToThreshold" && th > 0 && th <= 1)
		actions, _ := cfnindex.Get(a.Props, "AlarmActions").([]any)
		enabled, isBool := cfnindex.Get(a.Props, "ActionsEnabled").(bool)
		switch {
		case !firesOnFirst:
			reasons = append(reasons, fmt.Sprintf("%s does not fire on the first message (%s %v)", a.Path(), op, cfnindex.Get(a.Props, "Threshold")))
		case len(actions) == 0 || (isBool && !enabled):
			reasons = append(reasons, fmt.Sprintf("%s has no enabled AlarmActions", a.Path()))
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
		for _, id := range slices.Sorted(maps.Keys(ceilings)) {
			total := ceilings[id]
			fn := ix.ByID[id]
			reserved, ok := cfnindex.Get(fn.Props, "ReservedConcurrentExecutions").(float64)
			if !ok || total <= reserved {
				continue
			}
			for _, e := range mappings[id] {
				ix.fail(e, RuleESMReservedConcurrency, "the SQS mappings of %s allow %.0f concurrent invocations (sum of MaximumConcurrency) but its ReservedConcurrentExecutions is %.0f: keep the sum <= reserved, a throttled batch spends a receive (docs/design.md#consumer-concurrency)", fn.Path(), total, reserved)
			}
		}
	}()
	for _, e := range ix.Ordered {
		if e.Type != typeESM {
			continue
		}
		src := ix.Target(cfnindex.Get(e.Props, "EventSourceArn"))
		arn, _ := cfnindex.Get(e.Props, "EventSourceArn").(string)
		isSQS := (src != nil && src.Type == typeQueue) || strings.Contains(arn, ":sqs:")
		if src == nil && arn == "" {
			// Unresolvable (imported) source: SQS is the only source without a
			// starting position, Kafka topics or MQ queues.
			sp := cfnindex.Get(e.Props, "StartingPosition") != nil
			topics := cfnindex.Get(e.Props, "Topics") != nil
			mq := cfnindex.Get(e.Props, "Queues") != nil
			self := cfnindex.Get(e.Props, "SelfManagedEventSource") != nil
			isSQS = !sp && !topics && !mq && !self
		}
		if !isSQS {
			continue
		}
		srcLabel := "its SQS queue"
		if src != nil {
			srcLabel = queueLabel(src)
		}
		if !cfnindex.ContainsString(cfnindex.Get(e.Props, "FunctionResponseTypes"), "ReportBatchItemFailures") {
			ix.fail(e, RuleESMReportBatchItemFailures, "SQS event source mapping on %s has no FunctionResponseTypes [ReportBatchItemFailures]; one bad message makes the whole batch return to the queue and be processed again (duplicates, and receives burnt towards the DLQ)", srcLabel)
		}
		sc := cfnindex.Get(e.Props, "ScalingConfig")
		if cfnindex.Get(sc, "MaximumConcurrency") == nil {
			ix.fail(e, RuleESMMaximumConcurrency, "SQS event source mapping on %s has no ScalingConfig.MaximumConcurrency (2..1000); without a ceiling Lambda adds pollers as the backlog grows and multiplies pressure on a dependency that is already failing", srcLabel)
		}
		if fn, _ := ix.Function(cfnindex.Get(e.Props, "FunctionName")); fn != nil {
			if mc, ok := cfnindex.Get(sc, "MaximumConcurrency").(float64); ok {
				ceilings[fn.ID] += mc
				mappings[fn.ID] = append(mappings[fn.ID], e)
			}
		}
		if src == nil || src.Type != typeQueue {
			continue
		}
		fn, timeout := ix.Function(cfnindex.Get(e.Props, "FunctionName"))
		if fn == nil {
			ix.fail(e, RuleVisibilityTimeout, "cannot resolve the function of the mapping on %s to check VisibilityTimeout >= %d x its timeout; reference the function in this stack, or acknowledge the rule with the reason the visibility is safe", srcLabel, VisibilityMultiplier)
			continue
		}
		vis := cfnindex.Num(cfnindex.Get(src.Props, "VisibilityTimeout"), defaultVisibilitySeconds)
		window := cfnindex.Num(cfnindex.Get(e.Props, "MaximumBatchingWindowInSeconds"), 0)
		required := VisibilityMultiplier*timeout + window
		if vis < required {
			extra := ""
			if window > 0 {
				extra = fmt.Sprintf(" + batching window %.0f s", window)
			}
			ix.fail(e, RuleVisibilityTimeout, "queue %s has VisibilityTimeout %.0f s < %d x timeout of consumer %s (%.0f s)%s = %.0f s; a message becomes visible again while its first delivery is still running and is processed twice (docs/design.md#visibility-timeout)%s", srcLabel, vis, VisibilityMultiplier, fn.Path(), timeout, extra, required,
				changeHint(src, "VisibilityTimeout", fn, "Timeout"))
		}
	}
}

func (ix *index) checkSubscriptions() {
	const msg = "SNS topic %s delivers to a Lambda function (protocol lambda); SNS retries a failing Lambda only a few times and then drops the message. Subscribe an SQS queue (with its DLQ) and consume it with an event source mapping"
	for _, r := range ix.Ordered {
		switch r.Type {
		case typeSubscription:
			if strings.EqualFold(r.Str("Protocol"), "lambda") {
				ix.fail(r, RuleSNSToLambda, msg, topicLabel(ix, cfnindex.Get(r.Props, "TopicArn")))
			}
		case typeTopic:
			subs, _ := cfnindex.Get(r.Props, "Subscription").([]any)
			for _, s := range subs {
				if sm, _ := s.(map[string]any); sm != nil && strings.EqualFold(fmt.Sprint(cfnindex.Get(sm, "Protocol")), "lambda") {
					ix.fail(r, RuleSNSToLambda, msg, r.Path())
				}
			}
		}
	}
}

func topicLabel(ix *index, v any) string {
	if t := ix.Target(v); t != nil {
		if n := t.Str("TopicName"); n != "" {
			return n
		}
		return t.Path()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func queueLabel(q *resource) string {
	if n := q.Str("QueueName"); n != "" {
		return fmt.Sprintf("%q (%s)", n, q.Path())
	}
	return q.Path()
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
	switch x := cfnindex.Get(q.Props, "FifoQueue").(type) {
	case bool:
		return x
	case string:
		return x == "true"
	}
	return strings.HasSuffix(q.Str("QueueName"), ".fifo")
}

func kind(fifo bool) string {
	if fifo {
		return "FIFO"
	}
	return "standard"
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
