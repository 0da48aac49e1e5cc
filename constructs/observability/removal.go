package observability

import "github.com/aws/aws-cdk-go/awscdk/v2"

// RemovalKind is a kind of resource as far as removal is concerned.
type RemovalKind int

const (
	// Data is any stateful resource without snapshots: queues, topics,
	// DynamoDB tables, KMS keys, secrets, log groups.
	Data RemovalKind = iota
	// Snapshottable is a resource CloudFormation can snapshot on deletion:
	// Aurora clusters, node-based ElastiCache clusters (not serverless
	// caches).
	Snapshottable
)

// RemovalFor returns the removal policy of a resource of kind k in an environment
// whose policy is p.
//
// CloudFormation accepts SNAPSHOT only on resources that can be snapshotted
// (RDS clusters and instances, node-based ElastiCache, EBS volumes): for
// every other kind (queues, topics, tables, keys, secrets, log groups)
// SNAPSHOT means RETAIN, the data is kept, as the environment asked. An
// empty policy is the safe default, RETAIN.
func RemovalFor(p awscdk.RemovalPolicy, k RemovalKind) awscdk.RemovalPolicy {
	switch {
	case p == "":
		return awscdk.RemovalPolicy_RETAIN
	case p == awscdk.RemovalPolicy_SNAPSHOT && k != Snapshottable:
		return awscdk.RemovalPolicy_RETAIN
	default:
		return p
	}
}
