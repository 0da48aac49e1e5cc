package events

import (
	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/observability"
)

// contribute adds the rule's widget to the Bus section of the context's
// dashboard (its DLQ contributes its own).
func (r *Rule) contribute(ctx core.Context, name *string) {
	if ctx.Dashboard == nil {
		return
	}
	var bus *string
	if r.bus != nil {
		bus = r.bus.EventBusName()
	}
	title := *r.Node().Path()
	if !observability.IsToken(name) {
		title = *name
	}
	ctx.Dashboard.Add(observability.Bus, observability.Rule(title, observability.Literal(name, r.Rule.RuleName()), bus))
}
