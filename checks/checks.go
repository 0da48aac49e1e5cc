// Package checks holds the rules the synthesized app must pass, run on its
// templates after synthesis, in every environment (synthesized.App): the
// messaging rules (MF-SQS-DLQ, MF-SQS-DLQ-ALARM, MF-SQS-VISIBILITY,
// MF-SQS-FIFO-DLQ, MF-SQS-DLQ-RETENTION, MF-SNS-LAMBDA,
// MF-ESM-MAXCONCURRENCY, MF-ESM-PARTIAL-BATCH, MF-ESM-RESERVED), the
// worst-case attempts (MF-ATTEMPTS), the event contracts and the deploy
// order they need (MF-CONTRACT, MF-CONTRACT-ORDER), the database
// connections (MF-DB-CONNECTIONS) and the network paths (MF-REACH). A
// finding names its rule, the resource's construct path and the numbers;
// what a rule cannot read is a finding too, never a skipped
// check. A construct acknowledges a rule with a written reason
// (core.Acknowledge, construct metadata the manifest carries), and SetBy
// names the constant behind a property, which a finding then names.
// docs/design.md#checks.
package checks

import (
	"fmt"
	"strings"

	"github.com/mercadofresco/integration/synthesized"
)

// Finding is one violation of a rule, reported on a resource.
type Finding struct {
	Rule, Stack, Path, Message string
}

func (f Finding) String() string { return fmt.Sprintf("[%s] %s: %s", f.Rule, f.Path, f.Message) }

// Check runs every rule on app and returns the findings no construct
// acknowledged, rule family by rule family, each in a stable order.
func Check(app *synthesized.App) []Finding {
	c := &checker{app: app}
	c.messaging()
	c.connections()
	for _, p := range c.attempts() {
		c.attemptsFinding(p)
	}
	c.contracts()
	calls, excess := reach(app)
	for _, r := range calls {
		if !r.OK() {
			c.fail(r.resource, RuleReach, "%s", r.Finding().Message)
		}
	}
	for _, x := range excess {
		c.fail(x.owner, RuleReach, "%s", x.message)
	}
	return c.found
}

// Run checks every environment of asm.
func Run(asm *synthesized.Assembly) []Finding {
	var out []Finding
	for _, app := range asm.Envs {
		out = append(out, Check(app)...)
	}
	return out
}

type checker struct {
	app   *synthesized.App
	found []Finding
	seen  map[string]bool
}

// fail reports a finding on r unless a construct acknowledged the rule
// there; the same finding is reported once.
func (c *checker) fail(r *synthesized.Resource, rule, format string, a ...any) {
	if Acknowledged(c.app, r, rule) != "" {
		return
	}
	f := Finding{Rule: rule, Stack: r.Stack, Path: r.Path(), Message: fmt.Sprintf(format, a...)}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	if !c.seen[f.String()] {
		c.seen[f.String()] = true
		c.found = append(c.found, f)
	}
}

// Acknowledged is the reason a construct gave for rule on r's construct
// or one above it ("" when none did; the outermost first).
func Acknowledged(app *synthesized.App, r *synthesized.Resource, rule string) string {
	for _, e := range app.ConstructMetadata(r.Path()) {
		if m, ok := e.Data.(map[string]any); ok && e.Type == synthesized.MetadataAcknowledged && m["rule"] == rule {
			reason, _ := m["reason"].(string)
			return reason
		}
	}
	return ""
}

// setBy is the source SetBy recorded for property on r's construct or the
// nearest one above it, "" when nothing was.
func setBy(app *synthesized.App, r *synthesized.Resource, property string) string {
	out := ""
	for _, e := range app.ConstructMetadata(r.Path()) {
		if s, ok := e.Data.(string); ok && e.Type == synthesized.MetadataSetBy+property {
			out = s
		}
	}
	return out
}

// label is a resource's name (QueueName, FunctionName, ...), or, for a
// resource CloudFormation names itself, its construct path inside its
// stack without the L1's "/Resource".
func label(r *synthesized.Resource) string {
	for _, k := range []string{"QueueName", "FunctionName", "DBProxyName", "Name", "StateMachineName", "TopicName", "TableName", "LogGroupName"} {
		if s, ok := r.Prop(k).(string); ok && s != "" {
			return s
		}
	}
	return strings.TrimSuffix(strings.TrimPrefix(r.Path(), r.Stack+"/"), "/Resource")
}

// str is v as a string, "" when it is not one.
func str(v any) string { s, _ := v.(string); return s }
