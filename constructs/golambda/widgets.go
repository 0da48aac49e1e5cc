package golambda

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"

	"github.com/mercadofresco/integration/constructs/observability"
)

// AccountConcurrency is the account's default concurrency quota in a
// region: the ceiling of a function without reserved concurrency.
const AccountConcurrency = 1000

// contribute adds the function's widget to board's Functions section:
// errors and throttles (sums) on the left, the maximum concurrency on the
// right against its ceiling (the reserved concurrency, else the account's
// quota).
func (f *Function) contribute(board *observability.Board, name *string, reserved *float64) {
	if board == nil {
		return
	}
	dims := map[string]*string{"FunctionName": observability.Literal(name, f.Function.FunctionName())}
	m := func(metric, stat, label string) awscloudwatch.IMetric {
		return observability.Metric("AWS/Lambda", metric, dims, stat, label, nil)
	}
	ceiling := observability.Ceiling(fmt.Sprintf("account quota %d", AccountConcurrency), AccountConcurrency)
	if reserved != nil {
		ceiling = observability.Ceiling(fmt.Sprintf("reserved concurrency %v", *reserved), *reserved)
	}
	title := f.Entry
	if !observability.IsToken(name) {
		title = *name
	}
	board.Add(observability.Functions, observability.Graph(observability.GraphProps{
		Title:      title,
		Left:       []awscloudwatch.IMetric{m("Errors", "Sum", "errors"), m("Throttles", "Sum", "throttles")},
		Right:      []awscloudwatch.IMetric{m("ConcurrentExecutions", "Maximum", "concurrency")},
		RightLines: []*awscloudwatch.HorizontalAnnotation{ceiling},
	}))
}
