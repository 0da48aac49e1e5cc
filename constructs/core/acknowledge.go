package core

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

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

// SetBy records on c (an L1 or any construct above it) which source
// constant sets one of its resources' properties, e.g.
//
//	core.SetBy(c, "VisibilityTimeout", "PreparacionVisibility in constructs/consumers")
//
// A finding on that property then names the constant to change.
func SetBy(c constructs.IConstruct, property, source string) {
	c.Node().AddMetadata(jsii.String(synthesized.MetadataSetBy+property), source, nil)
}
