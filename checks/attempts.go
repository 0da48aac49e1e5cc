package checks

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/synthesized"
)

// RuleAttempts is the worst-case attempts rule (docs/design.md#retry-layers).
const RuleAttempts = "MF-ATTEMPTS"

// MaxAttemptsPerDependency is the project's limit: the worst case of
// attempts on any dependency, along any path, for one unit of work (an
// order, an event, a message).
const MaxAttemptsPerDependency = 15

// Defaults when the templates set nothing.
const (
	// sdkDefaultAttempts is the AWS SDK's standard retryer attempts when
	// AWS_MAX_ATTEMPTS is not set.
	sdkDefaultAttempts    = 3
	defaultRuleRetries    = 185 // EventBridge rule or schedule target
	defaultAsyncRetries   = 2   // Lambda asynchronous invocation
	defaultSFNMaxAttempts = 3   // Step Functions retrier without MaxAttempts
)

// Factor is one layer of a path: what multiplies the attempts, and by how
// much (Unbounded when nothing bounds it).
type Factor struct {
	Layer string
	N     float64
}

// Unbounded is the value of a Factor that nothing bounds.
var Unbounded = math.Inf(1)

// AttemptPath is the worst case of attempts on one dependency along one
// path.
type AttemptPath struct {
	// Dependency is the service the attempts reach.
	Dependency string
	// Stack and Caller are the stack and construct path of the resource
	// that makes the attempts (a function, a state machine, a rule, a pipe).
	Stack, Caller string
	Factors       []Factor
	// Total is the product of the factors.
	Total float64
	// Exempt is the acknowledgement's reason when the caller acknowledged
	// RuleAttempts.
	Exempt string
	// Unreadable says why the rule could not count this path (an
	// unrenderable state machine definition, an unresolvable function);
	// Total is then unbounded and the rule fails on it.
	Unreadable string

	caller *synthesized.Resource
}

// Path renders the factors: "queue X: maxReceiveCount 4 (×4) → ...".
func (p AttemptPath) Path() string {
	parts := make([]string, len(p.Factors))
	for i, f := range p.Factors {
		parts[i] = fmt.Sprintf("%s (×%s)", f.Layer, Num(f.N))
	}
	return strings.Join(parts, " → ")
}

// Num prints n, "∞" when unbounded.
func Num(n float64) string {
	if math.IsInf(n, 1) {
		return "∞"
	}
	return strconv.FormatFloat(n, 'f', -1, 64)
}

// Attempts computes the worst-case attempts per dependency along every path
// of app, sorted by dependency then caller. It is what MF-ATTEMPTS checks
// and `mf attempts` prints.
//
// Layers that multiply (the callee's failure makes the caller try again):
// an SQS event source mapping (the queue's maxReceiveCount), a stream event
// source or pipe source (MaximumRetryAttempts + 1), a Step Functions Task
// (1 + the MaxAttempts of its retriers, and of the Map or Parallel states
// around it; a retrier of Lambda.TooManyRequestsException alone is not
// counted: the function did not run), a Lambda asynchronous invocation by a rule or a schedule
// (the function's EventInvokeConfig MaximumRetryAttempts + 1, default 3), a
// pipe's synchronous target. Layers that deliver (a rule or schedule target,
// a pipe target, a task's SQS/SNS integration) count their attempts against
// the service they deliver to. Inside a function, each declared dependency
// (golambda.Dependency, template metadata) multiplies the product of its
// AttemptsEnv variables; a "<DEP>_MAX_ATTEMPTS" variable no declaration
// names is a dependency "<dep>", and AWS_MAX_ATTEMPTS alone is "aws".
func Attempts(app *synthesized.App) []AttemptPath {
	return (&checker{app: app}).attempts()
}

func (c *checker) attempts() []AttemptPath {
	a := &attemptWalk{c: c}
	for _, e := range c.app.Edges() {
		switch e.Kind {
		case synthesized.Mapping:
			a.mapping(e)
		case synthesized.RuleTarget, synthesized.ScheduleTarget: // Kind "rule" or "schedule"
			a.deliver(e, deliveries(synthesized.Dig(e.Settings, "RetryPolicy", "MaximumRetryAttempts"), string(e.Kind)+" "+label(e.Via), defaultRuleRetries))
		case synthesized.Pipe:
			a.pipe(e)
		}
	}
	for _, sm := range c.app.Resources("AWS::StepFunctions::StateMachine") {
		a.stateMachine(sm, nil)
	}
	slices.SortStableFunc(a.out, func(x, y AttemptPath) int {
		return strings.Compare(x.Dependency+"\x00"+x.Caller, y.Dependency+"\x00"+y.Caller)
	})
	return a.out
}

func (c *checker) attemptsFinding(p AttemptPath) {
	switch {
	case p.Total <= MaxAttemptsPerDependency || p.Exempt != "":
	case p.Unreadable != "":
		c.fail(p.caller, RuleAttempts, "the attempts along %s cannot be counted: %s. Every path must be counted against the limit of %d; make the definition renderable (literal JSON with Ref/Fn::GetAtt/Fn::Join/Fn::Sub), or acknowledge the rule with the reason its attempts are bounded",
			p.Caller, p.Unreadable, MaxAttemptsPerDependency)
	default:
		c.fail(p.caller, RuleAttempts, "dependency %q can receive %s attempts for one unit of work, more than %d: %s. Keep one layer in command (the workflow's Retry) and the others minimal (SDK 2, maxReceiveCount as a safety net)",
			p.Dependency, Num(p.Total), MaxAttemptsPerDependency, p.Path())
	}
}

type attemptWalk struct {
	c   *checker
	out []AttemptPath
}

func (a *attemptWalk) emit(dep string, caller *synthesized.Resource, factors []Factor) *AttemptPath {
	total := 1.0
	for _, f := range factors {
		total *= f.N
	}
	a.out = append(a.out, AttemptPath{Dependency: dep, Stack: caller.Stack, Caller: caller.Path(), Factors: slices.Clone(factors), Total: total,
		Exempt: Acknowledged(a.c.app, caller, RuleAttempts), caller: caller})
	return &a.out[len(a.out)-1]
}

func with(fs []Factor, f Factor) []Factor { return append(slices.Clone(fs), f) }

// function walks the dependencies of fn, called with the factors so far
// (the layers that multiply its invocations).
func (a *attemptWalk) function(fn *synthesized.Resource, factors []Factor) {
	vars, _ := synthesized.Dig(fn.Prop("Environment"), "Variables").(map[string]any)
	envNum := func(name string) (float64, bool) {
		n := synthesized.Number(vars[name], -1)
		return n, n > 0
	}
	used := map[string]bool{}
	name := label(fn)
	deps := listOf(fn.Metadata[synthesized.MetadataDependencies])
	for _, d := range deps {
		dep := str(synthesized.Dig(d, "name"))
		fs := factors
		if synthesized.Dig(d, "perWorkItem") == true {
			// The bound is kept with the work item (a counter in the
			// database): retried invocations do not multiply it.
			fs = []Factor{{Layer: "per work item, across invocations", N: 1}}
		}
		for _, e := range listOf(synthesized.Dig(d, "attemptsEnv")) {
			e := str(e)
			used[e] = true
			n, ok := envNum(e)
			if !ok {
				if e == lambdaapi.EnvSDKMaxAttempts {
					n = sdkDefaultAttempts
				} else {
					a.c.fail(fn, RuleAttempts, "function %s declares dependency %q counted by %s, which is not a number in its environment", name, dep, e)
					n = Unbounded
				}
			}
			fs = with(fs, Factor{Layer: fmt.Sprintf("function %s: %s=%s", name, e, Num(n)), N: n})
		}
		a.emit(dep, fn, fs)
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		if n, ok := envNum(k); ok && !used[k] && strings.HasSuffix(k, lambdaapi.EnvSuffixMaxAttempts) {
			dep := strings.ToLower(strings.TrimSuffix(k, lambdaapi.EnvSuffixMaxAttempts))
			a.emit(dep, fn, with(factors, Factor{Layer: fmt.Sprintf("function %s: %s=%s", name, k, Num(n)), N: n}))
		}
	}
	if _, set := vars[lambdaapi.EnvSDKMaxAttempts]; !set && !used[lambdaapi.EnvSDKMaxAttempts] && len(deps) == 0 {
		a.emit("aws", fn, with(factors, Factor{Layer: fmt.Sprintf("function %s: AWS SDK default attempts", name), N: sdkDefaultAttempts}))
	}
}

// mapping: a queue's receives multiply the function's invocations; a
// stream's retries too.
func (a *attemptWalk) mapping(e *synthesized.Edge) {
	if e.To == nil {
		// Not a skipped path: an unknown function's attempts are unbounded.
		p := a.emit("unresolved function", e.Via, []Factor{{Layer: "event source mapping: cannot resolve its function", N: Unbounded}})
		p.Unreadable = "the event source mapping's function cannot be resolved in this stack"
		return
	}
	switch {
	case e.From != nil && e.From.Type == typeQueue:
		a.function(e.To, []Factor{receives(e.From)})
	case e.Via.Prop("StartingPosition") != nil:
		f := Factor{Layer: "stream event source: retries until the record expires", N: Unbounded}
		if n := synthesized.Number(e.Via.Prop("MaximumRetryAttempts"), -1); n >= 0 {
			f = Factor{Layer: fmt.Sprintf("stream event source: MaximumRetryAttempts %s + 1", Num(n)), N: n + 1}
		}
		a.function(e.To, []Factor{f})
	}
}

func receives(q *synthesized.Resource) Factor {
	n := synthesized.Number(synthesized.Redrive(q.Prop("RedrivePolicy"))["maxReceiveCount"], 0)
	if n <= 0 {
		return Factor{Layer: fmt.Sprintf("queue %s: no maxReceiveCount (receives until retention ends)", label(q)), N: Unbounded}
	}
	return Factor{Layer: fmt.Sprintf("queue %s: maxReceiveCount %s", label(q), Num(n)), N: n}
}

// deliveries is the attempts of a rule, schedule or pipe target.
func deliveries(retries any, what string, def float64) Factor {
	n := synthesized.Number(retries, def)
	if n < 0 {
		return Factor{Layer: what + ": retries until the event expires", N: Unbounded}
	}
	return Factor{Layer: fmt.Sprintf("%s: %s retries + 1", what, Num(n)), N: n + 1}
}

// asyncInvocations is a Lambda asynchronous invocation's attempts.
func (a *attemptWalk) asyncInvocations(fn *synthesized.Resource) Factor {
	n := float64(defaultAsyncRetries)
	for _, r := range a.c.app.Resources("AWS::Lambda::EventInvokeConfig") {
		if a.c.app.Function(r.Stack, r.Prop("FunctionName")) == fn {
			n = synthesized.Number(r.Prop("MaximumRetryAttempts"), defaultAsyncRetries)
		}
	}
	return Factor{Layer: fmt.Sprintf("asynchronous invocation of %s: %s retries + 1", label(fn), Num(n)), N: n + 1}
}

// deliver counts a rule's or schedule's delivery and, for an
// asynchronously invoked function, walks the function.
func (a *attemptWalk) deliver(e *synthesized.Edge, f Factor) {
	a.emit(dependency(e), e.Via, []Factor{f})
	if e.To != nil && e.To.Type == "AWS::Lambda::Function" {
		a.function(e.To, []Factor{a.asyncInvocations(e.To)})
	}
}

// dependency names an edge's receiver: "<service>:<name>" for a resource
// of the app ("http:" for an API destination), else the ARN it names as
// "service:resource".
func dependency(e *synthesized.Edge) string {
	if t := e.To; t != nil {
		switch t.Type {
		case "AWS::Lambda::Function":
			return "lambda:" + label(t)
		case "AWS::Events::ApiDestination":
			return "http:" + label(t)
		}
		if _, svc, ok := strings.Cut(t.Type, "::"); ok {
			svc, _, _ = strings.Cut(svc, "::")
			return strings.ToLower(svc) + ":" + label(t)
		}
		return t.Type + ":" + label(t)
	}
	s := e.Target
	if s == "" {
		return "unrenderable target"
	}
	if parts := strings.SplitN(s, ":", 6); len(parts) == 6 && parts[0] == "arn" {
		svc, res := parts[2], parts[5]
		if svc == "events" && strings.HasPrefix(res, "event-bus/") {
			return "events:" + strings.TrimPrefix(res, "event-bus/")
		}
		return svc + ":" + res
	}
	return s
}

func (a *attemptWalk) pipe(e *synthesized.Edge) {
	p := e.Via
	var factor Factor
	if e.From != nil && e.From.Type == typeQueue {
		factor = receives(e.From)
	} else {
		sp := p.Prop("SourceParameters")
		retries := synthesized.Dig(sp, "DynamoDBStreamParameters", "MaximumRetryAttempts")
		if retries == nil {
			retries = synthesized.Dig(sp, "KinesisStreamParameters", "MaximumRetryAttempts")
		}
		factor = deliveries(retries, "pipe "+label(p)+" source", -1)
	}
	t := e.To
	switch {
	case t != nil && t.Type == "AWS::Lambda::Function":
		a.emit(dependency(e), p, []Factor{factor})
		a.function(t, []Factor{factor})
	case t != nil && t.Type == "AWS::StepFunctions::StateMachine":
		if synthesized.Dig(p.Prop("TargetParameters"), "StepFunctionStateMachineParameters", "InvocationType") == "REQUEST_RESPONSE" {
			a.stateMachine(t, []Factor{factor})
		}
		a.emit(dependency(e), p, []Factor{factor})
	default:
		a.emit(dependency(e), p, []Factor{factor})
	}
}

// stateMachine walks the Task states of a state machine's definition.
// outer are the layers that make the whole execution run again (a pipe's
// synchronous invocation); a standard workflow started asynchronously has
// none.
func (a *attemptWalk) stateMachine(sm *synthesized.Resource, outer []Factor) {
	def, err := a.c.app.Definition(sm)
	if err != nil {
		// Its paths cannot be counted: one unbounded path, which the rule
		// fails on unless it is acknowledged.
		p := a.emit("every task of "+label(sm), sm, with(outer, Factor{Layer: "state machine " + label(sm) + ": unreadable", N: Unbounded}))
		p.Unreadable = fmt.Sprintf("cannot read the definition to count its retries (%v)", err)
		return
	}
	states := map[string]map[string]any{}
	synthesized.WalkStates(def, func(name string, st map[string]any) { states[name] = st })
	for _, e := range a.c.app.Via(sm, synthesized.Task) {
		fs := outer
		for _, name := range append(slices.Clone(e.Outer), e.State) {
			if f, ok := retryFactor(states[name], name); ok {
				fs = with(fs, f)
			}
		}
		a.task(sm, e.State, e, fs)
	}
}

func retryFactor(state map[string]any, name string) (Factor, bool) {
	total := 1.0
	var parts []string
	for _, r := range listOf(state["Retry"]) {
		if synthesized.ThrottleOnly(r) {
			continue // Lambda refused the invocation: the function did not run
		}
		n := synthesized.Number(synthesized.Dig(r, "MaxAttempts"), defaultSFNMaxAttempts)
		total += n
		parts = append(parts, Num(n))
	}
	if len(parts) == 0 {
		return Factor{}, false
	}
	return Factor{Layer: fmt.Sprintf("state %s: Retry MaxAttempts %s + 1", name, strings.Join(parts, " + ")), N: total}, true
}

func (a *attemptWalk) task(sm *synthesized.Resource, name string, e *synthesized.Edge, fs []Factor) {
	if len(fs) == 0 {
		fs = []Factor{{Layer: fmt.Sprintf("state %s: no Retry", name), N: 1}}
	}
	fs = append([]Factor{{Layer: "state machine " + label(sm), N: 1}}, fs...)
	res, target := str(e.Settings["Resource"]), e.Target
	if e.To != nil {
		target = label(e.To)
	}
	switch {
	case e.To != nil && e.To.Type == "AWS::Lambda::Function":
		a.emit("lambda:"+target, sm, fs)
		a.function(e.To, fs)
	case strings.Contains(res, ":states:::"):
		a.emit(strings.TrimSpace(synthesized.TaskService(e.Settings)+":"+target), sm, fs)
	case target != "":
		a.emit(target, sm, fs)
	default:
		a.emit(res, sm, fs)
	}
}
