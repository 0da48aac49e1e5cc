// Package contract declares, on the resources of a CDK app, which event
// types and major versions each producer emits and each consumer accepts,
// as template metadata (synthesized.MetadataProduces, MetadataAccepts)
// that the check MF-CONTRACT (package checks) reads to follow every route
// from producer to consumer (docs/design.md#event-contracts).
//
// A producer names where it sends (the destination's construct; nil for a
// rule or pipe, whose targets say it). Versions come from
// lambdas/eventsapi: a producer's from eventsapi.<Event>Version, a
// consumer's from eventsapi.AcceptedVersions, the list its code checks.
package contract

import (
	"fmt"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/synthesized"
)

// Declaration is one event type with its major versions. For producers,
// To is the construct path of the destination's L1 resource ("" when the
// resource's own targets say where it goes) and Source the event's source
// on a bus. A rule or pipe that rewrites events and declares no Versions
// copies the version of the event it read.
type Declaration struct {
	Type     string `json:"type"`
	Versions []int  `json:"versions"`
	To       string `json:"to,omitempty"`
	Source   string `json:"source,omitempty"`
}

// Produces declares that producer (a construct or its L1 resource) emits
// eventType in versions to destination (nil for a rule with an input
// transformer or a pipe with an input template: its target is the
// destination).
func Produces(producer constructs.IConstruct, eventType string, versions []int, destination constructs.IConstruct) {
	d := Declaration{Type: eventType, Versions: slices.Sorted(slices.Values(versions))}
	if destination != nil && l1(destination) != nil {
		d.To = Path(destination) // an imported destination is not this app's
	}
	add(producer, synthesized.MetadataProduces, d)
}

// ProducesOnBus declares that producer puts events of eventType (the
// detail-type) in versions with source on bus.
func ProducesOnBus(producer constructs.IConstruct, source, eventType string, versions []int, bus constructs.IConstruct) {
	d := Declaration{Type: eventType, Versions: slices.Sorted(slices.Values(versions)), Source: source}
	if bus != nil && l1(bus) != nil {
		d.To = Path(bus)
	}
	add(producer, synthesized.MetadataProduces, d)
}

// Accepts declares that consumer (a construct or its L1 resource) accepts
// eventType in versions.
func Accepts(consumer constructs.IConstruct, eventType string, versions []int) {
	add(consumer, synthesized.MetadataAccepts, Declaration{Type: eventType, Versions: slices.Sorted(slices.Values(versions))})
}

// Path is the construct path of c's L1 resource (its default child, or c).
func Path(c constructs.IConstruct) string {
	if r := l1(c); r != nil {
		return *r.Node().Path()
	}
	return *c.Node().Path()
}

func l1(c constructs.IConstruct) awscdk.CfnResource {
	for range 4 {
		if *awscdk.CfnResource_IsCfnResource(c) {
			r, _ := c.(awscdk.CfnResource)
			return r
		}
		child := c.Node().DefaultChild()
		if child == nil {
			// An L2 whose L1 is not named "Resource" (the ApiDestination's
			// is "ApiDestination"): its one CloudFormation child.
			var only []constructs.IConstruct
			for _, ch := range *c.Node().Children() {
				if *awscdk.CfnResource_IsCfnResource(ch) {
					only = append(only, ch)
				}
			}
			if len(only) != 1 {
				return nil
			}
			child = only[0]
		}
		c = child
	}
	return nil
}

func add(c constructs.IConstruct, key string, d Declaration) {
	r := l1(c)
	if r == nil {
		awscdk.Annotations_Of(c).AddError(jsii.String(fmt.Sprintf("contract: %s has no CloudFormation resource to carry the %s declaration of %s", *c.Node().Path(), key, d.Type)))
		return
	}
	ds := Read(r, key)
	ds = slices.DeleteFunc(ds, func(x Declaration) bool { return x.Type == d.Type && x.To == d.To })
	ds = append(ds, d)
	out := make([]any, len(ds))
	for i, x := range ds {
		m := map[string]any{"type": x.Type, "versions": ints(x.Versions)}
		if x.To != "" {
			m["to"] = x.To
		}
		if x.Source != "" {
			m["source"] = x.Source
		}
		out[i] = m
	}
	r.AddMetadata(jsii.String(key), out)
}

func ints(xs []int) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

// Read returns the declarations under key (synthesized.MetadataProduces or
// synthesized.MetadataAccepts) of the L1 resource r.
func Read(r awscdk.CfnResource, key string) []Declaration {
	raw, _ := r.GetMetadata(jsii.String(key)).([]any)
	var out []Declaration
	for _, e := range raw {
		m, _ := e.(map[string]any)
		if m == nil {
			continue
		}
		d := Declaration{}
		d.Type, _ = m["type"].(string)
		d.To, _ = m["to"].(string)
		d.Source, _ = m["source"].(string)
		vs, _ := m["versions"].([]any)
		for _, v := range vs {
			if f, ok := v.(float64); ok {
				d.Versions = append(d.Versions, int(f))
			}
		}
		out = append(out, d)
	}
	return out
}
