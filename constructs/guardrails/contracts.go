package guardrails

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/cfnindex"
	"github.com/mercadofresco/integration/constructs/contract"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/synthesized"
	"github.com/mercadofresco/integration/synthesized/eventpattern"
)

// Rules of the event contracts (docs/design.md#event-contracts).
const (
	// RuleContract: a producer may emit an event version that a consumer on
	// one of its routes does not accept, or a consumer on a route declares
	// nothing for the event, or a rule or pipe reshapes events without
	// declaring what it produces.
	RuleContract = "MF-CONTRACT"
	// RuleContractOrder: a producer's stack does not depend on the stack of
	// a consumer on its routes, so a deployment may update the producer
	// first.
	RuleContractOrder = "MF-CONTRACT-ORDER"
)

const (
	typeEventBus = "AWS::Events::EventBus"
	maxRouteHops = 12
)

// checkContracts runs the contract rules on the app of stack, once: they
// read the declarations of constructs/contract from every stack of the app
// (a route crosses stacks).
func (k *checks) checkContracts(stack awscdk.Stack) {
	if !once(&contractsChecked, stack) {
		return
	}
	t := k.s.tree(stack)
	declared := false
	for _, ix := range t.Indexes {
		once(&contractsChecked, ix.Stack)
		for _, r := range ix.Ordered {
			declared = declared || contract.Declares(r.Cfn, synthesized.MetadataProduces)
		}
	}
	if !declared {
		return // no producer declares anything: no route to follow
	}
	for _, f := range newRouteGraph(t).Check() {
		if acknowledgedReason(t.Root, f.At, f.Rule) != "" {
			continue
		}
		awscdk.Annotations_Of(f.At.Cfn).AddError(jsii.String(f.String()))
	}
}

// Finding is one violation of a contract rule, reported on At.
type Finding struct {
	Rule    string
	At      *cfnindex.Resource
	Message string
}

func (f Finding) String() string { return fmt.Sprintf("[%s] %s: %s", f.Rule, f.At.Path(), f.Message) }

// RouteGraph is every stack of an app with the edges events follow: bus
// rules (by their bus), SNS subscriptions (by topic), event source mappings
// and pipes (by queue). A reference to another stack's resource (a Ref or
// Fn::GetAtt before CloudFormation exports exist) is followed among the
// stacks of the same account and region.
type RouteGraph struct {
	indexes []*cfnindex.Index
	owner   map[*cfnindex.Resource]int
	byPath  map[string]*cfnindex.Resource
	rules   map[*cfnindex.Resource][]*cfnindex.Resource // bus -> rules
	subs    map[*cfnindex.Resource][]*cfnindex.Resource // topic -> subscriptions
	esms    map[*cfnindex.Resource][]*cfnindex.Resource // queue -> mappings
	pipes   map[*cfnindex.Resource][]*cfnindex.Resource // queue -> pipes
	deps    map[int]map[int]bool                        // stack -> stacks it depends on
	found   []Finding
	seen    map[string]bool
}

// NewRouteGraph indexes every stack under root.
func NewRouteGraph(root constructs.IConstruct) *RouteGraph {
	return newRouteGraph(cfnindex.NewTree(root))
}

func newRouteGraph(t *cfnindex.Tree) *RouteGraph {
	g := &RouteGraph{indexes: t.Indexes, owner: map[*cfnindex.Resource]int{}, byPath: map[string]*cfnindex.Resource{},
		rules: map[*cfnindex.Resource][]*cfnindex.Resource{}, subs: map[*cfnindex.Resource][]*cfnindex.Resource{},
		esms: map[*cfnindex.Resource][]*cfnindex.Resource{}, pipes: map[*cfnindex.Resource][]*cfnindex.Resource{},
		deps: map[int]map[int]bool{}, seen: map[string]bool{}}
	pos := map[string]int{}
	for i, ix := range g.indexes {
		pos[ix.StackPath()] = i
		for _, r := range ix.Ordered {
			g.owner[r] = i
			g.byPath[r.Path()] = r
		}
	}
	for i, ix := range g.indexes {
		g.deps[i] = map[int]bool{}
		for _, d := range *ix.Stack.Dependencies() {
			if j, ok := pos[*d.Node().Path()]; ok {
				g.deps[i][j] = true
			}
		}
	}
	for _, ix := range g.indexes {
		for _, r := range ix.Ordered {
			g.references(r, r.Props)
			switch r.Type {
			case typeRule:
				if bus := g.resolve(r, cfnindex.Get(r.Props, "EventBusName")); bus != nil {
					g.rules[bus] = append(g.rules[bus], r)
				}
			case typeSubscription:
				if t := g.resolve(r, cfnindex.Get(r.Props, "TopicArn")); t != nil {
					g.subs[t] = append(g.subs[t], r)
				}
			case typeESM:
				if q := g.resolve(r, cfnindex.Get(r.Props, "EventSourceArn")); q != nil {
					g.esms[q] = append(g.esms[q], r)
				}
			case typePipe:
				if q := g.resolve(r, cfnindex.Get(r.Props, "Source")); q != nil {
					g.pipes[q] = append(g.pipes[q], r)
				}
			}
		}
	}
	return g
}

// references records that r's stack depends on every stack whose resource
// its properties reference (CloudFormation adds that dependency).
func (g *RouteGraph) references(r *cfnindex.Resource, v any) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["Ref"]; ok {
			if t := g.resolve(r, x); t != nil && g.owner[t] != g.owner[r] {
				g.deps[g.owner[r]][g.owner[t]] = true
			}
			return
		}
		if _, ok := x["Fn::GetAtt"]; ok {
			if t := g.resolve(r, x); t != nil && g.owner[t] != g.owner[r] {
				g.deps[g.owner[r]][g.owner[t]] = true
			}
			return
		}
		for _, e := range x {
			g.references(r, e)
		}
	case []any:
		for _, e := range x {
			g.references(r, e)
		}
	}
}

// resolve follows v, a value of from's properties, to a resource of the
// app: in from's stack first, else by logical id among the other stacks of
// the same account and region.
func (g *RouteGraph) resolve(from *cfnindex.Resource, v any) *cfnindex.Resource {
	ix := g.indexes[g.owner[from]]
	if t := ix.Target(v); t != nil {
		return t
	}
	id := refID(v)
	if id == "" {
		return nil
	}
	env := g.indexes[g.owner[from]].Environment()
	for i, other := range g.indexes {
		if i == g.owner[from] || other.Environment() != env {
			continue
		}
		if t := other.ByID[id]; t != nil {
			return t
		}
	}
	return nil
}

// refID is the logical id of the first Ref or Fn::GetAtt in v.
func refID(v any) string {
	switch x := v.(type) {
	case map[string]any:
		if id, ok := x["Ref"].(string); ok {
			return id
		}
		switch ga := x["Fn::GetAtt"].(type) {
		case []any:
			if len(ga) > 0 {
				s, _ := ga[0].(string)
				return s
			}
		case string:
			return strings.SplitN(ga, ".", 2)[0]
		}
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range x {
				if !yield(k) {
					return
				}
			}
		}) {
			if id := refID(x[k]); id != "" {
				return id
			}
		}
	case []any:
		for _, e := range x {
			if id := refID(e); id != "" {
				return id
			}
		}
	}
	return ""
}

// emission is one event version on its way: what a producer declared, the
// source and detail-type it has on a bus, and the hops so far.
type emission struct {
	typ      string
	version  int
	source   string
	producer *cfnindex.Resource
	via      string // the producer that the transforming producer read, if any
	route    []string
}

// Check follows every declared production along its routes and returns the
// findings, in a deterministic order.
func (g *RouteGraph) Check() []Finding {
	for _, ix := range g.indexes {
		for _, r := range ix.Ordered {
			for _, d := range g.read(r, synthesized.MetadataProduces) {
				if d.To == "" {
					continue // a rule or pipe: its own targets, when events reach it
				}
				dst := g.byPath[d.To]
				if dst == nil {
					g.add(RuleContract, r, "declares that it produces %s to %s, which is not a resource of this app", d.Type, d.To)
					continue
				}
				for _, v := range d.Versions {
					g.deliver(emission{typ: d.Type, version: v, source: d.Source, producer: r}, dst, []string{label(r)})
				}
			}
			if r.Type == typePipe && len(g.pipeSources(r)) == 0 {
				g.pipe(r, nil, nil) // a pipe whose source is not a queue of the app (a stream): it produces
			}
		}
	}
	sort.SliceStable(g.found, func(i, j int) bool { return g.found[i].String() < g.found[j].String() })
	return g.found
}

// read is r's declarations under key, asked of jsii only when r carries
// some (contract.Declares answers from memory).
func (g *RouteGraph) read(r *cfnindex.Resource, key string) []contract.Declaration {
	if !contract.Declares(r.Cfn, key) {
		return nil
	}
	return contract.Read(r.Cfn, key)
}

func (g *RouteGraph) pipeSources(p *cfnindex.Resource) []*cfnindex.Resource {
	if q := g.resolve(p, cfnindex.Get(p.Props, "Source")); q != nil && q.Type == typeQueue {
		return []*cfnindex.Resource{q}
	}
	return nil
}

func (g *RouteGraph) add(rule string, at *cfnindex.Resource, format string, a ...any) {
	f := Finding{Rule: rule, At: at, Message: fmt.Sprintf(format, a...)}
	if !g.seen[f.String()] {
		g.seen[f.String()] = true
		g.found = append(g.found, f)
	}
}

func (g *RouteGraph) deliver(e emission, dst *cfnindex.Resource, route []string) {
	if dst == nil || len(route) > maxRouteHops {
		return
	}
	hop := append(slices.Clone(route), label(dst))
	switch dst.Type {
	case typeEventBus:
		for _, rule := range g.rules[dst] {
			g.rule(e, rule, hop)
		}
	case typeTopic:
		for _, sub := range g.subs[dst] {
			if !subscriptionAdmits(sub, e) {
				continue
			}
			g.deliver(e, g.resolve(sub, cfnindex.Get(sub.Props, "Endpoint")), append(slices.Clone(hop), "subscription "+filterLabel(sub)))
		}
	case typeQueue:
		for _, m := range g.esms[dst] {
			if fn, _ := g.function(m); fn != nil {
				g.consume(e, fn, hop)
			}
		}
		for _, p := range g.pipes[dst] {
			g.pipe(p, &e, hop)
		}
	case typeFunction, typeStateMachine, typeAPIDestination:
		g.consume(e, dst, route)
	}
}

// function resolves an event source mapping's function, across stacks too.
func (g *RouteGraph) function(m *cfnindex.Resource) (*cfnindex.Resource, float64) {
	if fn, t := g.indexes[g.owner[m]].Function(cfnindex.Get(m.Props, "FunctionName")); fn != nil {
		return fn, t
	}
	if fn := g.resolve(m, cfnindex.Get(m.Props, "FunctionName")); fn != nil && fn.Type == typeFunction {
		return fn, 0
	}
	return nil, 0
}

func (g *RouteGraph) rule(e emission, rule *cfnindex.Resource, route []string) {
	if !patternAdmits(cfnindex.Get(rule.Props, "EventPattern"), e) {
		return
	}
	hop := append(slices.Clone(route), "rule "+label(rule))
	targets, _ := cfnindex.Get(rule.Props, "Targets").([]any)
	for _, t := range targets {
		tm, _ := t.(map[string]any)
		dst := g.resolve(rule, cfnindex.Get(tm, "Arn"))
		if cfnindex.Get(tm, "InputTransformer") == nil && cfnindex.Get(tm, "Input") == nil {
			g.deliver(e, dst, hop)
			continue
		}
		// A rule that rewrites the event consumes it (it reads its fields)
		// and is the producer of the new shape.
		g.consume(e, rule, hop)
		ds := g.read(rule, synthesized.MetadataProduces)
		if len(ds) == 0 {
			g.add(RuleContract, rule, "rewrites %s version %d from %s with an input transformer but declares no contract for what it sends to %s; declare it with contract.Produces (docs/design.md#event-contracts)", e.typ, e.version, e.producer.Path(), label0(dst))
			continue
		}
		for _, d := range ds {
			versions := d.Versions
			if len(versions) == 0 {
				versions = []int{e.version} // the transformer copies detail.version
			}
			for _, v := range versions {
				g.deliver(emission{typ: d.Type, version: v, source: e.source, producer: rule, via: e.producer.Path()}, dst, hop)
			}
		}
	}
}

// pipe follows a pipe: one with an input template is the producer of the
// shape it declares; one without passes e on to its target.
func (g *RouteGraph) pipe(p *cfnindex.Resource, e *emission, route []string) {
	hop := append(slices.Clone(route), "pipe "+label(p))
	dst := g.resolve(p, cfnindex.Get(p.Props, "Target"))
	tp := cfnindex.Get(p.Props, "TargetParameters")
	busParams := cfnindex.Get(tp, "EventBridgeEventBusParameters")
	source, _ := cfnindex.Get(busParams, "Source").(string)
	if cfnindex.Get(tp, "InputTemplate") == nil {
		if e != nil {
			g.deliver(*e, dst, hop)
		}
		return
	}
	ds := g.read(p, synthesized.MetadataProduces)
	if len(ds) == 0 {
		g.add(RuleContract, p, "builds its events with an input template but declares no contract for what it sends to %s; declare it with contract.Produces (docs/design.md#event-contracts)", label0(dst))
		return
	}
	for _, d := range ds {
		if dt, _ := cfnindex.Get(busParams, "DetailType").(string); dt != "" && dt != d.Type {
			g.add(RuleContract, p, "declares that it produces %s but sends detail-type %q", d.Type, dt)
		}
		for _, v := range d.Versions {
			ne := emission{typ: d.Type, version: v, source: source, producer: p}
			if e != nil {
				ne.via = e.producer.Path()
			}
			g.deliver(ne, dst, []string{label(p)})
		}
	}
}

func label0(r *cfnindex.Resource) string {
	if r == nil {
		return "its target"
	}
	return label(r)
}

// consume checks that consumer accepts e, and that the producer's stack
// deploys after the consumer's.
func (g *RouteGraph) consume(e emission, consumer *cfnindex.Resource, route []string) {
	routeText := strings.Join(route, " → ")
	if e.via != "" {
		routeText += " (rewriting events of " + e.via + ")"
	}
	var accepts []int
	declared := false
	for _, d := range g.read(consumer, synthesized.MetadataAccepts) {
		if d.Type == e.typ {
			accepts, declared = d.Versions, true
		}
	}
	switch {
	case !declared:
		g.add(RuleContract, e.producer, "may emit %s version %d, which reaches consumer %s through %s; the consumer declares no accepted versions of %s (contract.Accepts with eventsapi.AcceptedVersions)", e.typ, e.version, consumer.Path(), routeText, e.typ)
	case !slices.Contains(accepts, e.version):
		g.add(RuleContract, e.producer, "may emit %s version %d, but consumer %s on route %s accepts %s only; accept the version in the consumer (eventsapi) and deploy it first, or keep the version away with a filter on the route (docs/design.md#event-contracts)", e.typ, e.version, consumer.Path(), routeText, versionsText(accepts))
	}
	p, c := g.owner[e.producer], g.owner[consumer]
	if p != c && !g.dependsOn(p, c, map[int]bool{}) {
		g.add(RuleContractOrder, e.producer, "produces %s for consumer %s through %s, but its stack %s does not depend on the consumer's stack %s, so a deployment may update the producer first; declare %s.AddStackDependency(%s) (consumers deploy before producers)",
			e.typ, consumer.Path(), routeText, *g.indexes[p].Stack.StackName(), *g.indexes[c].Stack.StackName(), *g.indexes[p].Stack.StackName(), *g.indexes[c].Stack.StackName())
	}
}

func (g *RouteGraph) dependsOn(a, b int, seen map[int]bool) bool {
	if seen[a] {
		return false
	}
	seen[a] = true
	for d := range g.deps[a] {
		if d == b || g.dependsOn(d, b, seen) {
			return true
		}
	}
	return false
}

func versionsText(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(v)
	}
	if len(parts) == 0 {
		return "no version"
	}
	return "version " + strings.Join(parts, ", ")
}

// patternAdmits reports whether an event pattern may let e through: only
// its conditions on source, detail-type and detail.version decide (the
// others depend on the content, so they may match). A pattern this check
// cannot evaluate admits.
func patternAdmits(p any, e emission) bool {
	pm, ok := p.(map[string]any)
	if !ok {
		return true
	}
	pruned := map[string]any{}
	if v, ok := pm["detail-type"]; ok {
		pruned["detail-type"] = v
	}
	if v, ok := pm["source"]; ok && e.source != "" {
		pruned["source"] = v
	}
	if d, ok := pm["detail"].(map[string]any); ok {
		if v, ok := d["version"]; ok {
			pruned["detail"] = map[string]any{"version": v}
		}
	}
	event := map[string]any{"detail-type": e.typ, "detail": map[string]any{"version": float64(e.version)}}
	if e.source != "" {
		event["source"] = e.source
	}
	return admits(pruned, event)
}

func admits(pattern, event map[string]any) bool {
	if len(pattern) == 0 {
		return true
	}
	c, err := eventpattern.CompileValue(pattern)
	if err != nil {
		return true
	}
	return c.MatchValue(event)
}

// subscriptionAdmits reports whether a subscription's filter policy may
// let e through. Producers to a topic set the message attributes
// eventsapi.AttrTipo and AttrVersion (String); with the MessageBody scope
// the body's "version" (a number) decides.
func subscriptionAdmits(sub *cfnindex.Resource, e emission) bool {
	fp, ok := cfnindex.Get(sub.Props, "FilterPolicy").(map[string]any)
	if !ok {
		return true
	}
	if strings.EqualFold(sub.Str("FilterPolicyScope"), "MessageBody") {
		pruned := map[string]any{}
		if v, ok := fp["version"]; ok {
			pruned["version"] = v
		}
		return admits(pruned, map[string]any{"version": float64(e.version)})
	}
	pruned := map[string]any{}
	for _, k := range []string{eventsapi.AttrTipo, eventsapi.AttrVersion} {
		if v, ok := fp[k]; ok {
			pruned[k] = v
		}
	}
	return admits(pruned, map[string]any{eventsapi.AttrTipo: e.typ, eventsapi.AttrVersion: strconv.Itoa(e.version)})
}

func filterLabel(sub *cfnindex.Resource) string {
	if fp := cfnindex.Get(sub.Props, "FilterPolicy"); fp != nil {
		return fmt.Sprintf("%s (filter %v)", sub.Path(), fp)
	}
	return sub.Path()
}
