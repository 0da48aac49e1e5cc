package cost

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/mercadofresco/integration/synthesized"
)

// routeBusEvents puts the usage model's events on the environment's custom
// bus and follows each through the rules whose patterns match it.
func (m *model) routeBusEvents() {
	buses := m.app.Resources("AWS::Events::EventBus")
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
		event := map[string]any{"account": m.app.Account, "region": m.app.Region}
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
	for _, a := range m.app.Resources("AWS::Events::Archive") {
		if m.app.Find(a.Stack, a.Prop("SourceArn")) == bus && m.matches(a, a.Prop("EventPattern"), event) {
			m.archivedKB[a] = m.archivedKB[a].add(n.scale(kb))
		}
	}
	for _, e := range m.app.From(bus, synthesized.RuleTarget) {
		if e.Via.Prop("EventPattern") != nil && m.matches(e.Via, e.Via.Prop("EventPattern"), event) {
			m.deliver(e, n, kb, depth+1)
		}
	}
}

func (m *model) matches(r *synthesized.Resource, pattern any, event map[string]any) bool {
	if pattern == nil {
		return true
	}
	p, err := m.app.Pattern(r.Stack, pattern)
	if err != nil {
		m.fail("%s: %v", m.label(r), err)
		return false
	}
	// Round-trip the event so that numbers are float64, as in decoded JSON.
	raw, _ := json.Marshal(event)
	var ev map[string]any
	_ = json.Unmarshal(raw, &ev)
	return p.MatchValue(ev)
}

// ruleTargets delivers n messages of kb to every target of rule.
func (m *model) ruleTargets(rule *synthesized.Resource, n vol, kb float64, depth int) {
	for _, e := range m.app.Via(rule, synthesized.RuleTarget) {
		m.deliver(e, n, kb, depth+1)
	}
}

// deliver sends n messages of kb along e to its receiver.
func (m *model) deliver(e *synthesized.Edge, n vol, kb float64, depth int) {
	if depth > maxDepth {
		m.fail("a route through %s is longer than %d hops: a loop", m.label(e.Via), maxDepth)
		return
	}
	switch to := e.To; {
	case to == nil:
		m.note("%s sends to %s, which the cost model does not follow", m.label(e.Via), e.Target)
	case to.Type == "AWS::SQS::Queue":
		m.sendToQueue(to, n, kb, 1, depth)
	case to.Type == "AWS::SNS::Topic":
		m.publish(to, n, kb, depth)
	case to.Type == "AWS::Lambda::Function":
		m.invoke(to, n, n, false, depth)
	case to.Type == "AWS::StepFunctions::StateMachine":
		m.execute(to, n, depth)
	case to.Type == "AWS::Events::ApiDestination":
		m.apiDest = m.apiDest.add(n)
	case to.Type == "AWS::Logs::LogGroup":
		m.logKB[m.label(to)] = m.logKB[m.label(to)].add(n.scale(kb))
	case to.Type == "AWS::Events::EventBus":
		m.putEvents(to, map[string]any{}, n, kb, depth)
	default:
		m.note("%s sends to %s, which the cost model does not follow", m.label(e.Via), e.Target)
	}
}

// sendToQueue records n send requests of kb each to q, each carrying per
// messages (a SendMessageBatch carries up to 10), and their consumers.
func (m *model) sendToQueue(q *synthesized.Resource, n vol, kb, per float64, depth int) {
	m.queueSends[q] = m.queueSends[q].add(n.scale(chunks(kb)))
	n = n.scale(per)
	for _, e := range m.app.From(q, synthesized.Mapping) {
		if e.To == nil {
			m.fail("%s: event source mapping to an unknown function", m.label(q))
			continue
		}
		batch := 1.0
		if fu, ok := m.u.Functions[m.label(e.To)]; ok && fu.MessagesPerInvocation > 0 {
			batch = fu.MessagesPerInvocation
		}
		if max := synthesized.Number(e.Settings["BatchSize"], 0); max > 0 && batch > max {
			batch = max
		}
		// One ReceiveMessage and one DeleteMessageBatch per batch.
		m.queueSends[q] = m.queueSends[q].add(n.scale(2 / batch))
		m.invoke(e.To, n.scale(1/batch), n, false, depth)
	}
}

func (m *model) publish(topic *synthesized.Resource, n vol, kb float64, depth int) {
	m.publishes[topic] = m.publishes[topic].add(n.scale(chunks(kb)))
	for _, e := range m.app.From(topic, synthesized.Subscription) {
		if e.Settings["FilterPolicy"] != nil {
			m.note("%s: subscription filter policies are not evaluated; every message counts as delivered", m.label(topic))
		}
		switch e.Settings["Protocol"] {
		case "sqs", "lambda":
			m.deliver(e, n, kb, depth+1)
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
	role := m.app.Find(fn.Stack, fn.Prop("Role"))
	var out []*synthesized.Resource
	for _, pol := range m.app.Resources("AWS::IAM::Policy") {
		roles, _ := pol.Prop("Roles").([]any)
		if role == nil || !slices.ContainsFunc(roles, func(r any) bool { return m.app.Find(pol.Stack, r) == role }) {
			continue
		}
		stmts, _ := synthesized.Dig(pol.Properties, "PolicyDocument", "Statement").([]any)
		for _, st := range stmts {
			s, _ := st.(map[string]any)
			if s["Effect"] != "Allow" || !slices.Contains(anyList(s["Action"]), any("states:StartExecution")) {
				continue
			}
			for _, r := range anyList(s["Resource"]) {
				if sm := m.app.Find(pol.Stack, r); sm != nil && sm.Type == "AWS::StepFunctions::StateMachine" {
					out = append(out, sm)
				}
			}
		}
	}
	return out
}

// anyList is v as a list: a policy's Action or Resource may be one value.
func anyList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// routeSchedules invokes the targets of EventBridge Scheduler schedules
// and of scheduled rules, as often as their expressions say.
func (m *model) routeSchedules() {
	for _, s := range m.app.Resources("AWS::Scheduler::Schedule") {
		if prop[string](s, "State") == "DISABLED" {
			continue
		}
		per, err := perMonth(prop[string](s, "ScheduleExpression"), m.u.HoursPerMonth)
		if err != nil {
			m.fail("%s: %v", m.label(s), err)
			continue
		}
		n := vol{fixed: per}
		m.charge("Scheduler invocations", "scheduler.invocation", n, "")
		for _, e := range m.app.Via(s, synthesized.ScheduleTarget) {
			m.deliver(e, n, 1, 1)
		}
	}
	for _, r := range m.app.Resources("AWS::Events::Rule") {
		expr := prop[string](r, "ScheduleExpression")
		if expr == "" || prop[string](r, "State") == "DISABLED" {
			continue
		}
		per, err := perMonth(expr, m.u.HoursPerMonth)
		if err != nil {
			m.fail("%s: %v", m.label(r), err)
			continue
		}
		m.ruleTargets(r, vol{fixed: per}, 1, 0)
	}
}

func (m *model) hasInterfaceEndpoint(service string) bool {
	for _, e := range m.app.Resources("AWS::EC2::VPCEndpoint") {
		name := m.app.String(e.Stack, e.Prop("ServiceName"))
		if prop[string](e, "VpcEndpointType") == "Interface" && strings.HasSuffix(name, "."+service) {
			return true
		}
	}
	return false
}
