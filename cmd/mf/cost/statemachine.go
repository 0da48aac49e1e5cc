package cost

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/mercadofresco/integration/synthesized"
)

// effect is a Task state's call (a graph edge) counted count times, each
// sending per messages (the entries of an SQS batch; else 1).
type effect struct {
	task       *synthesized.Edge
	count, per float64
}

// path is one way through a definition.
type path struct {
	transitions float64
	effects     []effect
	firstLambda *synthesized.Edge // the first Lambda task, which retries repeat
}

// execute runs n executions of sm: the happy path for the executions that
// succeed, the first task's Catch for the declined fraction, and one more
// transition (and Lambda invocation) per task retry.
func (m *model) execute(sm *synthesized.Resource, n vol, depth int) {
	if depth > maxDepth {
		m.fail("a route through %s is longer than %d hops: a loop", m.label(sm), maxDepth)
		return
	}
	def, err := m.app.Definition(sm)
	if err != nil {
		m.errs = append(m.errs, err)
		return
	}
	tasks := map[string]*synthesized.Edge{}
	for _, e := range m.app.Via(sm, synthesized.Task) {
		tasks[e.State] = e
	}
	happy, err := walk(def, tasks, m.u.LinesPerOrder, false)
	if err != nil {
		m.fail("%s: %v", m.label(sm), err)
		return
	}
	declined, err := walk(def, tasks, m.u.LinesPerOrder, true)
	if err != nil {
		m.fail("%s: %v", m.label(sm), err)
		return
	}
	d, r := m.u.DeclinedFraction, m.u.TaskRetriesPerExecution
	m.execs[sm] = m.execs[sm].add(n)
	perExec := (1-d)*happy.transitions + d*declined.transitions + r
	m.tpe = perExec
	m.transitions = m.transitions.add(n.scale(perExec))
	if dests, _ := synthesized.Dig(sm.Properties, "LoggingConfiguration", "Destinations").([]any); len(dests) > 0 &&
		synthesized.Dig(sm.Properties, "LoggingConfiguration", "Level") == "ALL" {
		if lg := m.app.Find(sm.Stack, synthesized.Dig(dests[0], "CloudWatchLogsLogGroup", "LogGroupArn")); lg != nil {
			m.logKB[m.label(lg)] = m.logKB[m.label(lg)].add(n.scale(perExec * m.u.Logs.StateMachineKBPerTransition))
		}
	}
	traced := synthesized.Dig(sm.Properties, "TracingConfiguration", "Enabled") == true
	m.effects(sm, happy.effects, n.scale(1-d), traced, depth)
	m.effects(sm, declined.effects, n.scale(d), traced, depth)
	if happy.firstLambda != nil && r > 0 {
		m.effects(sm, []effect{{task: happy.firstLambda, count: 1, per: 1}}, n.scale(r), traced, depth)
	}
}

func (m *model) effects(sm *synthesized.Resource, effs []effect, n vol, traced bool, depth int) {
	for _, e := range effs {
		k, to := n.scale(e.count), e.task.To
		switch svc := synthesized.TaskService(e.task.Settings); {
		case to == nil:
			verb := map[bool]string{true: "invokes", false: "sends to"}[svc == "lambda"]
			m.note("%s %s %v, which the cost model does not follow", m.label(sm), verb, e.task.Target)
		case svc == "lambda":
			m.invoke(to, k, k, traced, depth+1)
		case to.Type == "AWS::SNS::Topic":
			m.publish(to, k, 2, depth+1)
		case to.Type == "AWS::SQS::Queue":
			m.sendToQueue(to, k, e.per, e.per, depth+1)
		case to.Type == "AWS::Events::EventBus":
			m.putEvents(to, map[string]any{}, k, 2, depth+1)
		}
	}
}

// maxStates bounds a walk: a path visiting more states has a loop.
const maxStates = 200

// walk follows a definition from StartAt: every state entered is one
// transition; a Map runs its processor once per item (items: the order's
// lines; a batch of up to 10 lines when it sends SQS batches), a Parallel every branch, a Choice its Default (or its first
// choice). With failFirst the first Task fails and its first Catch is
// taken (a declined charge).
func walk(def map[string]any, tasks map[string]*synthesized.Edge, items float64, failFirst bool) (path, error) {
	var p path
	err := walkInto(def, tasks, items, 1, &failFirst, &p)
	return p, err
}

func walkInto(def map[string]any, tasks map[string]*synthesized.Edge, items, mult float64, failFirst *bool, p *path) error {
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
			if e := tasks[name]; e != nil && followed[synthesized.TaskService(st)] {
				p.effects = append(p.effects, effect{task: e, count: mult, per: map[bool]float64{true: items, false: 1}[sendsBatch(st)]})
				if synthesized.TaskService(st) == "lambda" && p.firstLambda == nil {
					p.firstLambda = e
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
			// A Map of SQS batches runs once per batch of up to 10 lines.
			n, per := items, items
			if states, _ := proc["States"].(map[string]any); slices.ContainsFunc(slices.Collect(maps.Values(states)), sendsBatch) {
				n = math.Ceil(items / maxBatchEntries)
				per = items / n
			}
			if err := walkInto(proc, tasks, per, mult*n, failFirst, p); err != nil {
				return err
			}
		case "Parallel":
			branches, _ := st["Branches"].([]any)
			for _, b := range branches {
				bm, _ := b.(map[string]any)
				if err := walkInto(bm, tasks, items, mult, failFirst, p); err != nil {
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

// maxBatchEntries is SQS's limit of messages in a SendMessageBatch.
const maxBatchEntries = 10

// sendsBatch reports whether a state is a Task sending an SQS batch.
func sendsBatch(st any) bool {
	res, _ := synthesized.Dig(st, "Resource").(string)
	return strings.HasSuffix(res, ":sqs:sendMessageBatch")
}

// followed are the services of the Task states the model follows.
var followed = map[string]bool{"lambda": true, "sns": true, "sqs": true, "events": true}
