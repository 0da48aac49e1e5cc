// Package removal maps an environment's removal policy
// (config.Environment.RemovalPolicy) onto one kind of resource, so every
// construct applies the same rule: the project's one place for it.
//
// CloudFormation accepts SNAPSHOT only on resources that can be snapshotted
// (RDS clusters and instances, node-based ElastiCache, EBS volumes, Neptune,
// Redshift).
// The staging environment retains its data as snapshots, so for every other
// kind (queues, topics, tables, keys, secrets, log groups) SNAPSHOT means
// RETAIN: the data is kept, as the environment asked. An empty policy is the
// safe default, RETAIN.
package removal

import "github.com/aws/aws-cdk-go/awscdk/v2"

// Kind is a kind of resource as far as removal is concerned.
type Kind int

const (
	// Data is any stateful resource without snapshots: queues, topics,
	// DynamoDB tables, KMS keys, secrets, log groups.
	Data Kind = iota
	// Snapshottable is a resource CloudFormation can snapshot on deletion:
	// Aurora clusters, node-based ElastiCache clusters (not serverless
	// caches).
	Snapshottable
)

// For returns the removal policy of a resource of kind k in an environment
// whose policy is p.
func For(p awscdk.RemovalPolicy, k Kind) awscdk.RemovalPolicy {
	switch {
	case p == "":
		return awscdk.RemovalPolicy_RETAIN
	case p == awscdk.RemovalPolicy_SNAPSHOT && k != Snapshottable:
		return awscdk.RemovalPolicy_RETAIN
	default:
		return p
	}
}
