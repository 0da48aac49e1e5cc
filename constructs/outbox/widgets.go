package outbox

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/observability"
)

// contribute adds the outbox's gauges to the Outbox section: pending and
// parked rows on the left, the age of the oldest pending row on the right
// against their alarms' thresholds.
func (p *Publisher) contribute(board *observability.Board) {
	board.Add(observability.Outbox, observability.Graph(observability.GraphProps{
		Title:      "Outbox " + p.environment + ": pending rows and the age of the oldest",
		Width:      24,
		Left:       []awscloudwatch.IMetric{p.MetricPending(&awscloudwatch.MetricOptions{Label: jsii.String("pending rows")}), p.MetricParked(&awscloudwatch.MetricOptions{Label: jsii.String("parked rows")})},
		Right:      []awscloudwatch.IMetric{p.MetricOldestPendingAge(&awscloudwatch.MetricOptions{Label: jsii.String("age of the oldest pending (s)")})},
		LeftLines:  []*awscloudwatch.HorizontalAnnotation{observability.Ceiling(fmt.Sprintf("pending alarm %d", PendingThreshold), PendingThreshold)},
		RightLines: []*awscloudwatch.HorizontalAnnotation{observability.Ceiling(fmt.Sprintf("age alarm %.0f s", OldestAgeThreshold.Seconds()), OldestAgeThreshold.Seconds())},
	}))
}

// contribute adds Aurora's connections to the Database section: the
// cluster's, and the proxy's against the most it may open
// (MaxDatabaseConnectionsAllowed, its MaxConnectionsPercent of
// max_connections); and the rotation-failure rule to the Bus section.
func (d *Database) contribute(board *observability.Board, clusterID, proxyName string) {
	if board == nil {
		return
	}
	rds := func(dim, value, name, label string) awscloudwatch.IMetric {
		return observability.Metric("AWS/RDS", name, map[string]*string{dim: jsii.String(value)}, "Maximum", label, nil)
	}
	board.Add(observability.Database, observability.Graph(observability.GraphProps{
		Title: "Aurora " + clusterID + ": connections against the maximum",
		Width: 24,
		Left: []awscloudwatch.IMetric{
			rds("DBClusterIdentifier", clusterID, "DatabaseConnections", "connections to the cluster"),
			rds("ProxyName", proxyName, "DatabaseConnections", "proxy connections to Aurora"),
			rds("ProxyName", proxyName, "MaxDatabaseConnectionsAllowed", "maximum the proxy may open"),
			rds("ProxyName", proxyName, "DatabaseConnectionsCurrentlyBorrowed", "borrowed by clients"),
		},
	}))
	if rule, ok := d.Node().TryFindChild(jsii.String("RotacionFallidaRegla")).(awsevents.Rule); ok {
		board.Add(observability.Bus, observability.Rule("Secrets Manager RotationFailed of "+clusterID, rule.RuleName(), nil))
	}
	// The holding queue of RotationFailed events redrives to its DLQ after
	// RotationFailuresMaxReceives looks: its depth and the age of its oldest.
	if d.RotationFailures != nil {
		board.Add(observability.Queues, observability.Queue("RotationFailed events of "+clusterID, d.RotationFailures.Queue.QueueName()))
	}
}
