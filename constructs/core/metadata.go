package core

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/mercadofresco/integration/synthesized"
)

// Acknowledge records that rule (one of package checks) does not apply to
// c and its children, for reason: why the risk the rule guards against
// cannot happen there. The checks read it from the construct metadata of
// the assembly; a blank reason is a synthesis error.
func Acknowledge(c constructs.IConstruct, rule, reason string) {
	if strings.TrimSpace(reason) == "" {
		awscdk.Annotations_Of(c).AddError(jsii.String(fmt.Sprintf("core.Acknowledge(%s) on %s needs a reason", rule, *c.Node().Path())))
		return
	}
	c.Node().AddMetadata(jsii.String(synthesized.MetadataAcknowledged), map[string]any{"rule": rule, "reason": reason}, nil)
}

// AcknowledgeNag records that cdk-nag's rule (an AwsSolutions rule) does
// not apply to c (with children, nor to the resources under it) for
// reason, only for the findings appliesTo names when it names any
// ("Resource::*"): a cdk-nag suppression, next to the resource it
// concerns.
func AcknowledgeNag(c constructs.IConstruct, children bool, rule, reason string, appliesTo ...string) {
	s := &cdknag.NagPackSuppression{Id: jsii.String(rule), Reason: jsii.String(reason)}
	if len(appliesTo) > 0 {
		applies := make([]any, len(appliesTo))
		for i, a := range appliesTo {
			applies[i] = a
		}
		s.AppliesTo = &applies
	}
	cdknag.NagSuppressions_AddResourceSuppressions(c, &[]*cdknag.NagPackSuppression{s}, jsii.Bool(children))
}

// SetBy records on c (an L1 or any construct above it) which source
// constant sets one of its resources' properties, e.g.
//
//	core.SetBy(c, "VisibilityTimeout", "PreparacionVisibility in constructs/queues")
//
// A finding on that property then names the constant to change.
func SetBy(c constructs.IConstruct, property, source string) {
	c.Node().AddMetadata(jsii.String(synthesized.MetadataSetBy+property), source, nil)
}

// The event contracts (MF-CONTRACT, docs/design.md#event-contracts): which
// event types and major versions each producer emits (Produces,
// ProducesOnBus) and each consumer accepts (Accepts), as metadata of the
// L1 resource (synthesized.MetadataProduces, MetadataAccepts). A producer
// names where it sends (nil for a rule or pipe, whose targets say it);
// versions come from lambdas/eventsapi: a producer's <Event>Version, a
// consumer's AcceptedVersions, the list its code checks.

// Produces declares that producer (a construct or its L1 resource) emits
// eventType in versions to destination (nil for a rule with an input
// transformer or a pipe with an input template: its target is the
// destination).
func Produces(producer constructs.IConstruct, eventType string, versions []int, destination constructs.IConstruct) {
	ProducesOnBus(producer, "", eventType, versions, destination)
}

// ProducesOnBus declares that producer puts events of eventType (the
// detail-type) in versions with source on bus.
func ProducesOnBus(producer constructs.IConstruct, source, eventType string, versions []int, bus constructs.IConstruct) {
	d := synthesized.Declaration{Type: eventType, Versions: slices.Sorted(slices.Values(versions)), Source: source}
	if bus != nil && l1(bus) != nil {
		d.To = l1Path(bus) // an imported destination is not this app's
	}
	add(producer, synthesized.MetadataProduces, d)
}

// Accepts declares that consumer (a construct or its L1 resource) accepts
// eventType in versions.
func Accepts(consumer constructs.IConstruct, eventType string, versions []int) {
	add(consumer, synthesized.MetadataAccepts, synthesized.Declaration{Type: eventType, Versions: slices.Sorted(slices.Values(versions))})
}

// l1Path is the construct path of c's L1 resource (its default child, or c).
func l1Path(c constructs.IConstruct) string {
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

func add(c constructs.IConstruct, key string, d synthesized.Declaration) {
	r := l1(c)
	if r == nil {
		awscdk.Annotations_Of(c).AddError(jsii.String(fmt.Sprintf("contract: %s has no CloudFormation resource to carry the %s declaration of %s", *c.Node().Path(), key, d.Type)))
		return
	}
	if d.Versions == nil {
		d.Versions = []int{} // "versions": [], a rewriter's declaration that copies what it reads
	}
	ds := synthesized.Declarations(r.GetMetadata(jsii.String(key)))
	ds = slices.DeleteFunc(ds, func(x synthesized.Declaration) bool { return x.Type == d.Type && x.To == d.To })
	// The declarations' JSON form (synthesized.Declaration's field tags):
	// strings and numbers cannot fail to encode.
	raw, _ := json.Marshal(append(ds, d))
	var out []any
	_ = json.Unmarshal(raw, &out)
	r.AddMetadata(jsii.String(key), out)
}
