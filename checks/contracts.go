package checks

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/synthesized"
	"github.com/mercadofresco/integration/synthesized/eventpattern"
)

// Rules of the event contracts (docs/design.md#event-contracts).
const (
	// RuleContract: a producer may emit an event version that a consumer on
	// one of its routes does not accept, or that a filter on a route keeps
	// from every consumer there, or a consumer on a route declares nothing
	// for the event, or a rule or pipe reshapes events without declaring
	// what it produces, or a filter on a route cannot be evaluated.
	RuleContract = "MF-CONTRACT"
	// RuleContractOrder: a producer's stack does not depend on the stack of
	// a consumer on its routes, so a deployment may update the producer
	// first.
	RuleContractOrder = "MF-CONTRACT-ORDER"
)

const maxRouteHops = 12

// emission is one event version on its way: what a producer declared, the
// source it has on a bus, the producer a transforming rule or pipe read,
// and the filter that keeps it from the consumers ahead (nil: none).
type emission struct {
	typ      string
	version  int
	source   string
	producer *synthesized.Resource
	via      string
	dropped  *synthesized.Resource
}

// contracts follows every declared production along its routes (only
// when some resource declares one: no route to follow otherwise).
func (c *checker) contracts() {
	byPath := map[string]*synthesized.Resource{}
	produces := false
	for _, r := range c.app.Resources("") {
		byPath[r.Path()] = r
		produces = produces || r.Metadata[synthesized.MetadataProduces] != nil
	}
	if !produces {
		return
	}
	g := &routes{c: c, found: map[string]routeFinding{}}
	for _, r := range c.app.Resources("") {
		for _, d := range synthesized.Declarations(r.Metadata[synthesized.MetadataProduces]) {
			if d.To == "" {
				continue // a rule or pipe: its own targets, when events reach it
			}
			dst := byPath[d.To]
			if dst == nil {
				g.add(RuleContract, r, "declares that it produces %s to %s, which is not a resource of this app", d.Type, d.To)
				continue
			}
			for _, v := range d.Versions {
				g.deliver(emission{typ: d.Type, version: v, source: d.Source, producer: r}, dst, []string{label(r)})
			}
		}
		if r.Type == "AWS::Pipes::Pipe" {
			for _, e := range c.app.Via(r, synthesized.Pipe) {
				if e.From == nil || e.From.Type != typeQueue {
					g.pipe(e, nil, nil) // its source is not a queue of the app (a stream): it produces
				}
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(g.found)) {
		f := g.found[k]
		c.fail(f.at, f.rule, "%s", f.message)
	}
}

// routes is one walk of the routes: its findings, by their text.
type routes struct {
	c     *checker
	found map[string]routeFinding
}

type routeFinding struct {
	rule, message string
	at            *synthesized.Resource
}

func (g *routes) add(rule string, at *synthesized.Resource, format string, a ...any) {
	f := routeFinding{rule: rule, at: at, message: fmt.Sprintf(format, a...)}
	g.found[Finding{Rule: rule, Path: at.Path(), Message: f.message}.String()] = f
}

func (g *routes) deliver(e emission, dst *synthesized.Resource, route []string) {
	if dst == nil || len(route) > maxRouteHops {
		return
	}
	hop := append(slices.Clone(route), label(dst))
	switch dst.Type {
	case "AWS::Events::EventBus":
		var rules []*synthesized.Resource
		for _, t := range g.c.app.From(dst, synthesized.RuleTarget) {
			if !slices.Contains(rules, t.Via) {
				rules = append(rules, t.Via)
			}
		}
		for _, rule := range rules {
			g.rule(e, rule, g.c.app.Via(rule, synthesized.RuleTarget), hop)
		}
	case "AWS::SNS::Topic":
		for _, sub := range g.c.app.From(dst, synthesized.Subscription) {
			through := "subscription " + sub.Via.Path()
			if fp := sub.Settings["FilterPolicy"]; fp != nil {
				through += fmt.Sprintf(" (filter %v)", fp)
			}
			if e, ok := g.filter(e, sub.Via, func(v bool) (bool, error) { return subscriptionAdmits(sub.Settings, e, v) }); ok {
				g.deliver(e, sub.To, append(slices.Clone(hop), through))
			}
		}
	case typeQueue:
		for _, m := range g.c.app.From(dst, synthesized.Mapping) {
			if e, ok := g.filter(e, m.Via, func(v bool) (bool, error) { return g.mappingAdmits(m, e, v) }); ok && m.To != nil {
				g.consume(e, m.To, hop)
			}
		}
		for _, p := range g.c.app.From(dst, synthesized.Pipe) {
			g.pipe(p, &e, hop)
		}
	case "AWS::Lambda::Function", "AWS::StepFunctions::StateMachine", "AWS::Events::ApiDestination":
		g.consume(e, dst, route)
	}
}

func (g *routes) rule(e emission, rule *synthesized.Resource, targets []*synthesized.Edge, route []string) {
	e, ok := g.filter(e, rule, func(v bool) (bool, error) { return patternAdmits(rule.Prop("EventPattern"), e, v) })
	if !ok {
		return
	}
	hop := append(slices.Clone(route), "rule "+label(rule))
	for _, t := range targets {
		if t.Settings["InputTransformer"] == nil && t.Settings["Input"] == nil {
			g.deliver(e, t.To, hop)
			continue
		}
		// A rule that rewrites the event consumes it (it reads its fields)
		// and is the producer of the new shape.
		g.consume(e, rule, hop)
		ds := synthesized.Declarations(rule.Metadata[synthesized.MetadataProduces])
		if len(ds) == 0 {
			g.add(RuleContract, rule, "rewrites %s version %d from %s with an input transformer but declares no contract for what it sends to %s; declare it with core.Produces (docs/design.md#event-contracts)", e.typ, e.version, e.producer.Path(), labelOr(t.To))
			continue
		}
		for _, d := range ds {
			versions := d.Versions
			if len(versions) == 0 {
				versions = []int{e.version} // the transformer copies detail.version
			}
			for _, v := range versions {
				g.deliver(emission{typ: d.Type, version: v, source: e.source, producer: rule, via: e.producer.Path()}, t.To, hop)
			}
		}
	}
}

// pipe follows a pipe: one with an input template is the producer of the
// shape it declares; one without passes e on to its target.
func (g *routes) pipe(p *synthesized.Edge, e *emission, route []string) {
	hop := append(slices.Clone(route), "pipe "+label(p.Via))
	tp := p.Via.Prop("TargetParameters")
	bus := synthesized.Dig(tp, "EventBridgeEventBusParameters")
	if synthesized.Dig(tp, "InputTemplate") == nil {
		if e != nil {
			g.deliver(*e, p.To, hop)
		}
		return
	}
	ds := synthesized.Declarations(p.Via.Metadata[synthesized.MetadataProduces])
	if len(ds) == 0 {
		g.add(RuleContract, p.Via, "builds its events with an input template but declares no contract for what it sends to %s; declare it with core.Produces (docs/design.md#event-contracts)", labelOr(p.To))
		return
	}
	for _, d := range ds {
		if dt := str(synthesized.Dig(bus, "DetailType")); dt != "" && dt != d.Type {
			g.add(RuleContract, p.Via, "declares that it produces %s but sends detail-type %q", d.Type, dt)
		}
		for _, v := range d.Versions {
			ne := emission{typ: d.Type, version: v, source: str(synthesized.Dig(bus, "Source")), producer: p.Via}
			if e != nil {
				ne.via = e.producer.Path()
			}
			g.deliver(ne, p.To, []string{label(p.Via)})
		}
	}
}

func labelOr(r *synthesized.Resource) string {
	if r == nil {
		return "its target"
	}
	return label(r)
}

// consume checks that consumer accepts e, and that the producer's stack
// deploys after the consumer's.
func (g *routes) consume(e emission, consumer *synthesized.Resource, route []string) {
	routeText := strings.Join(route, " → ")
	if e.via != "" {
		routeText += " (rewriting events of " + e.via + ")"
	}
	var accepts []int
	declared := false
	for _, d := range synthesized.Declarations(consumer.Metadata[synthesized.MetadataAccepts]) {
		if d.Type == e.typ {
			accepts, declared = d.Versions, true
		}
	}
	switch {
	case e.dropped != nil:
		g.add(RuleContract, e.dropped, "keeps %s version %d, which %s may emit, from consumer %s on route %s, so those events are lost on this route; route the version to a consumer that accepts it, or acknowledge %s on this filter with the reason (docs/design.md#event-contracts)", e.typ, e.version, e.producer.Path(), consumer.Path(), routeText, RuleContract)
		return
	case !declared:
		g.add(RuleContract, e.producer, "may emit %s version %d, which reaches consumer %s through %s; the consumer declares no accepted versions of %s (core.Accepts with eventsapi.AcceptedVersions)", e.typ, e.version, consumer.Path(), routeText, e.typ)
	case !slices.Contains(accepts, e.version):
		g.add(RuleContract, e.producer, "may emit %s version %d, but consumer %s on route %s accepts %s only; accept the version in the consumer (eventsapi) and deploy it first (docs/design.md#event-contracts)", e.typ, e.version, consumer.Path(), routeText, versionsText(accepts))
	}
	if p, c := e.producer.Stack, consumer.Stack; p != c && !g.c.app.DependsOn(p, c) {
		g.add(RuleContractOrder, e.producer, "produces %s for consumer %s through %s, but its stack %s does not depend on the consumer's stack %s, so a deployment may update the producer first; declare %s.AddStackDependency(%s) (consumers deploy before producers)",
			e.typ, consumer.Path(), routeText, p, c, p, c)
	}
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

// filter passes e through the filter of at: admit reports whether it lets
// e through, judging its condition on the version or not. A filter that
// drops e for its version alone passes it on marked, so each consumer it
// keeps e from is named; a filter this check cannot evaluate is a finding
// and passes e on.
func (g *routes) filter(e emission, at *synthesized.Resource, admit func(version bool) (bool, error)) (emission, bool) {
	ok, err := admit(true)
	if err != nil {
		g.add(RuleContract, at, "cannot evaluate its filter for %s from %s: %v", e.typ, e.producer.Path(), err)
		return e, true
	}
	if !ok {
		if ok, _ = admit(false); ok && e.dropped == nil {
			e.dropped = at
		}
	}
	return e, ok
}

// patternAdmits reports whether an event pattern may let e through: only
// its conditions on source, detail-type and (when version) detail.version
// decide (the others depend on the content, so they may match).
func patternAdmits(p any, e emission, version bool) (bool, error) {
	pm, ok := p.(map[string]any)
	if !ok {
		return true, nil
	}
	pruned := map[string]any{}
	if v, ok := pm["detail-type"]; ok {
		pruned["detail-type"] = v
	}
	if v, ok := pm["source"]; ok && e.source != "" {
		pruned["source"] = v
	}
	if v := synthesized.Dig(pm, "detail", "version"); v != nil && version {
		pruned["detail"] = map[string]any{"version": v}
	}
	event := map[string]any{"detail-type": e.typ, "detail": map[string]any{"version": float64(e.version)}}
	if e.source != "" {
		event["source"] = e.source
	}
	return admits(pruned, event)
}

// admits matches event against pattern. An operator eventpattern does not
// evaluate is an error, never a guess either way.
func admits(pattern, event map[string]any) (bool, error) {
	if len(pattern) == 0 {
		return true, nil
	}
	c, err := eventpattern.CompileValue(pattern)
	if err != nil {
		return false, err
	}
	return c.MatchValue(event), nil
}

// subscriptionAdmits reports whether a subscription's filter policy may
// let e through. Producers to a topic set the message attributes
// eventsapi.AttrTipo and AttrVersion (String); with the MessageBody scope
// the body's "version" (a number) decides.
func subscriptionAdmits(sub map[string]any, e emission, version bool) (bool, error) {
	fp, ok := sub["FilterPolicy"].(map[string]any)
	if !ok {
		return true, nil
	}
	pruned := map[string]any{}
	if strings.EqualFold(str(sub["FilterPolicyScope"]), "MessageBody") {
		if v, ok := fp["version"]; ok && version {
			pruned["version"] = v
		}
		return admits(pruned, map[string]any{"version": float64(e.version)})
	}
	if v, ok := fp[eventsapi.AttrTipo]; ok {
		pruned[eventsapi.AttrTipo] = v
	}
	if v, ok := fp[eventsapi.AttrVersion]; ok && version {
		pruned[eventsapi.AttrVersion] = v
	}
	return admits(pruned, map[string]any{eventsapi.AttrTipo: e.typ, eventsapi.AttrVersion: strconv.Itoa(e.version)})
}

// mappingAdmits reports whether an event source mapping's filters may let
// e through (any filter matching): each pattern's "body" is read as the
// event a bus rule delivers to the queue (patternAdmits).
func (g *routes) mappingAdmits(m *synthesized.Edge, e emission, version bool) (bool, error) {
	filters := listOf(synthesized.Dig(m.Settings["FilterCriteria"], "Filters"))
	for _, f := range filters {
		var p map[string]any
		if err := json.Unmarshal([]byte(g.c.app.String(m.Via.Stack, synthesized.Dig(f, "Pattern"))), &p); err != nil {
			return false, fmt.Errorf("filter pattern: %w", err)
		}
		if ok, err := patternAdmits(p["body"], e, version); ok || err != nil {
			return ok, err
		}
	}
	return len(filters) == 0, nil
}
