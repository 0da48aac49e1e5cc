package checks

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mercadofresco/integration/synthesized"
)

// The messaging rules (docs/design.md#checks).
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

// VisibilityMultiplier is the AWS rule: queue visibility >= 6 x function
// timeout (queues.VisibilityMultiplier sizes queues by it).
const VisibilityMultiplier = 6

// CloudFormation and Lambda defaults when a property is absent.
const (
	defaultVisibilitySeconds = 30
	defaultRetentionSeconds  = 345600 // 4 days
	defaultLambdaTimeout     = 3
)

const typeQueue = "AWS::SQS::Queue"

var kinds = map[bool]string{true: "FIFO", false: "standard"} // of a queue, by FifoQueue

func (c *checker) messaging() {
	c.queues()
	c.mappings()
	c.subscriptions()
}

func (c *checker) queues() {
	for _, q := range c.app.Resources(typeQueue) {
		name := queueLabel(q)
		var sources []string
		for _, e := range c.app.To(q, synthesized.DeadLetter) {
			sources = append(sources, e.From.Path())
		}
		usedAsDLQ := len(sources) > 0 || declaresDLQ(q.Prop("RedriveAllowPolicy"))
		target, hasTarget := synthesized.Redrive(q.Prop("RedrivePolicy"))["deadLetterTargetArn"]
		if !hasTarget && !usedAsDLQ {
			c.fail(q, RuleQueueWithoutDLQ, "queue %s has no dead-letter queue (RedrivePolicy) and is not the DLQ of anything; a failing message would be retried until it expires and then be deleted silently. Give it a DLQ of the same type with an alarm (queues.NewQueue does)", name)
		}
		if dlq := c.app.Find(q.Stack, target); hasTarget && dlq != nil && dlq.Type == typeQueue {
			srcFifo, dlqFifo := isFifo(q), isFifo(dlq)
			if srcFifo != dlqFifo {
				c.fail(q, RuleFifoDLQType, "queue %s is %s but its DLQ %s is %s; SQS requires the DLQ of a FIFO queue to be FIFO (and of a standard queue to be standard)", name, kinds[srcFifo], queueLabel(dlq), kinds[dlqFifo])
			}
			if sr, dr := synthesized.Number(q.Prop("MessageRetentionPeriod"), defaultRetentionSeconds), synthesized.Number(dlq.Prop("MessageRetentionPeriod"), defaultRetentionSeconds); !srcFifo && dr <= sr {
				c.fail(q, RuleDLQRetention, "DLQ %s retains messages %.0f s, not longer than its source %s (%.0f s); a standard queue's message keeps its original enqueue time in the DLQ, so it would expire there almost at once", queueLabel(dlq), dr, name, sr)
			}
		}
		if usedAsDLQ {
			c.dlqAlarm(q, name, sources)
		}
	}
}

// dlqAlarm requires an alarm on the DLQ's depth that fires on its first
// message and notifies someone.
func (c *checker) dlqAlarm(q *synthesized.Resource, name string, sources []string) {
	var reasons []string
	alarmed := false
	for _, a := range c.app.Resources("AWS::CloudWatch::Alarm") {
		if !c.watchesDepth(a, q) {
			continue
		}
		alarmed = true
		op, th := str(a.Prop("ComparisonOperator")), synthesized.Number(a.Prop("Threshold"), -1)
		firesOnFirst := (op == "GreaterThanThreshold" && th >= 0 && th < 1) || (op == "GreaterThanOrEqualToThreshold" && th > 0 && th <= 1)
		actions, _ := a.Prop("AlarmActions").([]any)
		enabled, isBool := a.Prop("ActionsEnabled").(bool)
		switch {
		case !firesOnFirst:
			reasons = append(reasons, fmt.Sprintf("%s does not fire on the first message (%s %v)", a.Path(), op, a.Prop("Threshold")))
		case len(actions) == 0 || (isBool && !enabled):
			reasons = append(reasons, fmt.Sprintf("%s has no enabled AlarmActions", a.Path()))
		default:
			return
		}
	}
	if slices.Sort(sources); !alarmed {
		c.fail(q, RuleDLQWithoutAlarm, "DLQ %s (dead-letter queue of %s) has no alarm on ApproximateNumberOfMessagesVisible > 0 (5 min, Maximum) to alertas-mercadofresco: add queues.NewDeadLetterAlarm (docs/design.md#dlq-alarm)", name, strings.Join(slices.Compact(sources), ", "))
		return
	}
	c.fail(q, RuleDLQWithoutAlarm, "DLQ %s has no usable alarm: %s", name, strings.Join(reasons, "; "))
}

// watchesDepth reports whether alarm a watches q's
// ApproximateNumberOfMessagesVisible (as its metric, or one of its
// metric math's).
func (c *checker) watchesDepth(a, q *synthesized.Resource) bool {
	metrics := []any{a.Properties}
	for _, m := range listOf(a.Prop("Metrics")) {
		metrics = append(metrics, synthesized.Dig(m, "MetricStat", "Metric"))
	}
	for _, m := range metrics {
		if synthesized.Dig(m, "MetricName") != "ApproximateNumberOfMessagesVisible" || synthesized.Dig(m, "Namespace") != "AWS/SQS" {
			continue
		}
		for _, d := range listOf(synthesized.Dig(m, "Dimensions")) {
			if synthesized.Dig(d, "Name") == "QueueName" && c.app.Find(a.Stack, synthesized.Dig(d, "Value")) == q {
				return true
			}
		}
	}
	return false
}

func (c *checker) mappings() {
	ceilings := map[*synthesized.Resource]float64{}                 // function -> sum of MaximumConcurrency
	mappings := map[*synthesized.Resource][]*synthesized.Resource{} // function -> its SQS mappings
	var fns []*synthesized.Resource
	for _, e := range c.app.Edges() {
		if e.Kind != synthesized.Mapping {
			continue
		}
		m, src, fn := e.Via, e.From, e.To
		isSQS := (src != nil && src.Type == typeQueue) || strings.Contains(e.Target, ":sqs:")
		if src == nil && e.Target == "" {
			// An unresolvable source: SQS is the only source without a
			// starting position, Kafka topics or MQ queues.
			isSQS = true
			for _, k := range []string{"StartingPosition", "Topics", "Queues", "SelfManagedEventSource"} {
				isSQS = isSQS && m.Prop(k) == nil
			}
		}
		if !isSQS {
			continue
		}
		srcLabel := "its SQS queue"
		if src != nil {
			srcLabel = queueLabel(src)
		}
		if !slices.Contains(listOf(m.Prop("FunctionResponseTypes")), any("ReportBatchItemFailures")) {
			c.fail(m, RuleESMReportBatchItemFailures, "SQS event source mapping on %s has no FunctionResponseTypes [ReportBatchItemFailures]; one bad message makes the whole batch return to the queue and be processed again (duplicates, and receives burnt towards the DLQ)", srcLabel)
		}
		mc, hasCeiling := synthesized.Dig(m.Prop("ScalingConfig"), "MaximumConcurrency").(float64)
		if synthesized.Dig(m.Prop("ScalingConfig"), "MaximumConcurrency") == nil {
			c.fail(m, RuleESMMaximumConcurrency, "SQS event source mapping on %s has no ScalingConfig.MaximumConcurrency (2..1000); without a ceiling Lambda adds pollers as the backlog grows and multiplies pressure on a dependency that is already failing", srcLabel)
		}
		if fn != nil && hasCeiling {
			if mappings[fn] == nil {
				fns = append(fns, fn)
			}
			ceilings[fn] += mc
			mappings[fn] = append(mappings[fn], m)
		}
		if src == nil || src.Type != typeQueue {
			continue
		}
		if fn == nil {
			c.fail(m, RuleVisibilityTimeout, "cannot resolve the function of the mapping on %s to check VisibilityTimeout >= %d x its timeout; reference the function in this stack, or acknowledge the rule with the reason the visibility is safe", srcLabel, VisibilityMultiplier)
			continue
		}
		timeout := synthesized.Number(fn.Prop("Timeout"), defaultLambdaTimeout)
		vis := synthesized.Number(src.Prop("VisibilityTimeout"), defaultVisibilitySeconds)
		window := synthesized.Number(m.Prop("MaximumBatchingWindowInSeconds"), 0)
		if required := VisibilityMultiplier*timeout + window; vis < required {
			extra := ""
			if window > 0 {
				extra = fmt.Sprintf(" + batching window %.0f s", window)
			}
			c.fail(m, RuleVisibilityTimeout, "queue %s has VisibilityTimeout %.0f s < %d x timeout of consumer %s (%.0f s)%s = %.0f s; a message becomes visible again while its first delivery is still running and is processed twice (docs/design.md#visibility-timeout)%s",
				srcLabel, vis, VisibilityMultiplier, fn.Path(), timeout, extra, required, c.changeHint(src, "VisibilityTimeout", fn, "Timeout"))
		}
	}
	for _, fn := range fns {
		reserved, ok := fn.Prop("ReservedConcurrentExecutions").(float64)
		if total := ceilings[fn]; ok && total > reserved {
			for _, m := range mappings[fn] {
				c.fail(m, RuleESMReservedConcurrency, "the SQS mappings of %s allow %.0f concurrent invocations (sum of MaximumConcurrency) but its ReservedConcurrentExecutions is %.0f: keep the sum <= reserved, a throttled batch spends a receive (docs/design.md#consumer-concurrency)", fn.Path(), total, reserved)
			}
		}
	}
}

// changeHint is "; to fix, change A or B" for the sources SetBy recorded
// for the properties of the resources, "" when none was.
func (c *checker) changeHint(a *synthesized.Resource, aProp string, b *synthesized.Resource, bProp string) string {
	var names []string
	for _, p := range []struct {
		r    *synthesized.Resource
		prop string
	}{{a, aProp}, {b, bProp}} {
		if s := setBy(c.app, p.r, p.prop); s != "" {
			names = append(names, fmt.Sprintf("%s (%s)", s, p.prop))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "; to fix, change " + strings.Join(names, " or ")
}

func (c *checker) subscriptions() {
	const msg = "SNS topic %s delivers to a Lambda function (protocol lambda); SNS retries a failing Lambda only a few times and then drops the message. Subscribe an SQS queue (with its DLQ) and consume it with an event source mapping"
	for _, e := range c.app.Edges() {
		if e.Kind != synthesized.Subscription || !strings.EqualFold(str(e.Settings["Protocol"]), "lambda") {
			continue
		}
		topic := e.Via.Path()
		if e.Via.Type == "AWS::SNS::Subscription" {
			b, _ := json.Marshal(e.Via.Prop("TopicArn"))
			topic = string(b)
			if e.From != nil {
				topic = e.From.Path()
				if n := str(e.From.Prop("TopicName")); n != "" {
					topic = n
				}
			}
		}
		c.fail(e.Via, RuleSNSToLambda, msg, topic)
	}
}

func queueLabel(q *synthesized.Resource) string {
	if n := str(q.Prop("QueueName")); n != "" {
		return fmt.Sprintf("%q (%s)", n, q.Path())
	}
	return q.Path()
}

// declaresDLQ reports whether a RedriveAllowPolicy names source queues or
// allows all: the queue declares itself a DLQ (its sources may be outside
// the app).
func declaresDLQ(v any) bool {
	m := synthesized.Redrive(v)
	switch m["redrivePermission"] {
	case "byQueue":
		s, _ := m["sourceQueueArns"].([]any)
		return len(s) > 0
	case "allowAll":
		return true
	}
	return false
}

func isFifo(q *synthesized.Resource) bool {
	switch x := q.Prop("FifoQueue").(type) {
	case bool:
		return x
	case string:
		return x == "true"
	}
	return strings.HasSuffix(str(q.Prop("QueueName")), ".fifo")
}

func listOf(v any) []any { xs, _ := v.([]any); return xs }
