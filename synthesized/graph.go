package synthesized

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/synthesized/eventpattern"
)

// Kind is what carries work along an edge.
type Kind string

// The kinds of edge.
const (
	// RuleTarget: a rule (Via) of a bus (From; nil for the default bus or
	// a scheduled rule) delivers to one of its targets; Settings is the
	// target (InputTransformer, RetryPolicy, DeadLetterConfig, ...).
	RuleTarget Kind = "rule"
	// ScheduleTarget: a schedule (From and Via) invokes its target;
	// Settings is the target.
	ScheduleTarget Kind = "schedule"
	// Subscription: a topic (From) delivers to an endpoint through a
	// subscription (Via; the topic itself for an inline one); Settings are
	// its properties (FilterPolicy, RawMessageDelivery, RedrivePolicy).
	Subscription Kind = "subscription"
	// Mapping: an event source mapping (Via) polls a queue or a table's
	// stream (From) and invokes a function; Settings are its properties
	// (BatchSize, ScalingConfig, FilterCriteria, ...).
	Mapping Kind = "mapping"
	// Pipe: a pipe (Via) reads its source (From) and sends to its target;
	// Settings are its properties.
	Pipe Kind = "pipe"
	// Task: a Task state of a state machine (From and Via) calls a
	// resource; Settings is the state, State its name.
	Task Kind = "task"
	// DeadLetter: a resource (From and Via) sends what it cannot deliver
	// or process to a queue: a queue's redrive policy (Settings: the
	// policy), or any other dead-letter setting (a subscription's, a
	// target's, a function's, a mapping's on-failure destination).
	DeadLetter Kind = "dead-letter"
	// Connection: an API destination (From and Via) calls through its
	// connection (its credentials).
	Connection Kind = "connection"
)

// Edge is one way work travels in the app.
type Edge struct {
	Kind Kind
	// From is the sender (a bus, topic, queue, table, state machine,
	// schedule), Via the resource that makes the edge (a rule,
	// subscription, mapping, pipe).
	From, Via *Resource
	// To is the receiver, nil when it is not a resource of the app; Target
	// is the receiver as the template names it, resolved with the app's
	// Literals ("" when it cannot be).
	To     *Resource
	Target string
	// DLQ is the queue the edge sends to when it gives up, nil for none.
	DLQ      *Resource
	Settings map[string]any
	// State is a Task edge's state name, Outer the names of the Map and
	// Parallel states around it, the outermost first.
	State string
	Outer []string
}

type graph struct {
	edges      []*Edge
	from, to   map[*Resource][]*Edge
	via        map[*Resource][]*Edge
	definition map[*Resource]definition
}

type definition struct {
	states map[string]any
	err    error
}

// Edges is every edge of the app, in a stable order (by the resource that
// makes it, then as its template lists them).
func (a *App) Edges() []*Edge { return a.g().edges }

// From is the edges of kind from r (every kind when kind is "").
func (a *App) From(r *Resource, kind Kind) []*Edge { return only(a.g().from[r], kind) }

// To is the edges of kind to r.
func (a *App) To(r *Resource, kind Kind) []*Edge { return only(a.g().to[r], kind) }

// Via is the edges of kind r makes.
func (a *App) Via(r *Resource, kind Kind) []*Edge { return only(a.g().via[r], kind) }

func only(es []*Edge, kind Kind) []*Edge {
	if kind == "" {
		return es
	}
	var out []*Edge
	for _, e := range es {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func (a *App) g() *graph {
	if a.graph != nil {
		return a.graph
	}
	g := &graph{from: map[*Resource][]*Edge{}, to: map[*Resource][]*Edge{}, via: map[*Resource][]*Edge{}, definition: map[*Resource]definition{}}
	a.graph = g
	add := func(kind Kind, from, via *Resource, target any, dlq any, settings map[string]any) *Edge {
		e := &Edge{Kind: kind, From: from, Via: via, To: a.Find(via.Stack, target), Target: a.String(via.Stack, target), DLQ: a.Find(via.Stack, dlq), Settings: settings}
		if kind == Mapping {
			e.To = a.Function(via.Stack, target)
		}
		g.edges = append(g.edges, e)
		g.via[via] = append(g.via[via], e)
		if from != nil {
			g.from[from] = append(g.from[from], e)
		}
		if e.To != nil {
			g.to[e.To] = append(g.to[e.To], e)
		}
		return e
	}
	for _, r := range a.Resources("") {
		p := r.Properties
		switch r.Type {
		case "AWS::Events::Rule":
			bus := a.Find(r.Stack, p["EventBusName"])
			for _, t := range list(p["Targets"]) {
				add(RuleTarget, bus, r, t["Arn"], Dig(t, "DeadLetterConfig", "Arn"), t)
			}
		case "AWS::Scheduler::Schedule":
			t, _ := p["Target"].(map[string]any)
			add(ScheduleTarget, r, r, t["Arn"], Dig(t, "DeadLetterConfig", "Arn"), t)
		case "AWS::SNS::Subscription":
			add(Subscription, a.Find(r.Stack, p["TopicArn"]), r, p["Endpoint"], Dig(Redrive(p["RedrivePolicy"]), "deadLetterTargetArn"), p)
		case "AWS::SNS::Topic":
			for _, s := range list(p["Subscription"]) {
				add(Subscription, r, r, s["Endpoint"], nil, s)
			}
		case "AWS::Lambda::EventSourceMapping":
			add(Mapping, a.Find(r.Stack, p["EventSourceArn"]), r, p["FunctionName"], Dig(p, "DestinationConfig", "OnFailure", "Destination"), p)
		case "AWS::Pipes::Pipe":
			var dlq any
			if sp, ok := p["SourceParameters"].(map[string]any); ok {
				for _, k := range slices.Sorted(maps.Keys(sp)) {
					if d := Dig(sp, k, "DeadLetterConfig", "Arn"); d != nil {
						dlq = d
					}
				}
			}
			add(Pipe, a.Find(r.Stack, p["Source"]), r, p["Target"], dlq, p)
		case "AWS::StepFunctions::StateMachine":
			states, err := a.renderDefinition(r)
			g.definition[r] = definition{states, err}
			walkStates(states, nil, func(name string, st map[string]any, outer []string) {
				if st["Type"] == "Task" {
					e := add(Task, r, r, nil, nil, st)
					e.State, e.Outer = name, outer
					e.To, e.Target = a.taskTarget(r, st)
					if e.To != nil {
						g.to[e.To] = append(g.to[e.To], e)
					}
				}
			})
		case "AWS::Events::ApiDestination":
			add(Connection, r, r, p["ConnectionArn"], nil, p)
		}
		a.deadLetters(r, p, false, add)
	}
	return g
}

// deadLetters adds a DeadLetter edge for every queue v (r's properties)
// names under a dead-letter property: RedrivePolicy.deadLetterTargetArn
// (of a queue or subscription), DeadLetterConfig (of a function, rule
// target or pipe) and OnFailure (of a mapping or invoke configuration).
func (a *App) deadLetters(r *Resource, v any, in bool, add func(Kind, *Resource, *Resource, any, any, map[string]any) *Edge) {
	switch v.(type) {
	case map[string]any, string:
		if in {
			if q := a.Find(r.Stack, v); q != nil && q.Type == "AWS::SQS::Queue" {
				add(DeadLetter, r, r, v, nil, Redrive(r.Properties["RedrivePolicy"]))
				return
			}
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			val, lk := x[k], strings.ToLower(k)
			switch lk {
			case "redriveallowpolicy":
				continue // names sources, not DLQs
			case "redrivepolicy":
				val = Redrive(val)
			}
			a.deadLetters(r, val, in || lk == "deadlettertargetarn" || lk == "deadletterconfig" || lk == "onfailure", add)
		}
	case []any:
		for _, e := range x {
			a.deadLetters(r, e, in, add)
		}
	}
}

// Redrive is a queue's redrive (or redrive allow) policy property as an
// object (the template may write it as a JSON string); nil when absent.
func Redrive(v any) map[string]any {
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

func list(v any) []map[string]any {
	xs, _ := v.([]any)
	out := make([]map[string]any, 0, len(xs))
	for _, x := range xs {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// Number reads a CloudFormation number, which a template writes as a JSON
// number or a numeric string ("300"); def when v is neither.
func Number(v any, def float64) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
			return f
		}
	}
	return def
}

// Dig follows keys through nested objects (nil when one is missing).
func Dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// Definition is a state machine's Amazon States Language definition, its
// references resolved with the app's Literals (ARNs, names and URLs):
// DefinitionString or Definition, with DefinitionSubstitutions applied.
func (a *App) Definition(sm *Resource) (map[string]any, error) {
	d, ok := a.g().definition[sm]
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a state machine", ErrUnresolvable, sm.Path())
	}
	return d.states, d.err
}

func (a *App) renderDefinition(sm *Resource) (map[string]any, error) {
	var raw string
	switch {
	case sm.Prop("DefinitionString") != nil:
		s, err := a.ResolveString(sm.Stack, sm.Prop("DefinitionString"), a.Literals())
		if err != nil {
			return nil, err
		}
		raw = s
	case sm.Prop("Definition") != nil:
		v, err := a.Resolve(sm.Stack, sm.Prop("Definition"), a.Literals())
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(v)
		raw = string(b)
	default:
		return nil, fmt.Errorf("%w: %s has no inline definition", ErrUnresolvable, sm.Path())
	}
	subs, _ := sm.Prop("DefinitionSubstitutions").(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(subs)) {
		s, err := a.ResolveString(sm.Stack, subs[k], a.Literals())
		if err != nil {
			return nil, err
		}
		raw = strings.ReplaceAll(raw, "${"+k+"}", s)
	}
	var def map[string]any
	if err := json.Unmarshal([]byte(raw), &def); err != nil {
		return nil, fmt.Errorf("%w: %s: the definition is not JSON (%v)", ErrUnresolvable, sm.Path(), err)
	}
	return def, nil
}

// ThrottleOnly reports whether a Step Functions retrier retries Lambda's
// refusal of an invocation (lambdaapi.ErrLambdaThrottled) alone: the
// function did not run, so its attempts are not the function's.
func ThrottleOnly(retrier any) bool {
	errs, _ := Dig(retrier, "ErrorEquals").([]any)
	return len(errs) == 1 && errs[0] == lambdaapi.ErrLambdaThrottled
}

// WalkStates calls f for every state of a definition, those inside Map and
// Parallel states included, in name order.
func WalkStates(def map[string]any, f func(name string, st map[string]any)) {
	walkStates(def, nil, func(name string, st map[string]any, _ []string) { f(name, st) })
}

// walkStates is WalkStates telling f the Map and Parallel states around
// each state, the outermost first.
func walkStates(def map[string]any, outer []string, f func(name string, st map[string]any, outer []string)) {
	states, _ := def["States"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(states)) {
		st, _ := states[name].(map[string]any)
		f(name, st, outer)
		inner := append(slices.Clip(outer), name)
		switch st["Type"] {
		case "Map":
			proc, _ := st["ItemProcessor"].(map[string]any)
			if proc == nil {
				proc, _ = st["Iterator"].(map[string]any)
			}
			walkStates(proc, inner, f)
		case "Parallel":
			for _, b := range list(st["Branches"]) {
				walkStates(b, inner, f)
			}
		}
	}
}

// TaskService is the service a Task state calls: "lambda" for a function
// (invoked by its ARN or with lambda:invoke), else the service of its
// integration ("sns" for arn:aws:states:::sns:publish, "sqs" for
// arn:aws:states:::aws-sdk:sqs:sendMessageBatch), "" for an activity
// or anything else.
func TaskService(st map[string]any) string {
	res, _ := st["Resource"].(string)
	if i := strings.Index(res, ":states:::"); i >= 0 {
		svc, _, _ := strings.Cut(strings.TrimPrefix(res[i+len(":states:::"):], "aws-sdk:"), ":")
		return svc
	}
	if strings.Contains(res, ":lambda:") && strings.Contains(res, ":function:") {
		return "lambda"
	}
	return ""
}

// taskParams are the parameters that name a task's resource, by service.
var taskParams = map[string][]string{
	"lambda": {"FunctionName"}, "sns": {"TopicArn"}, "sqs": {"QueueUrl"}, "dynamodb": {"TableName"},
	"events": {"EventBusName"}, "states": {"StateMachineArn"},
}

// taskTarget is the resource a Task state calls and its name or ARN as the
// definition writes it.
func (a *App) taskTarget(sm *Resource, st map[string]any) (*Resource, string) {
	res, _ := st["Resource"].(string)
	svc := TaskService(st)
	if svc == "lambda" && !strings.Contains(res, ":states:::") {
		return a.Find(sm.Stack, res), res
	}
	params, _ := st["Parameters"].(map[string]any)
	if svc == "events" {
		if es := list(params["Entries"]); len(es) > 0 {
			params = es[0]
		}
	}
	for _, k := range taskParams[svc] {
		if s, ok := params[k].(string); ok {
			if svc == "lambda" {
				return a.Function(sm.Stack, s), s
			}
			return a.Find(sm.Stack, s), s
		}
	}
	return nil, ""
}

// Pattern compiles v, an event pattern, filter policy or filter criterion
// of a resource of stack (an object, or the JSON string of one), its
// references resolved with the app's Literals.
func (a *App) Pattern(stack string, v any) (*eventpattern.Pattern, error) {
	resolved, err := a.Resolve(stack, v, a.Literals())
	if err != nil {
		return nil, err
	}
	if s, ok := resolved.(string); ok {
		return eventpattern.Compile([]byte(s))
	}
	m, ok := resolved.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: %v is not an object", eventpattern.ErrInvalid, resolved)
	}
	return eventpattern.CompileValue(m)
}
