package cost

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mercadofresco/integration/synthesized"
)

// effect is what one state does to another resource.
type effect struct {
	kind   string // lambda, sns, sqs, events
	target any    // the value naming the resource (an ARN, a URL)
	count  float64
}

// path is one way through a definition.
type path struct {
	transitions float64
	effects     []effect
	firstLambda any // the first Lambda task's function, which retries repeat
}

// execute runs n executions of sm: the happy path for the executions that
// succeed, the first task's Catch for the declined fraction, and one more
// transition (and Lambda invocation) per task retry.
func (m *model) execute(sm *synthesized.Resource, n vol, depth int) {
	if depth > maxDepth {
		m.fail("a route through %s is longer than %d hops: a loop", m.t.Label(sm), maxDepth)
		return
	}
	def, err := m.definition(sm)
	if err != nil {
		m.errs = append(m.errs, err)
		return
	}
	happy, err := walk(def, m.u.LinesPerOrder, false)
	if err != nil {
		m.fail("%s: %v", m.t.Label(sm), err)
		return
	}
	declined, err := walk(def, m.u.LinesPerOrder, true)
	if err != nil {
		m.fail("%s: %v", m.t.Label(sm), err)
		return
	}
	d, r := m.u.DeclinedFraction, m.u.TaskRetriesPerExecution
	m.execs[sm] = m.execs[sm].add(n)
	perExec := (1-d)*happy.transitions + d*declined.transitions + r
	m.tpe = perExec
	m.transitions = m.transitions.add(n.scale(perExec))
	logCfg, _ := sm.Prop("LoggingConfiguration").(map[string]any)
	if logCfg["Level"] == "ALL" {
		if dests, _ := logCfg["Destinations"].([]any); len(dests) > 0 {
			d0, _ := dests[0].(map[string]any)
			cw, _ := d0["CloudWatchLogsLogGroup"].(map[string]any)
			if lg, ok := m.find(sm.Stack, cw["LogGroupArn"]); ok {
				m.logKB[m.t.Label(lg)] = m.logKB[m.t.Label(lg)].add(n.scale(perExec * m.u.Logs.StateMachineKBPerTransition))
			}
		}
	}
	tc, _ := sm.Prop("TracingConfiguration").(map[string]any)
	traced := tc["Enabled"] == true
	m.effects(sm, happy.effects, n.scale(1-d), traced, depth)
	m.effects(sm, declined.effects, n.scale(d), traced, depth)
	if happy.firstLambda != nil && r > 0 {
		m.effects(sm, []effect{{kind: "lambda", target: happy.firstLambda, count: 1}}, n.scale(r), traced, depth)
	}
}

func (m *model) effects(sm *synthesized.Resource, effs []effect, n vol, traced bool, depth int) {
	for _, e := range effs {
		k := n.scale(e.count)
		switch e.kind {
		case "lambda":
			fn, ok := m.findIn(sm, e.target)
			if !ok {
				m.note("%s invokes %v, which the cost model does not follow", m.t.Label(sm), e.target)
				continue
			}
			m.invoke(fn, k, k, traced, depth+1)
		case "sns", "sqs", "events":
			to, ok := m.findIn(sm, e.target)
			if !ok {
				m.note("%s sends to %v, which the cost model does not follow", m.t.Label(sm), e.target)
				continue
			}
			switch to.Type {
			case "AWS::SNS::Topic":
				m.publish(to, k, 2, depth+1)
			case "AWS::SQS::Queue":
				m.sendToQueue(to, k, 1, depth+1)
			case "AWS::Events::EventBus":
				m.putEvents(to, map[string]any{}, k, 2, depth+1)
			}
		}
	}
}

// findIn finds a resource named by a literal of a resolved definition.
func (m *model) findIn(sm *synthesized.Resource, v any) (*synthesized.Resource, bool) {
	s, ok := v.(string)
	if !ok {
		return nil, false
	}
	r, ok := m.byRef[s]
	return r, ok
}

// definition is sm's resolved Amazon States Language definition.
func (m *model) definition(sm *synthesized.Resource) (map[string]any, error) {
	var raw string
	switch {
	case sm.Prop("DefinitionString") != nil:
		s, err := m.t.resolveString(sm.Stack, sm.Prop("DefinitionString"))
		if err != nil {
			return nil, err
		}
		raw = s
	case sm.Prop("Definition") != nil:
		v, err := m.t.resolve(sm.Stack, sm.Prop("Definition"))
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(v)
		raw = string(b)
	default:
		return nil, fmt.Errorf("cost: %s has no inline definition", m.t.Label(sm))
	}
	subs, _ := sm.Prop("DefinitionSubstitutions").(map[string]any)
	for k, v := range subs {
		s, err := m.t.resolveString(sm.Stack, v)
		if err != nil {
			return nil, err
		}
		raw = strings.ReplaceAll(raw, "${"+k+"}", s)
	}
	var def map[string]any
	if err := json.Unmarshal([]byte(raw), &def); err != nil {
		return nil, fmt.Errorf("cost: %s: definition: %w", m.t.Label(sm), err)
	}
	return def, nil
}

// maxStates bounds a walk: a path visiting more states has a loop.
const maxStates = 200

// walk follows a definition from StartAt: every state entered is one
// transition; a Map runs its processor once per item (items: the order's
// lines), a Parallel every branch, a Choice its Default (or its first
// choice). With failFirst the first Task fails and its first Catch is
// taken (a declined charge).
func walk(def map[string]any, items float64, failFirst bool) (path, error) {
	var p path
	err := walkInto(def, items, 1, &failFirst, &p)
	return p, err
}

func walkInto(def map[string]any, items, mult float64, failFirst *bool, p *path) error {
	states, _ := def["States"].(map[string]any)
	name, _ := def["StartAt"].(string)
	for steps := 0; name != ""; steps++ {
		if steps > maxStates {
			return fmt.Errorf("the path from %v loops (more than %d states)", def["StartAt"], maxStates)
		}
		st, ok := states[name].(map[string]any)
		if !ok {
			return fmt.Errorf("state %q is not defined", name)
		}
		p.transitions += mult
		next, _ := st["Next"].(string)
		switch st["Type"] {
		case "Task":
			e := taskEffect(st)
			if e.kind != "" {
				e.count = mult
				p.effects = append(p.effects, e)
				if e.kind == "lambda" && p.firstLambda == nil {
					p.firstLambda = e.target
				}
			}
			if *failFirst {
				*failFirst = false
				catches, _ := st["Catch"].([]any)
				if len(catches) == 0 {
					return nil // the execution fails here
				}
				c, _ := catches[0].(map[string]any)
				next, _ = c["Next"].(string)
			}
		case "Map":
			proc, _ := st["ItemProcessor"].(map[string]any)
			if proc == nil {
				proc, _ = st["Iterator"].(map[string]any)
			}
			if proc == nil {
				return fmt.Errorf("Map state %q has no ItemProcessor", name)
			}
			if err := walkInto(proc, items, mult*items, failFirst, p); err != nil {
				return err
			}
		case "Parallel":
			branches, _ := st["Branches"].([]any)
			for _, b := range branches {
				bm, _ := b.(map[string]any)
				if err := walkInto(bm, items, mult, failFirst, p); err != nil {
					return err
				}
			}
		case "Choice":
			next, _ = st["Default"].(string)
			if next == "" {
				choices, _ := st["Choices"].([]any)
				if len(choices) > 0 {
					c, _ := choices[0].(map[string]any)
					next, _ = c["Next"].(string)
				}
			}
		case "Succeed", "Fail":
			return nil
		case "Pass", "Wait":
		default:
			return fmt.Errorf("state %q has unknown type %v", name, st["Type"])
		}
		if end, _ := st["End"].(bool); end {
			return nil
		}
		name = next
	}
	return nil
}

// taskEffect is what a Task state calls.
func taskEffect(st map[string]any) effect {
	res, _ := st["Resource"].(string)
	params, _ := st["Parameters"].(map[string]any)
	switch {
	case strings.Contains(res, ":lambda:") && strings.Contains(res, ":function:"):
		return effect{kind: "lambda", target: res}
	case strings.HasSuffix(res, ":states:::lambda:invoke") || strings.HasSuffix(res, ":states:::lambda:invoke.waitForTaskToken"):
		return effect{kind: "lambda", target: params["FunctionName"]}
	case strings.Contains(res, ":states:::sns:publish"):
		return effect{kind: "sns", target: params["TopicArn"]}
	case strings.Contains(res, ":states:::sqs:sendMessage"):
		return effect{kind: "sqs", target: params["QueueUrl"]}
	case strings.Contains(res, ":states:::events:putEvents"):
		entries, _ := params["Entries"].([]any)
		if len(entries) > 0 {
			e0, _ := entries[0].(map[string]any)
			return effect{kind: "events", target: e0["EventBusName"]}
		}
	}
	return effect{}
}
