// Package idempotencytable is mercadofresco-idempotencia, the table that
// lambdas/idempotency records its claims, results and permanent failures
// in (a constructs/dynamotable table): partition key "clave", TTL on
// "expira_en" (the library writes now + 24 h, or the consumer's replay
// window). Consumers get exactly the four item operations the library
// makes (ConsumerTableActions) and the key's use through DynamoDB only,
// never Scan, Query or table administration. docs/design.md#consumer-tables.
package idempotencytable

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/mercadofresco/integration/constructs/dynamotable"
	"github.com/mercadofresco/integration/lambdas/idempotency/idempotencyapi"
)

// SpecTableName is the table's name in the SPEC; environments derive the
// physical name with config.Environment.PhysicalName(SpecTableName).
const SpecTableName = "mercadofresco-idempotencia"

// Props configures the table (dynamotable.Props).
type Props = dynamotable.Props

// Table is the idempotency table with its alarms.
type Table = dynamotable.Table

var schema = dynamotable.Schema{
	Kind:         "idempotencytable",
	PartitionKey: idempotencyapi.DefaultKeyAttribute,
	TTLAttribute: idempotencyapi.TTLAttribute,
	// The calls lambdas/idempotency makes: the read-back fallback, the
	// claim, the completion, the release.
	Operations: []awsdynamodb.Operation{
		awsdynamodb.Operation_GET_ITEM, awsdynamodb.Operation_PUT_ITEM,
		awsdynamodb.Operation_UPDATE_ITEM, awsdynamodb.Operation_DELETE_ITEM,
	},
	KeyActions:   ConsumerKeyActions(),
	EnvTableName: idempotencyapi.EnvTableName,
	ThrottleDescription: "The idempotency table throttled consumer requests: claims and completions are delayed and messages go back to their queues. " +
		"Check ThrottledRequests per operation and the account's on-demand table limits.",
	SystemErrorsDescription: "DynamoDB answered the idempotency table's consumers with server errors (5xx): consumers fail and retry. " +
		"Check the AWS Health Dashboard for DynamoDB in the region.",
}

// ConsumerTableActions returns the only table actions a consumer gets.
func ConsumerTableActions() []string { return schema.Actions() }

// ConsumerKeyActions returns the only key actions a consumer gets, through
// DynamoDB only: the CDK's Table.grantReadWriteData key set, spelled out
// (docs/design.md#consumer-tables).
func ConsumerKeyActions() []string {
	return []string{
		"kms:Decrypt", "kms:DescribeKey",
		"kms:Encrypt", "kms:ReEncryptFrom", "kms:ReEncryptTo", "kms:GenerateDataKey", "kms:GenerateDataKeyWithoutPlaintext",
	}
}

// New creates the table. Invalid props are synthesis errors.
func New(scope constructs.Construct, id string, props *Props) *Table {
	return dynamotable.New(scope, id, props, schema)
}
