package cost

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/mercadofresco/integration/synthesized"
	"github.com/mercadofresco/integration/synthesized/eventpattern"
)

// routeBusEvents puts the usage model's events on the environment's custom
// bus and follows each through the rules whose patterns match it.
func (m *model) routeBusEvents() {
	buses := m.t.App.Resources("AWS::Events::EventBus")
	if len(buses) != 1 {
		if len(m.u.BusEvents) > 0 && len(buses) == 0 {
			m.note("no custom event bus in the templates: the usage model's bus events are not routed")
		} else if len(buses) > 1 {
			m.fail("%d custom event buses: the usage model's events name none of them", len(buses))
		}
		return
	}
	bus := buses[0]
	for _, ev := range m.u.BusEvents {
		n := perOrder(m.orders, ev.PerOrder)
		event := map[string]any{"account": m.t.App.Account, "region": m.t.App.Region}
		for k, v := range ev.Event {
			event[k] = v
		}
		m.putEvents(bus, event, n, ev.KB, 0)
		if strings.HasPrefix(ev.Producer, "pipe-") {
			m.pipeReqs = m.pipeReqs.add(n.scale(chunks(ev.KB)))
		} else if m.hasInterfaceEndpoint("events") {
			m.endpointKB = m.endpointKB.add(n.scale(ev.KB))
		}
	}
}

// putEvents puts n events on bus: billed custom events, its archives, and
// the targets of every rule of the bus that matches.
func (m *model) putEvents(bus *synthesized.Resource, event map[string]any, n vol, kb float64, depth int) {
	m.busEvents[bus] = m.busEvents[bus].add(n.scale(chunks(kb)))
	busName, _ := m.t.resolveString(bus.Stack, map[string]any{"Ref": bus.LogicalID})
	for _, a := range m.t.App.Resources("AWS::Events::Archive") {
		src, _ := m.t.resolveString(a.Stack, a.Prop("SourceArn"))
		if !strings.HasSuffix(src, "event-bus/"+busName) {
			continue
		}
		if m.matches(a, a.Prop("EventPattern"), event) {
			m.archivedKB[a] = m.archivedKB[a].add(n.scale(kb))
		}
	}
	for _, rule := range m.t.App.Resources("AWS::Events::Rule") {
		on, _ := m.t.resolveString(rule.Stack, rule.Prop("EventBusName"))
		if on != busName && !strings.HasSuffix(on, "event-bus/"+busName) {
			continue
		}
		if rule.Prop("EventPattern") == nil || !m.matches(rule, rule.Prop("EventPattern"), event) {
			continue
		}
		m.ruleTargets(rule, n, kb, depth)
	}
}

func (m *model) matches(r *synthesized.Resource, pattern any, event map[string]any) bool {
	if pattern == nil {
		return true
	}
	resolved, err := m.t.resolve(r.Stack, pattern)
	if err != nil {
		m.errs = append(m.errs, err)
		return false
	}
	obj, ok := resolved.(map[string]any)
	if !ok {
		var s string
		if s, ok = resolved.(string); ok {
			ok = json.Unmarshal([]byte(s), &obj) == nil
		}
	}
	if !ok {
		m.fail("%s: event pattern %v is not an object", m.t.Label(r), resolved)
		return false
	}
	p, err := eventpattern.CompileValue(obj)
	if err != nil {
		m.fail("%s: %v", m.t.Label(r), err)
		return false
	}
	// Round-trip the event so that numbers are float64, as in decoded JSON.
	raw, _ := json.Marshal(event)
	var ev map[string]any
	_ = json.Unmarshal(raw, &ev)
	return p.MatchValue(ev)
}

func (m *model) ruleTargets(rule *synthesized.Resource, n vol, kb float64, depth int) {
	targets, _ := rule.Prop("Targets").([]any)
	for _, t := range targets {
		tm, _ := t.(map[string]any)
		m.deliver(rule, tm["Arn"], n, kb, depth+1)
	}
}

// deliver sends n messages of kb from a resource of from's stack to the
// resource v names.
func (m *model) deliver(from *synthesized.Resource, v any, n vol, kb float64, depth int) {
	if depth > maxDepth {
		m.fail("a route through %s is longer than %d hops: a loop", m.t.Label(from), maxDepth)
		return
	}
	to, ok := m.find(from.Stack, v)
	if !ok {
		s, _ := m.t.resolveString(from.Stack, v)
		m.note("%s sends to %s, which the cost model does not follow", m.t.Label(from), s)
		return
	}
	switch to.Type {
	case "AWS::SQS::Queue":
		m.sendToQueue(to, n, kb, depth)
	case "AWS::SNS::Topic":
		m.publish(to, n, kb, depth)
	case "AWS::Lambda::Function":
		m.invoke(to, n, n, false, depth)
	case "AWS::StepFunctions::StateMachine":
		m.execute(to, n, depth)
	case "AWS::Events::ApiDestination":
		m.apiDest = m.apiDest.add(n)
	case "AWS::Logs::LogGroup":
		m.logKB[m.t.Label(to)] = m.logKB[m.t.Label(to)].add(n.scale(kb))
	case "AWS::Events::EventBus":
		m.putEvents(to, map[string]any{}, n, kb, depth)
	}
}

func (m *model) sendToQueue(q *synthesized.Resource, n vol, kb float64, depth int) {
	m.queueSends[q] = m.queueSends[q].add(n.scale(chunks(kb)))
	if kb > m.queueKB[q] {
		m.queueKB[q] = kb
	}
	for _, esm := range m.t.App.Resources("AWS::Lambda::EventSourceMapping") {
		src, ok := m.find(esm.Stack, esm.Prop("EventSourceArn"))
		if !ok || src != q {
			continue
		}
		fn, ok := m.find(esm.Stack, esm.Prop("FunctionName"))
		if !ok {
			m.fail("%s: event source mapping to an unknown function", m.t.Label(q))
			continue
		}
		batch := 1.0
		if fu, ok := m.u.Functions[m.t.Label(fn)]; ok && fu.MessagesPerInvocation > 0 {
			batch = fu.MessagesPerInvocation
		}
		if max := num(esm.Prop("BatchSize")); max > 0 && batch > max {
			batch = max
		}
		// One ReceiveMessage and one DeleteMessageBatch per batch.
		m.queueSends[q] = m.queueSends[q].add(n.scale(2 / batch))
		m.invoke(fn, n.scale(1/batch), n, false, depth)
	}
}

func (m *model) publish(topic *synthesized.Resource, n vol, kb float64, depth int) {
	m.publishes[topic] = m.publishes[topic].add(n.scale(chunks(kb)))
	for _, s := range m.t.App.Resources("AWS::SNS::Subscription") {
		to, ok := m.find(s.Stack, s.Prop("TopicArn"))
		if !ok || to != topic {
			continue
		}
		if s.Prop("FilterPolicy") != nil {
			m.note("%s: subscription filter policies are not evaluated; every message counts as delivered", m.t.Label(topic))
		}
		switch prop[string](s, "Protocol") {
		case "sqs", "lambda":
			m.deliver(s, s.Prop("Endpoint"), n, kb, depth+1)
		}
	}
}

// invoke records inv invocations of fn handling msgs messages, and what
// they start (a function whose role may start a state machine starts one
// execution per message).
func (m *model) invoke(fn *synthesized.Resource, inv, msgs vol, inTracedExecution bool, depth int) {
	m.fnInv[fn] = m.fnInv[fn].add(inv)
	m.fnMsgs[fn] = m.fnMsgs[fn].add(msgs)
	if inTracedExecution {
		m.fnInTrace[fn] = m.fnInTrace[fn].add(inv)
	}
	for _, sm := range m.startsExecutions(fn) {
		m.execute(sm, msgs, depth+1)
	}
}

// startsExecutions are the state machines fn's role may
// states:StartExecution.
func (m *model) startsExecutions(fn *synthesized.Resource) []*synthesized.Resource {
	role := roleID(fn.Prop("Role"))
	var out []*synthesized.Resource
	for _, pol := range m.t.App.Resources("AWS::IAM::Policy") {
		if pol.Stack != fn.Stack || !attachedTo(pol, role) {
			continue
		}
		doc, _ := pol.Prop("PolicyDocument").(map[string]any)
		stmts, _ := doc["Statement"].([]any)
		for _, st := range stmts {
			s, _ := st.(map[string]any)
			if s["Effect"] != "Allow" || !hasAction(s["Action"], "states:StartExecution") {
				continue
			}
			res := s["Resource"]
			list, ok := res.([]any)
			if !ok {
				list = []any{res}
			}
			for _, r := range list {
				if sm, ok := m.find(pol.Stack, r); ok && sm.Type == "AWS::StepFunctions::StateMachine" {
					out = append(out, sm)
				}
			}
		}
	}
	return out
}

func roleID(v any) string {
	if m, ok := v.(map[string]any); ok {
		if ga, ok := m["Fn::GetAtt"].([]any); ok && len(ga) == 2 {
			s, _ := ga[0].(string)
			return s
		}
	}
	return ""
}

func attachedTo(pol *synthesized.Resource, role string) bool {
	roles, _ := pol.Prop("Roles").([]any)
	for _, r := range roles {
		if m, ok := r.(map[string]any); ok && m["Ref"] == role {
			return true
		}
	}
	return false
}

func hasAction(v any, action string) bool {
	switch a := v.(type) {
	case string:
		return a == action
	case []any:
		return slices.Contains(a, any(action))
	}
	return false
}

// routeSchedules invokes the targets of EventBridge Scheduler schedules
// and of scheduled rules, as often as their expressions say.
func (m *model) routeSchedules() {
	for _, s := range m.t.App.Resources("AWS::Scheduler::Schedule") {
		if prop[string](s, "State") == "DISABLED" {
			continue
		}
		per, err := perMonth(prop[string](s, "ScheduleExpression"), m.u.HoursPerMonth)
		if err != nil {
			m.fail("%s: %v", m.t.Label(s), err)
			continue
		}
		n := vol{fixed: per}
		m.charge("Amazon EventBridge", "Scheduler invocations", "scheduler.invocation", n, "")
		target, _ := s.Prop("Target").(map[string]any)
		m.deliver(s, target["Arn"], n, 1, 1)
	}
	for _, r := range m.t.App.Resources("AWS::Events::Rule") {
		expr := prop[string](r, "ScheduleExpression")
		if expr == "" || prop[string](r, "State") == "DISABLED" {
			continue
		}
		per, err := perMonth(expr, m.u.HoursPerMonth)
		if err != nil {
			m.fail("%s: %v", m.t.Label(r), err)
			continue
		}
		m.ruleTargets(r, vol{fixed: per}, 1, 0)
	}
}

func (m *model) hasInterfaceEndpoint(service string) bool {
	for _, e := range m.t.App.Resources("AWS::EC2::VPCEndpoint") {
		name, _ := m.t.resolveString(e.Stack, e.Prop("ServiceName"))
		if prop[string](e, "VpcEndpointType") == "Interface" && strings.HasSuffix(name, "."+service) {
			return true
		}
	}
	return false
}
