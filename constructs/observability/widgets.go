package observability

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
)

// Queue is a queue's widget: the depth of the queue named name and the age
// of its oldest message (maxima over 5 minutes), with lines on the age axis.
func Queue(title string, name *string, lines ...*awscloudwatch.HorizontalAnnotation) awscloudwatch.IWidget {
	m := func(metric, label string) awscloudwatch.IMetric {
		return Metric("AWS/SQS", metric, map[string]*string{"QueueName": name}, "Maximum", label, nil)
	}
	return Graph(GraphProps{
		Title:      title,
		Left:       []awscloudwatch.IMetric{m("ApproximateNumberOfMessagesVisible", "depth")},
		Right:      []awscloudwatch.IMetric{m("ApproximateAgeOfOldestMessage", "age of the oldest (s)")},
		RightLines: lines,
	})
}

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
