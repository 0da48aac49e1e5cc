package observability

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
)

// Rule is the Bus section's widget of an EventBridge rule: its
// invocations, and its failed and dead-lettered deliveries (sums over 5
// minutes). bus is the rule's bus name, nil for the default bus (whose
// metrics have no EventBusName dimension).
func Rule(title string, rule, bus *string) awscloudwatch.IWidget {
	dims := map[string]*string{"RuleName": rule}
	if bus != nil {
		dims["EventBusName"] = bus
	}
	m := func(name, label string) awscloudwatch.IMetric {
		return Metric("AWS/Events", name, dims, "Sum", label, nil)
	}
	return Graph(GraphProps{
		Title: title,
		Left:  []awscloudwatch.IMetric{m("Invocations", "invocations")},
		Right: []awscloudwatch.IMetric{m("FailedInvocations", "failed"), m("InvocationsSentToDlq", "dead-lettered")},
	})
}
