package guardrails

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/mercadofresco/integration/constructs/cfnindex"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/synthesized"
)

// RuleAttempts is the worst-case attempts rule (docs/design.md#retry-layers).
const RuleAttempts = "MF-ATTEMPTS"

// MaxAttemptsPerDependency is the project's limit: the worst case of
// attempts on any dependency, along any path, for one unit of work (an
// order, an event, a message).
const MaxAttemptsPerDependency = 15

// Names and defaults the attempts rule reads.
const (
	envSDKMaxAttempts = lambdaapi.EnvSDKMaxAttempts
	// sdkDefaultAttempts is the AWS SDK's standard retryer attempts when
	// AWS_MAX_ATTEMPTS is not set.
	sdkDefaultAttempts = 3
	// CloudFormation / service defaults.
	defaultRuleRetries    = 185 // EventBridge rule target
	defaultAsyncRetries   = 2   // Lambda asynchronous invocation
	defaultSFNMaxAttempts = 3   // Step Functions retrier without MaxAttempts
	defaultMaxReceive     = 0   // no redrive policy: unbounded
	typeRule              = "AWS::Events::Rule"
	typePipe              = "AWS::Pipes::Pipe"
	typeSchedule          = "AWS::Scheduler::Schedule"
	typeStateMachine      = "AWS::StepFunctions::StateMachine"
	typeEventInvokeConfig = "AWS::Lambda::EventInvokeConfig"
	typeAPIDestination    = "AWS::Events::ApiDestination"
	typeTable             = "AWS::DynamoDB::Table"
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
// path of a stack.
type AttemptPath struct {
	// Dependency is the service the attempts reach.
	Dependency string
	// Caller is the construct path of the resource that makes the attempts
	// (a function, a state machine, a rule, a pipe).
	Caller  string
	Factors []Factor
	// Total is the product of the factors.
	Total float64
	// Exempt is the acknowledgement's reason when the caller acknowledged
	// RuleAttempts.
	Exempt string
	// Unreadable says why the rule could not count this path (an
	// unrenderable state machine definition, an unresolvable function);
	// Total is then unbounded and the rule fails on it.
	Unreadable string

	cfn *resource
}

// Path renders the factors: "queue X: maxReceiveCount 4 (×4) → ...".
func (p AttemptPath) Path() string {
	parts := make([]string, len(p.Factors))
	for i, f := range p.Factors {
		parts[i] = fmt.Sprintf("%s (×%s)", f.Layer, num(f.N))
	}
	return strings.Join(parts, " → ")
}

func num(n float64) string {
	if math.IsInf(n, 1) {
		return "∞"
	}
	return strconv.FormatFloat(n, 'f', -1, 64)
}

// Attempts computes the worst-case attempts per dependency along every path
// of stack, sorted by dependency then caller. It is what the MF-ATTEMPTS
// rule checks and what cmd/mf-attempts prints.
//
// Layers that multiply (the callee's failure makes the caller try again):
// an SQS event source mapping (the queue's maxReceiveCount), a stream event
// source or pipe source (MaximumRetryAttempts + 1), a Step Functions Task
// (1 + the MaxAttempts of its retriers, and of the Map or Parallel states
// around it), a Lambda asynchronous invocation by a rule or a schedule
// (the function's EventInvokeConfig MaximumRetryAttempts + 1, default 3), a
// pipe's synchronous target. Layers that deliver (a rule or schedule target,
// a pipe target, a task's SQS/SNS integration) count their attempts against
// the service they deliver to. Inside a function, each declared dependency
// (golambda.Dependency, template metadata) multiplies the product of its
// AttemptsEnv variables; a "<DEP>_MAX_ATTEMPTS" variable no declaration
// names is a dependency "<dep>", and AWS_MAX_ATTEMPTS alone is "aws".
func Attempts(stack awscdk.Stack) []AttemptPath {
	t := cfnindex.NewTree(stack)
	return newIndex(t, t.Of(stack)).attempts()
}

func (ix *index) attempts() []AttemptPath {
	a := &attemptWalk{ix: ix}
	for _, r := range ix.Ordered {
		switch r.Type {
		case typeESM:
			a.esm(r)
		case typeRule:
			a.rule(r)
		case typeSchedule:
			a.schedule(r)
		case typePipe:
			a.pipe(r)
		case typeStateMachine:
			a.stateMachine(r, nil)
		}
	}
	sort.SliceStable(a.out, func(i, j int) bool {
		if a.out[i].Dependency != a.out[j].Dependency {
			return a.out[i].Dependency < a.out[j].Dependency
		}
		return a.out[i].Caller < a.out[j].Caller
	})
	return a.out
}

func (ix *index) checkAttempts() {
	for _, p := range ix.attempts() {
		if p.Total <= MaxAttemptsPerDependency || p.Exempt != "" {
			continue
		}
		if p.Unreadable != "" {
			ix.fail(p.cfn, RuleAttempts, "the attempts along %s cannot be counted: %s. Every path must be counted against the limit of %d; make the definition renderable (literal JSON with Ref/Fn::GetAtt/Fn::Join/Fn::Sub), or acknowledge the rule with the reason its attempts are bounded",
				p.Caller, p.Unreadable, MaxAttemptsPerDependency)
			continue
		}
		ix.fail(p.cfn, RuleAttempts, "dependency %q can receive %s attempts for one unit of work, more than %d: %s. Keep one layer in command (the workflow's Retry) and the others minimal (SDK 2, maxReceiveCount as a safety net)",
			p.Dependency, num(p.Total), MaxAttemptsPerDependency, p.Path())
	}
}

type attemptWalk struct {
	ix       *index
	out      []AttemptPath
	siblings []*cfnindex.Index
}

func (a *attemptWalk) emit(dep string, caller *resource, factors []Factor) {
	total := 1.0
	for _, f := range factors {
		total *= f.N
	}
	p := AttemptPath{Dependency: dep, Caller: caller.Path(), Factors: append([]Factor(nil), factors...), Total: total, cfn: caller}
	p.Exempt = acknowledgedReason(a.ix.tree.Root, caller, RuleAttempts)
	a.out = append(a.out, p)
}

func with(fs []Factor, f Factor) []Factor {
	return append(append([]Factor(nil), fs...), f)
}

// refLabel turns the rendering markers of a reference the index cannot
// follow (another stack's resource, an import) into its logical id or
// export name.
func refLabel(s string) string {
	for _, m := range []string{"{{ref:", "{{import:"} {
		s = strings.ReplaceAll(s, m, "")
	}
	return strings.ReplaceAll(s, "}}", "")
}

// label is the resource's name (QueueName, FunctionName, ...), or, for a
// resource CloudFormation names itself, its construct path inside its
// stack without the L1's "/Resource".
func label(r *resource) string {
	for _, k := range []string{"QueueName", "FunctionName", "Name", "StateMachineName", "TopicName", "TableName"} {
		if s := r.Str(k); s != "" {
			return s
		}
	}
	p := strings.TrimPrefix(r.Path(), r.StackPath()+"/")
	return strings.TrimSuffix(p, "/Resource")
}

// name is the label of the resource a rendered reference denotes: a
// resource of this stack, or of a sibling stack of the same account and
// region (a cross-stack reference, before synthesis turns it into an
// import), or the reference's logical id or export name.
func (a *attemptWalk) name(s string) string {
	if t := a.refTarget(s); t != nil {
		return label(t)
	}
	if i := strings.Index(s, "{{ref:"); i >= 0 {
		if j := strings.Index(s[i:], "}}"); j > 0 {
			if t := a.sibling(s[i+6 : i+j]); t != nil {
				return label(t)
			}
		}
	}
	return refLabel(s)
}

// sibling finds logicalID in the other stacks of the app that share this
// stack's account and region (indexed on first use when the walk's tree is
// one stack's).
func (a *attemptWalk) sibling(logicalID string) *resource {
	if a.siblings == nil {
		a.siblings = []*cfnindex.Index{}
		self, env := a.ix.Index, a.ix.Environment()
		if a.ix.tree.Whole {
			for _, ix := range a.ix.tree.Indexes {
				if ix != self && ix.Environment() == env {
					a.siblings = append(a.siblings, ix)
				}
			}
		} else {
			for _, c := range *a.ix.tree.Root.Node().FindAll(constructs.ConstructOrder_PREORDER) {
				if st, ok := c.(awscdk.Stack); ok && st != self.Stack && *st.Environment() == env {
					a.siblings = append(a.siblings, cfnindex.New(st))
				}
			}
		}
	}
	for _, ix := range a.siblings {
		if r := ix.ByID[logicalID]; r != nil {
			return r
		}
	}
	return nil
}

// function walks the dependencies of fn, called with the factors so far
// (the layers that multiply its invocations).
func (a *attemptWalk) function(fn *resource, factors []Factor) {
	vars, _ := cfnindex.Get(fn.Props, "Environment", "Variables").(map[string]any)
	envNum := func(name string) (float64, bool) {
		v, ok := vars[name]
		if !ok {
			return 0, false
		}
		s, isStr := v.(string)
		if !isStr {
			return cfnindex.Num(v, -1), cfnindex.Num(v, -1) > 0
		}
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil && f > 0
	}
	used := map[string]bool{}
	name := label(fn)
	for _, d := range declaredDependencies(fn) {
		fs := factors
		if d.PerWorkItem {
			// The bound is kept with the work item (a counter in the
			// database): retried invocations do not multiply it.
			fs = []Factor{{Layer: "per work item, across invocations", N: 1}}
		}
		for _, e := range d.AttemptsEnv {
			used[e] = true
			n, ok := envNum(e)
			if !ok {
				if e == envSDKMaxAttempts {
					n = sdkDefaultAttempts
				} else {
					a.ix.fail(fn, RuleAttempts, "function %s declares dependency %q counted by %s, which is not a number in its environment", name, d.Name, e)
					n = Unbounded
				}
			}
			fs = with(fs, Factor{Layer: fmt.Sprintf("function %s: %s=%s", name, e, num(n)), N: n})
		}
		a.emit(d.Name, fn, fs)
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		if used[k] || !strings.HasSuffix(k, lambdaapi.EnvSuffixMaxAttempts) {
			continue
		}
		n, ok := envNum(k)
		if !ok {
			continue
		}
		dep := strings.ToLower(strings.TrimSuffix(k, lambdaapi.EnvSuffixMaxAttempts))
		a.emit(dep, fn, with(factors, Factor{Layer: fmt.Sprintf("function %s: %s=%s", name, k, num(n)), N: n}))
	}
	if !used[envSDKMaxAttempts] && len(declaredDependencies(fn)) == 0 {
		if _, set := vars[envSDKMaxAttempts]; !set {
			a.emit("aws", fn, with(factors, Factor{Layer: fmt.Sprintf("function %s: AWS SDK default attempts", name), N: sdkDefaultAttempts}))
		}
	}
}

type declaredDependency struct {
	Name        string   `json:"name"`
	AttemptsEnv []string `json:"attemptsEnv"`
	PerWorkItem bool     `json:"perWorkItem"`
}

func declaredDependencies(fn *resource) []declaredDependency {
	raw := fn.Cfn.GetMetadata(jsiiString(synthesized.MetadataDependencies))
	if raw == nil {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var deps []declaredDependency
	_ = json.Unmarshal(b, &deps)
	return deps
}

// esm: a queue's receives multiply the function's invocations; a stream's
// retries too.
func (a *attemptWalk) esm(e *resource) {
	fn, _ := a.ix.Function(cfnindex.Get(e.Props, "FunctionName"))
	if fn == nil {
		// Not a skipped path: an unknown function's attempts are unbounded.
		a.emit("unresolved function", e, []Factor{{Layer: "event source mapping: cannot resolve its function", N: Unbounded}})
		a.out[len(a.out)-1].Unreadable = "the event source mapping's function cannot be resolved in this stack"
		return
	}
	src := a.ix.Target(cfnindex.Get(e.Props, "EventSourceArn"))
	switch {
	case src != nil && src.Type == typeQueue:
		a.function(fn, []Factor{a.receives(src)})
	case cfnindex.Get(e.Props, "StartingPosition") != nil:
		n := cfnindex.Num(cfnindex.Get(e.Props, "MaximumRetryAttempts"), -1)
		f := Factor{Layer: "stream event source: retries until the record expires", N: Unbounded}
		if n >= 0 {
			f = Factor{Layer: fmt.Sprintf("stream event source: MaximumRetryAttempts %s + 1", num(n)), N: n + 1}
		}
		a.function(fn, []Factor{f})
	}
}

func (a *attemptWalk) receives(q *resource) Factor {
	rp := redrivePolicy(cfnindex.Get(q.Props, "RedrivePolicy"))
	n := cfnindex.Num(rp["maxReceiveCount"], defaultMaxReceive)
	if n <= 0 {
		return Factor{Layer: fmt.Sprintf("queue %s: no maxReceiveCount (receives until retention ends)", label(q)), N: Unbounded}
	}
	return Factor{Layer: fmt.Sprintf("queue %s: maxReceiveCount %s", label(q), num(n)), N: n}
}

// deliveries is the attempts of a rule, schedule or pipe target.
func deliveries(retries any, what string, def float64) Factor {
	n := cfnindex.Num(retries, def)
	if n < 0 {
		return Factor{Layer: what + ": retries until the event expires", N: Unbounded}
	}
	return Factor{Layer: fmt.Sprintf("%s: %s retries + 1", what, num(n)), N: n + 1}
}

// asyncInvocations is a Lambda asynchronous invocation's attempts.
func (a *attemptWalk) asyncInvocations(fn *resource) Factor {
	n := float64(defaultAsyncRetries)
	for _, r := range a.ix.Ordered {
		if r.Type != typeEventInvokeConfig {
			continue
		}
		if t, _ := a.ix.Function(cfnindex.Get(r.Props, "FunctionName")); t == fn {
			n = cfnindex.Num(cfnindex.Get(r.Props, "MaximumRetryAttempts"), defaultAsyncRetries)
		}
	}
	return Factor{Layer: fmt.Sprintf("asynchronous invocation of %s: %s retries + 1", label(fn), num(n)), N: n + 1}
}

func (a *attemptWalk) rule(r *resource) {
	targets, _ := cfnindex.Get(r.Props, "Targets").([]any)
	for _, t := range targets {
		tm, _ := t.(map[string]any)
		what := "rule " + label(r)
		d := deliveries(cfnindex.Get(tm, "RetryPolicy", "MaximumRetryAttempts"), what, defaultRuleRetries)
		a.deliver(r, cfnindex.Get(tm, "Arn"), []Factor{d})
	}
}

func (a *attemptWalk) schedule(s *resource) {
	t, _ := cfnindex.Get(s.Props, "Target").(map[string]any)
	d := deliveries(cfnindex.Get(t, "RetryPolicy", "MaximumRetryAttempts"), "schedule "+label(s), defaultRuleRetries)
	a.deliver(s, cfnindex.Get(t, "Arn"), []Factor{d})
}

// deliver counts a delivery to target (attempts = factors) and, for an
// asynchronously invoked function, walks the function.
func (a *attemptWalk) deliver(caller *resource, target any, factors []Factor) {
	t := a.ix.Target(target)
	if t == nil {
		a.emit(describe(target), caller, factors)
		return
	}
	switch t.Type {
	case typeFunction:
		a.emit("lambda:"+label(t), caller, factors)
		a.function(t, []Factor{a.asyncInvocations(t)})
	case typeAPIDestination:
		a.emit("http:"+label(t), caller, factors)
	default:
		a.emit(serviceOf(t)+":"+label(t), caller, factors)
	}
}

func serviceOf(r *resource) string {
	parts := strings.Split(r.Type, "::")
	if len(parts) < 2 {
		return r.Type
	}
	return strings.ToLower(parts[1])
}

// describe names a target the index cannot follow: a literal or rendered
// ARN as "service:resource", an import by its export name, never the raw
// intrinsic function.
func describe(v any) string {
	if m, ok := v.(map[string]any); ok {
		if imp, ok := m["Fn::ImportValue"].(string); ok {
			return "import:" + imp
		}
	}
	s, err := synthesized.Render(v, func(r synthesized.Reference) (string, error) {
		if r.Import != "" {
			return r.Import, nil
		}
		if _, pseudo := strings.CutPrefix(r.LogicalID, "AWS::"); pseudo {
			return "", nil
		}
		return r.LogicalID, nil
	})
	if err != nil {
		return "unrenderable target"
	}
	if parts := strings.SplitN(s, ":", 6); len(parts) == 6 && parts[0] == "arn" {
		svc, res := parts[2], parts[5]
		if svc == "events" && strings.HasPrefix(res, "event-bus/") {
			return "events:" + strings.TrimPrefix(res, "event-bus/")
		}
		return svc + ":" + res
	}
	if strings.Contains(s, "event-bus") || strings.Contains(s, "EventBus") || strings.Contains(s, "Bus") {
		return "events:bus"
	}
	return s
}

func (a *attemptWalk) pipe(p *resource) {
	var factor Factor
	src := a.ix.Target(cfnindex.Get(p.Props, "Source"))
	sp := cfnindex.Get(p.Props, "SourceParameters")
	switch {
	case src != nil && src.Type == typeQueue:
		factor = a.receives(src)
	default:
		retries := cfnindex.Get(sp, "DynamoDBStreamParameters", "MaximumRetryAttempts")
		if retries == nil {
			retries = cfnindex.Get(sp, "KinesisStreamParameters", "MaximumRetryAttempts")
		}
		factor = deliveries(retries, "pipe "+label(p)+" source", -1)
	}
	target := cfnindex.Get(p.Props, "Target")
	t := a.ix.Target(target)
	tp := cfnindex.Get(p.Props, "TargetParameters")
	switch {
	case t != nil && t.Type == typeFunction:
		a.emit("lambda:"+label(t), p, []Factor{factor})
		a.function(t, []Factor{factor})
	case t != nil && t.Type == typeStateMachine:
		if cfnindex.Get(tp, "StepFunctionStateMachineParameters", "InvocationType") == "REQUEST_RESPONSE" {
			a.stateMachine(t, []Factor{factor})
		}
		a.emit("states:"+label(t), p, []Factor{factor})
	default:
		a.deliverOnly(p, target, t, factor)
	}
}

func (a *attemptWalk) deliverOnly(caller *resource, target any, t *resource, f Factor) {
	if t == nil {
		a.emit(describe(target), caller, []Factor{f})
		return
	}
	a.emit(serviceOf(t)+":"+label(t), caller, []Factor{f})
}

// stateMachine walks the Task states of a state machine's definition.
// outer are the layers that make the whole execution run again (a pipe's
// synchronous invocation); a standard workflow started asynchronously has
// none.
func (a *attemptWalk) stateMachine(sm *resource, outer []Factor) {
	def, err := synthesized.Render(cfnindex.Get(sm.Props, "DefinitionString"), func(r synthesized.Reference) (string, error) {
		if r.Import != "" {
			return "{{import:" + r.Import + "}}", nil
		}
		return "{{ref:" + r.LogicalID + "}}", nil
	})
	if err != nil {
		a.unreadable(sm, outer, fmt.Sprintf("cannot read the definition to count its retries (%v)", err))
		return
	}
	var asl struct {
		States map[string]map[string]any
	}
	if err := json.Unmarshal([]byte(def), &asl); err != nil {
		a.unreadable(sm, outer, fmt.Sprintf("the definition is not JSON (%v)", err))
		return
	}
	a.states(sm, asl.States, outer)
}

// unreadable reports a state machine whose paths cannot be counted as one
// unbounded path: the rule fails on it unless it is acknowledged.
func (a *attemptWalk) unreadable(sm *resource, outer []Factor, why string) {
	a.emit("every task of "+label(sm), sm, with(outer, Factor{Layer: "state machine " + label(sm) + ": unreadable", N: Unbounded}))
	a.out[len(a.out)-1].Unreadable = why
}

func retryFactor(state map[string]any, name string) (Factor, bool) {
	retriers, _ := state["Retry"].([]any)
	if len(retriers) == 0 {
		return Factor{}, false
	}
	total := 1.0
	var parts []string
	for _, r := range retriers {
		rm, _ := r.(map[string]any)
		n := cfnindex.Num(rm["MaxAttempts"], defaultSFNMaxAttempts)
		total += n
		parts = append(parts, num(n))
	}
	return Factor{Layer: fmt.Sprintf("state %s: Retry MaxAttempts %s + 1", name, strings.Join(parts, " + ")), N: total}, true
}

func (a *attemptWalk) states(sm *resource, states map[string]map[string]any, outer []Factor) {
	names := make([]string, 0, len(states))
	for n := range states {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		st := states[name]
		fs := outer
		if f, ok := retryFactor(st, name); ok {
			fs = with(outer, f)
		}
		switch st["Type"] {
		case "Map":
			proc, _ := st["ItemProcessor"].(map[string]any)
			if proc == nil {
				proc, _ = st["Iterator"].(map[string]any)
			}
			inner, _ := json.Marshal(proc["States"])
			var m map[string]map[string]any
			_ = json.Unmarshal(inner, &m)
			a.states(sm, m, fs)
		case "Parallel":
			branches, _ := st["Branches"].([]any)
			for _, b := range branches {
				bm, _ := b.(map[string]any)
				inner, _ := json.Marshal(bm["States"])
				var m map[string]map[string]any
				_ = json.Unmarshal(inner, &m)
				a.states(sm, m, fs)
			}
		case "Task":
			a.task(sm, name, st, fs)
		}
	}
}

func (a *attemptWalk) refTarget(s string) *resource {
	i := strings.Index(s, "{{ref:")
	if i < 0 {
		return nil
	}
	j := strings.Index(s[i:], "}}")
	if j < 0 {
		return nil
	}
	return a.ix.ByID[s[i+6:i+j]]
}

func (a *attemptWalk) task(sm *resource, name string, st map[string]any, fs []Factor) {
	res, _ := st["Resource"].(string)
	params, _ := st["Parameters"].(map[string]any)
	if len(fs) == 0 {
		fs = []Factor{{Layer: fmt.Sprintf("state %s: no Retry", name), N: 1}}
	}
	smLabel := "state machine " + label(sm)
	fs = append([]Factor{{Layer: smLabel, N: 1}}, fs...)
	switch {
	case strings.HasSuffix(res, ":states:::lambda:invoke"):
		fnRef, _ := params["FunctionName"].(string)
		if fn := a.refTarget(fnRef); fn != nil && fn.Type == typeFunction {
			a.emit("lambda:"+label(fn), sm, fs)
			a.function(fn, fs)
			return
		}
		a.emit("lambda:"+a.name(fnRef), sm, fs)
	case strings.Contains(res, ":states:::"):
		service := strings.SplitN(res[strings.Index(res, ":states:::")+len(":states:::"):], ":", 2)[0]
		target := ""
		for _, k := range []string{"QueueUrl", "TopicArn", "TableName", "EventBusName", "FunctionName"} {
			if s, ok := params[k].(string); ok {
				target = a.name(s)
			}
		}
		a.emit(strings.TrimSpace(service+":"+target), sm, fs)
	default:
		if fn := a.refTarget(res); fn != nil && fn.Type == typeFunction {
			a.emit("lambda:"+label(fn), sm, fs)
			a.function(fn, fs)
			return
		}
		a.emit(a.name(res), sm, fs)
	}
}
