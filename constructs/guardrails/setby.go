package guardrails

import (
	"fmt"
	"strings"

	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// setByMetadata is the construct metadata type SetBy writes.
const setByMetadata = "mercadofresco:set-by:"

// SetBy records on a construct (an L1 or any ancestor) which source
// constant sets one of its resources' properties, e.g.
//
//	guardrails.SetBy(c, "VisibilityTimeout", "PreparacionVisibility in constructs/consumers")
//
// A finding on that property then names the constant to change.
func SetBy(c constructs.IConstruct, property, source string) {
	c.Node().AddMetadata(jsii.String(setByMetadata+property), source, nil)
}

// setBy is what SetBy recorded for property on r's construct or its
// nearest ancestor, "" when nothing was.
func setBy(r *resource, property string) string {
	if r == nil || r.Cfn == nil {
		return ""
	}
	scopes := *r.Cfn.Node().Scopes()
	for i := len(scopes) - 1; i >= 0; i-- {
		for _, m := range *scopes[i].Node().Metadata() {
			if m.Type != nil && *m.Type == setByMetadata+property {
				if s, ok := m.Data.(string); ok {
					return s
				}
			}
		}
	}
	return ""
}

// changeHint is "; change A or B" for the recorded sources of the
// properties, "" when none was recorded.
func changeHint(pairs ...any) string {
	var names []string
	for i := 0; i+1 < len(pairs); i += 2 {
		r, _ := pairs[i].(*resource)
		prop, _ := pairs[i+1].(string)
		if s := setBy(r, prop); s != "" {
			names = append(names, fmt.Sprintf("%s (%s)", s, prop))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "; to fix, change " + strings.Join(names, " or ")
}
