package datastore

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// The tables' names in the SPEC; environments derive the physical names
// with config.Environment.PhysicalName.
const (
	IdempotencyTableName = "mercadofresco-idempotencia"
	StockTableName       = "mercadofresco-stock"
)

// idempotency is mercadofresco-idempotencia, the table lambdas/idempotency
// records its claims, results and permanent failures in: partition key
// "clave", TTL on "expira_en" (the library writes now + 24 h, or the
// consumer's replay window). docs/design.md#consumer-tables.
var idempotency = Schema{
	Kind:         "datastore.NewIdempotency",
	PartitionKey: lambdaapi.IdempotencyKeyAttribute,
	TTLAttribute: lambdaapi.IdempotencyTTLAttribute,
	// The calls lambdas/idempotency makes: the read-back fallback, the
	// claim, the completion, the release.
	Operations: []awsdynamodb.Operation{
		awsdynamodb.Operation_GET_ITEM, awsdynamodb.Operation_PUT_ITEM,
		awsdynamodb.Operation_UPDATE_ITEM, awsdynamodb.Operation_DELETE_ITEM,
	},
	KeyActions:   IdempotencyKeyActions(),
	EnvTableName: lambdaapi.EnvIdempotencyTable,
	ThrottleDescription: "The idempotency table throttled consumer requests: claims and completions are delayed and messages go back to their queues. " +
		"Check ThrottledRequests per operation and the account's on-demand table limits.",
	SystemErrorsDescription: "DynamoDB answered the idempotency table's consumers with server errors (5xx): consumers fail and retry. " +
		"Check the AWS Health Dashboard for DynamoDB in the region.",
}

// stock is mercadofresco-stock, the table the stock-movements consumer
// (lambdas/stock) keeps: per SKU a totals item and one item per order line
// or adjustment that moved it, partition key "sku" and sort key "elemento"
// (lambdaapi). docs/design.md#stock-movements.
var stock = Schema{
	Kind:         "datastore.NewStock",
	PartitionKey: lambdaapi.StockPartitionKey,
	SortKey:      lambdaapi.StockSortKey,
	// A consistent read of a line or the totals, the line's conditional
	// put, the totals' conditional updates.
	Operations:              []awsdynamodb.Operation{awsdynamodb.Operation_GET_ITEM, awsdynamodb.Operation_PUT_ITEM, awsdynamodb.Operation_UPDATE_ITEM},
	KeyActions:              []string{"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"},
	EnvTableName:            lambdaapi.EnvStockTable,
	ThrottleDescription:     "The stock table throttled the stock-movements consumer: its SKU groups wait in the FIFO queue. Check ThrottledRequests per operation and the account's on-demand limits.",
	SystemErrorsDescription: "DynamoDB answered the stock-movements consumer with server errors (5xx): movements are retried and their SKU groups wait. Check the AWS Health Dashboard for DynamoDB.",
}

// NewIdempotency creates the idempotency table. Consumers get exactly the
// four item operations the library makes, never
// Scan, Query or table administration. Invalid props are synthesis errors.
func NewIdempotency(scope constructs.Construct, id string, props *TableProps) *Table {
	return NewTable(scope, id, props, idempotency)
}

// NewStock creates the stock table. Consumers get exactly the three item
// operations lambdas/stock makes. Invalid props are synthesis errors.
func NewStock(scope constructs.Construct, id string, props *TableProps) *Table {
	return NewTable(scope, id, props, stock)
}

// IdempotencyKeyActions returns the only key actions an idempotency
// consumer gets, through DynamoDB only: the CDK's
// Table.grantReadWriteData key set, spelled out
// (docs/design.md#consumer-tables).
func IdempotencyKeyActions() []string {
	return []string{
		"kms:Decrypt", "kms:DescribeKey",
		"kms:Encrypt", "kms:ReEncryptFrom", "kms:ReEncryptTo", "kms:GenerateDataKey", "kms:GenerateDataKeyWithoutPlaintext",
	}
}
