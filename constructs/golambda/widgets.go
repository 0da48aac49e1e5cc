package golambda

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"

	"github.com/mercadofresco/integration/constructs/dashboard"
)

// AccountConcurrency is the account's default concurrency quota in a
// region: the ceiling of a function without reserved concurrency.
const AccountConcurrency = 1000

// contribute adds the function's widget to board's Functions section:
// errors and throttles (sums) on the left, the maximum concurrency on the
// right against its ceiling (the reserved concurrency, else the account's
// quota).
func (f *Function) contribute(board *dashboard.Board, name *string, reserved *float64) {
	if board == nil {
		return
	}
	dims := map[string]*string{"FunctionName": dashboard.Literal(name, f.Function.FunctionName())}
	m := func(metric, stat, label string) awscloudwatch.IMetric {
		return dashboard.Metric("AWS/Lambda", metric, dims, stat, label, nil)
	}
	ceiling := dashboard.Ceiling(fmt.Sprintf("account quota %d", AccountConcurrency), AccountConcurrency)
	if reserved != nil {
		ceiling = dashboard.Ceiling(fmt.Sprintf("reserved concurrency %v", *reserved), *reserved)
	}
	title := f.Entry
	if !dashboard.IsToken(name) {
		title = *name
	}
	board.Add(dashboard.Functions, dashboard.Graph(dashboard.GraphProps{
		Title:      title,
		Left:       []awscloudwatch.IMetric{m("Errors", "Sum", "errors"), m("Throttles", "Sum", "throttles")},
		Right:      []awscloudwatch.IMetric{m("ConcurrentExecutions", "Maximum", "concurrency")},
		RightLines: []*awscloudwatch.HorizontalAnnotation{ceiling},
	}))
}
