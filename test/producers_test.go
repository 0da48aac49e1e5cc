package test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/internal/guardeval"
	"github.com/mercadofresco/integration/stacks"
	"github.com/mercadofresco/integration/synthesized"
)

// TestOnlyKnownProducersSendToQueuesAndTopics walks every environment's
// templates: every queue, topic and event bus carries one known-producers
// Deny
// (constructs/queues); every producer the templates wire passes it
// (an IAM policy granting sqs:SendMessage or sns:Publish, a rule's target
// or DLQ, a pipe's, an SNS subscription and its DLQ, an alarm's actions, a
// function's or schedule's dead-letter target, the on-call's redrive to a
// consumer queue); a stranger role, a stranger topic or rule and a request
// with neither key are refused by every guard; and no guard admits what
// produces nothing into it.
func TestOnlyKnownProducersSendToQueuesAndTopics(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			w := walkProducers(t, s, es)
			queues, topics := len(w.app.Resources("AWS::SQS::Queue")), len(w.app.Resources("AWS::SNS::Topic"))
			if want := queues + topics + len(w.app.Resources("AWS::Events::EventBus")); len(w.guards) != want || queues == 0 || topics == 0 {
				t.Fatalf("%d guarded queues, topics and buses, want the environment's %d queues, %d topics and its bus", len(w.guards), queues, topics)
			}
			buses := 0
			for arn, g := range w.guards {
				if strings.Contains(arn, ":event-bus/") {
					buses++
					// The outbox publisher and the carts pipe, by name.
					if len(g.admitted) != 2 {
						t.Errorf("%s admits %v, want the outbox publisher's and the carts pipe's roles", g.name, g.admitted)
					}
				}
			}
			if buses != 1 {
				t.Errorf("%d guarded event buses, want 1", buses)
			}
			for _, e := range w.edges {
				g := w.guards[e.target]
				refused, err := guardeval.Refuses(g.statement, e.req)
				switch {
				case err != nil:
					t.Errorf("%s: %v", g.name, err)
				case refused:
					t.Errorf("%s refuses its producer %s (%+v)", g.name, e.from, e.req)
				}
				g.markUsed(e.req)
			}
			acct, region := es.Env.Account, es.Env.Region
			strangers := map[string]guardeval.Request{
				"a stranger role":  {PrincipalArn: "arn:aws:iam::" + acct + ":role/intruso"},
				"a stranger topic": {SourceArn: "arn:aws:sns:" + region + ":" + acct + ":intruso"},
				"a stranger rule":  {SourceArn: "arn:aws:events:" + region + ":" + acct + ":rule/intruso"},
				"neither key":      {},
			}
			for _, g := range w.guards {
				for who, req := range strangers {
					if refused, err := guardeval.Refuses(g.statement, req); err != nil || !refused {
						t.Errorf("%s lets %s through (%v)", g.name, who, err)
					}
				}
				for _, a := range g.admitted {
					if !g.used[a] {
						t.Errorf("%s admits %s, which sends nothing to it in the templates", g.name, a)
					}
				}
			}
		})
	}
}

// TestDeferringConsumersMaySendToTheirOwnQueue: a consumer that defers
// messages (MAX_RECEIVE_COUNT set, sqsconsumer.Plan) sends a delayed copy to
// its own standard queue on the last receive, so its role is granted
// sqs:SendMessage on that queue, and the guard admits it (the first test).
// Without the grant the copy fails with AccessDenied in AWS and the
// message goes to the DLQ during an outage.
func TestDeferringConsumersMaySendToTheirOwnQueue(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			w := walkProducers(t, s, es)
			deferring := 0
			for _, fn := range w.app.Resources("AWS::Lambda::Function") {
				vars, _ := dig(fn.Properties, "Environment", "Variables").(map[string]any)
				if vars["MAX_RECEIVE_COUNT"] == nil {
					continue
				}
				role := w.roleArn(t, fn.Stack, fn.Properties["Role"])
				for _, q := range w.consumed[fn.Stack+"/"+fn.LogicalID] {
					if strings.HasSuffix(q, ".fifo") {
						continue // FIFO queues defer by visibility only
					}
					deferring++
					if !slices.ContainsFunc(w.edges, func(e producerEdge) bool {
						return e.target == q && e.req.PrincipalArn == role && strings.HasPrefix(e.from, "IAM ")
					}) {
						t.Errorf("%s defers messages but its role %s may not send to its queue %s", fn.Path(), role, q)
					}
				}
			}
			if deferring != 3 {
				t.Errorf("%d deferring consumers of a standard queue, want 3 (preparar-pedido, correo-confirmacion, aviso-erp)", deferring)
			}
		})
	}
}

// producerWorld is one environment's templates with their guards and the
// producers they wire.
type producerWorld struct {
	app    *synthesized.App
	phys   synthesized.Physical
	guards map[string]*guardOf // by the queue's or topic's ARN
	edges  []producerEdge
	// consumed lists the queue ARNs each function (stack/logical id) reads.
	consumed map[string][]string
}

type guardOf struct {
	name      string
	statement map[string]any
	admitted  []string
	used      map[string]bool
}

func (g *guardOf) markUsed(req guardeval.Request) {
	for _, a := range g.admitted {
		if (req.PrincipalArn != "" && guardeval.ArnLike(a, req.PrincipalArn)) || (req.SourceArn != "" && guardeval.ArnLike(a, req.SourceArn)) {
			g.used[a] = true
		}
	}
}

// producerEdge is a producer the templates wire to a guarded resource.
type producerEdge struct {
	from   string
	target string
	req    guardeval.Request
}

func walkProducers(t *testing.T, s *synthesis, es *stacks.EnvironmentStacks) *producerWorld {
	t.Helper()
	w := &producerWorld{app: synthesized.New(es.Env.Name, es.Env.Account, es.Env.Region), guards: map[string]*guardOf{}, consumed: map[string][]string{}}
	w.phys = synthesized.Physical{App: w.app}
	for _, st := range es.Stacks() {
		raw, err := json.Marshal(s.templates[*st.StackName()])
		if err != nil {
			t.Fatal(err)
		}
		if err := w.app.Add(*st.StackName(), raw); err != nil {
			t.Fatal(err)
		}
	}
	w.findGuards(t)
	w.findProducers(t, es.Env.RoleArn(es.Env.Roles.Operator))
	return w
}

func (w *producerWorld) str(t *testing.T, stack string, v any) string {
	t.Helper()
	s, err := w.app.ResolveString(stack, v, w.phys)
	if err != nil {
		t.Fatalf("%s: %v", stack, err)
	}
	return s
}

func (w *producerWorld) strs(t *testing.T, stack string, v any) []string {
	t.Helper()
	r, err := w.app.Resolve(stack, v, w.phys)
	if err != nil {
		t.Fatalf("%s: %v", stack, err)
	}
	if s, ok := r.(string); ok {
		return []string{s}
	}
	var out []string
	for _, e := range r.([]any) {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

// findGuards finds each queue's and topic's Deny of sqs:SendMessage or
// sns:Publish to everyone, and requires exactly one per resource.
func (w *producerWorld) findGuards(t *testing.T) {
	byRef := map[string]string{} // a queue's URL or topic's ARN -> ARN
	names := map[string]string{}
	for _, typ := range []string{"AWS::SQS::Queue", "AWS::SNS::Topic"} {
		for _, r := range w.app.Resources(typ) {
			ref := w.str(t, r.Stack, map[string]any{"Ref": r.LogicalID})
			arn := ref
			if typ == "AWS::SQS::Queue" {
				arn = w.str(t, r.Stack, map[string]any{"Fn::GetAtt": []any{r.LogicalID, "Arn"}})
			}
			byRef[ref], names[arn] = arn, r.Path()
		}
	}
	for typ, spec := range map[string]struct{ targets, action string }{
		"AWS::SQS::QueuePolicy": {"Queues", queues.ActionSend},
		"AWS::SNS::TopicPolicy": {"Topics", queues.ActionPublish},
	} {
		for _, pol := range w.app.Resources(typ) {
			doc, err := w.app.Resolve(pol.Stack, pol.Properties["PolicyDocument"], w.phys)
			if err != nil {
				t.Fatalf("%s: %v", pol.Path(), err)
			}
			var denies []map[string]any
			for _, st := range doc.(map[string]any)["Statement"].([]any) {
				st := st.(map[string]any)
				if st["Effect"] == "Deny" && slices.Contains(asStrings(st["Action"]), spec.action) && dig(st, "Condition", queues.Operator) != nil {
					denies = append(denies, st)
				}
			}
			for _, ref := range w.strs(t, pol.Stack, pol.Properties[spec.targets]) {
				arn, ok := byRef[ref]
				if !ok {
					t.Errorf("%s guards %s, which is not in the templates", pol.Path(), ref)
					continue
				}
				if len(denies) != 1 {
					t.Errorf("%s: %d known-producers Deny statements of %s, want one", names[arn], len(denies), spec.action)
					continue
				}
				d := denies[0]
				if p, _ := json.Marshal(d["Principal"]); string(p) != `{"AWS":"*"}` || !slices.Equal(asStrings(d["Resource"]), []string{arn}) {
					t.Errorf("%s: the guard's principal is %s and resource %v, want everyone and the resource itself", names[arn], p, d["Resource"])
				}
				// A guard that admits nobody names the resource itself.
				g := &guardOf{name: names[arn], statement: d, used: map[string]bool{arn: true}}
				cond, _ := dig(d, "Condition", queues.Operator).(map[string]any)
				for _, v := range cond {
					g.admitted = append(g.admitted, asStrings(v)...)
				}
				if _, dup := w.guards[arn]; dup {
					t.Errorf("%s has two policies", names[arn])
				}
				w.guards[arn] = g
			}
		}
	}
	// Event buses: the statements are the bus's own Policy.
	for _, r := range w.app.Resources("AWS::Events::EventBus") {
		arn := w.str(t, r.Stack, map[string]any{"Fn::GetAtt": []any{r.LogicalID, "Arn"}})
		names[arn] = r.Path()
		doc, err := w.app.Resolve(r.Stack, r.Properties["Policy"], w.phys)
		if err != nil {
			t.Fatalf("%s: %v", r.Path(), err)
		}
		m, _ := doc.(map[string]any) // nil: no policy
		statements, _ := m["Statement"].([]any)
		var denies []map[string]any
		for _, st := range statements {
			d, _ := st.(map[string]any)
			if d["Effect"] == "Deny" && slices.Contains(asStrings(d["Action"]), queues.ActionPutEvents) && dig(d, "Condition", queues.Operator) != nil {
				denies = append(denies, d)
			}
		}
		if len(denies) != 1 {
			t.Errorf("%s: %d known-producers Deny statements of %s, want one", names[arn], len(denies), queues.ActionPutEvents)
			continue
		}
		d := denies[0]
		if p, _ := json.Marshal(d["Principal"]); string(p) != `{"AWS":"*"}` || !slices.Equal(asStrings(d["Resource"]), []string{arn}) {
			t.Errorf("%s: the guard's principal is %s and resource %v, want everyone and the bus itself", names[arn], p, d["Resource"])
		}
		g := &guardOf{name: names[arn], statement: d, used: map[string]bool{arn: true}}
		cond, _ := dig(d, "Condition", queues.Operator).(map[string]any)
		for _, v := range cond {
			g.admitted = append(g.admitted, asStrings(v)...)
		}
		w.guards[arn] = g
	}
	for arn, name := range names {
		if w.guards[arn] == nil {
			t.Errorf("%s has no known-producers guard", name)
		}
	}
}

// add records that from sends req to every guarded resource target names
// (an ARN, or an IAM resource pattern).
func (w *producerWorld) add(from, target string, req guardeval.Request) {
	for arn := range w.guards {
		if arn == target || (strings.ContainsAny(target, "*?") && (target == "*" || guardeval.ArnLike(target, arn))) {
			w.edges = append(w.edges, producerEdge{from: from, target: arn, req: req})
		}
	}
}

// roleArn is the ARN of the role v names (a Ref or Fn::GetAtt of a role of
// stack, or a role's name or ARN).
func (w *producerWorld) roleArn(t *testing.T, stack string, v any) string {
	t.Helper()
	if id := refOf(v); id != "" {
		if r, ok := w.app.Resource(stack, id); ok && r.Type == "AWS::IAM::Role" {
			return w.str(t, stack, map[string]any{"Fn::GetAtt": []any{id, "Arn"}})
		}
	}
	s := w.str(t, stack, v)
	if strings.HasPrefix(s, "arn:") {
		return s
	}
	return "arn:aws:iam::" + w.app.Account + ":role/" + s
}

var sendActions = []string{queues.ActionSend, queues.ActionPublish, queues.ActionPutEvents}

// grants reports whether an IAM action pattern covers sending or publishing.
func grants(pattern string) bool {
	re := regexp.MustCompile("(?i)^" + strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*") + "$")
	return slices.ContainsFunc(sendActions, re.MatchString)
}

func (w *producerWorld) findProducers(t *testing.T, operator string) {
	// IAM policies: every role an Allow of sqs:SendMessage or sns:Publish
	// is attached to.
	for _, typ := range []string{"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::IAM::Role"} {
		for _, r := range w.app.Resources(typ) {
			type attached struct {
				roles []string
				doc   any
			}
			var docs []attached
			if typ == "AWS::IAM::Role" {
				self := w.roleArn(t, r.Stack, map[string]any{"Ref": r.LogicalID})
				pols, _ := r.Properties["Policies"].([]any)
				for _, p := range pols {
					docs = append(docs, attached{[]string{self}, p.(map[string]any)["PolicyDocument"]})
				}
			} else {
				var roles []string
				rs, _ := r.Properties["Roles"].([]any)
				for _, ref := range rs {
					roles = append(roles, w.roleArn(t, r.Stack, ref))
				}
				docs = append(docs, attached{roles, r.Properties["PolicyDocument"]})
			}
			for _, d := range docs {
				sts, _ := dig(d.doc, "Statement").([]any)
				for _, st := range sts {
					st := st.(map[string]any)
					if st["Effect"] != "Allow" || !slices.ContainsFunc(asStrings(st["Action"]), grants) {
						continue
					}
					for _, res := range w.strs(t, r.Stack, st["Resource"]) {
						for _, role := range d.roles {
							w.add("IAM "+r.Path(), res, guardeval.Request{PrincipalArn: role})
						}
					}
				}
			}
		}
	}
	// EventBridge rules: their targets (as the rule, or as the target's
	// role) and their targets' DLQs (as the rule).
	for _, r := range w.app.Resources("AWS::Events::Rule") {
		rule := guardeval.Request{SourceArn: w.str(t, r.Stack, map[string]any{"Fn::GetAtt": []any{r.LogicalID, "Arn"}})}
		targets, _ := r.Properties["Targets"].([]any)
		for _, tg := range targets {
			tg := tg.(map[string]any)
			req := rule
			if ra, ok := tg["RoleArn"]; ok {
				req = guardeval.Request{PrincipalArn: w.roleArn(t, r.Stack, ra)}
			}
			w.add("rule "+r.Path(), w.str(t, r.Stack, tg["Arn"]), req)
			if dlq := dig(tg, "DeadLetterConfig", "Arn"); dlq != nil {
				w.add("rule DLQ "+r.Path(), w.str(t, r.Stack, dlq), rule)
			}
		}
	}
	// Pipes: the pipe's role sends to its target and its source's DLQ.
	for _, r := range w.app.Resources("AWS::Pipes::Pipe") {
		role := guardeval.Request{PrincipalArn: w.roleArn(t, r.Stack, r.Properties["RoleArn"])}
		w.add("pipe "+r.Path(), w.str(t, r.Stack, r.Properties["Target"]), role)
		src, _ := r.Properties["SourceParameters"].(map[string]any)
		for _, params := range src {
			if dlq := dig(params, "DeadLetterConfig", "Arn"); dlq != nil {
				w.add("pipe DLQ "+r.Path(), w.str(t, r.Stack, dlq), role)
			}
		}
	}
	// SNS subscriptions of queues, and their DLQs, as the topic.
	for _, r := range w.app.Resources("AWS::SNS::Subscription") {
		topic := guardeval.Request{SourceArn: w.str(t, r.Stack, r.Properties["TopicArn"])}
		if r.Properties["Protocol"] == "sqs" {
			w.add("subscription "+r.Path(), w.str(t, r.Stack, r.Properties["Endpoint"]), topic)
		}
		if dlq := dig(r.Properties, "RedrivePolicy", "deadLetterTargetArn"); dlq != nil {
			w.add("subscription DLQ "+r.Path(), w.str(t, r.Stack, dlq), topic)
		}
	}
	// Alarms publish their state changes as the alarm.
	for _, r := range w.app.Resources("AWS::CloudWatch::Alarm") {
		alarm := guardeval.Request{SourceArn: w.str(t, r.Stack, map[string]any{"Fn::GetAtt": []any{r.LogicalID, "Arn"}})}
		for _, key := range []string{"AlarmActions", "OKActions", "InsufficientDataActions"} {
			if v, ok := r.Properties[key]; ok {
				for _, a := range w.strs(t, r.Stack, v) {
					w.add("alarm "+r.Path(), a, alarm)
				}
			}
		}
	}
	// Functions' and schedules' dead-letter targets and destinations, as
	// their roles; event source mappings tell which function reads which
	// queue, for the on-call's redrive.
	fnRole := func(stack string, fn any) string {
		id := refOf(fn)
		r, ok := w.app.Resource(stack, id)
		if !ok {
			t.Fatalf("%s: no function %v", stack, fn)
		}
		return w.roleArn(t, stack, r.Properties["Role"])
	}
	for _, r := range w.app.Resources("AWS::Lambda::Function") {
		if dlq := dig(r.Properties, "DeadLetterConfig", "TargetArn"); dlq != nil {
			w.add("function DLQ "+r.Path(), w.str(t, r.Stack, dlq), guardeval.Request{PrincipalArn: w.roleArn(t, r.Stack, r.Properties["Role"])})
		}
	}
	for _, r := range w.app.Resources("AWS::Lambda::EventInvokeConfig") {
		for _, k := range []string{"OnFailure", "OnSuccess"} {
			if d := dig(r.Properties, "DestinationConfig", k, "Destination"); d != nil {
				w.add("function destination "+r.Path(), w.str(t, r.Stack, d), guardeval.Request{PrincipalArn: fnRole(r.Stack, r.Properties["FunctionName"])})
			}
		}
	}
	for _, r := range w.app.Resources("AWS::Scheduler::Schedule") {
		role := guardeval.Request{PrincipalArn: w.roleArn(t, r.Stack, dig(r.Properties, "Target", "RoleArn"))}
		w.add("schedule "+r.Path(), w.str(t, r.Stack, dig(r.Properties, "Target", "Arn")), role)
		if dlq := dig(r.Properties, "Target", "DeadLetterConfig", "Arn"); dlq != nil {
			w.add("schedule DLQ "+r.Path(), w.str(t, r.Stack, dlq), role)
		}
	}
	for _, r := range w.app.Resources("AWS::Lambda::EventSourceMapping") {
		src := w.str(t, r.Stack, r.Properties["EventSourceArn"])
		if _, ok := w.guards[src]; !ok {
			continue // a stream, not a queue
		}
		key := r.Stack + "/" + refOf(r.Properties["FunctionName"])
		w.consumed[key] = append(w.consumed[key], src)
		w.add("the on-call's redrive (mf-dlq)", src, guardeval.Request{PrincipalArn: operator})
	}
}

// dig walks nested maps by key (nil when a key is missing).
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
