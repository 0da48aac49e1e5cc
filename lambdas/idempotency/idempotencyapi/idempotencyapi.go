// Package idempotencyapi names what the idempotency table
// (constructs/dynamotable.NewIdempotency) and the library that writes its records
// (lambdas/idempotency) share, with no dependency beyond the standard
// library, so the table and the library cannot disagree.
package idempotencyapi

const (
	// DefaultKeyAttribute is the partition key attribute name of the table.
	DefaultKeyAttribute = "clave"
	// TTLAttribute is the table's TimeToLiveSpecification attribute.
	TTLAttribute = "expira_en"
	// EnvTableName is the environment variable through which the CDK
	// construct hands the table name to a consumer Lambda.
	EnvTableName = "IDEMPOTENCY_TABLE_NAME"
)
