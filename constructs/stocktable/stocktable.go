// Package stocktable is mercadofresco-stock, the table the stock-movements
// consumer (lambdas/stock) keeps (a constructs/dynamotable table): per SKU
// a totals item and one item per order line or adjustment that moved it,
// partition key "sku" and sort key "elemento" (consumerapi). Consumers get
// exactly the three item operations lambdas/stock makes (GrantConsumer)
// and the key's use through DynamoDB only. docs/design.md#stock.
package stocktable

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/mercadofresco/integration/constructs/dynamotable"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer/consumerapi"
)

// SpecTableName is the table's name (environments add their suffix).
const SpecTableName = "mercadofresco-stock"

// Props configures the table (dynamotable.Props).
type Props = dynamotable.Props

// Table is the stock table with its alarms.
type Table = dynamotable.Table

var schema = dynamotable.Schema{
	Kind:         "stocktable",
	PartitionKey: consumerapi.StockPartitionKey,
	SortKey:      consumerapi.StockSortKey,
	// A consistent read of a line or the totals, the line's conditional
	// put, the totals' conditional updates.
	Operations:              []awsdynamodb.Operation{awsdynamodb.Operation_GET_ITEM, awsdynamodb.Operation_PUT_ITEM, awsdynamodb.Operation_UPDATE_ITEM},
	KeyActions:              []string{"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"},
	EnvTableName:            consumerapi.EnvStockTable,
	ThrottleDescription:     "The stock table throttled the stock-movements consumer: its SKU groups wait in the FIFO queue. Check ThrottledRequests per operation and the account's on-demand limits.",
	SystemErrorsDescription: "DynamoDB answered the stock-movements consumer with server errors (5xx): movements are retried and their SKU groups wait. Check the AWS Health Dashboard for DynamoDB.",
}

// New creates the table. Invalid props are synthesis errors.
func New(scope constructs.Construct, id string, props *Props) *Table {
	return dynamotable.New(scope, id, props, schema)
}
