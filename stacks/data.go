package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/datastore"
)

// DataStack holds the stateful stores of the consumers (the idempotency
// table mercadofresco-idempotencia and the stock table mercadofresco-stock).
type DataStack struct {
	awscdk.Stack
	// Stock is mercadofresco-stock, kept by the stock-movements consumer
	// (Stock.BindTo(fn): grant + STOCK_TABLE_NAME).
	Stock *datastore.Table
	// Table is the idempotency table. A consumer Lambda gets access with
	// data.Table.BindTo(fn.Function) (grant + IDEMPOTENCY_TABLE_NAME), or
	// data.Table.GrantConsumer(grantee) for the grant alone.
	Table *datastore.Table
}

// NewDataStack creates the data stack of shared.Env. The environment
// decides protection and removal: prod protects and retains its records (a
// lost idempotency record is a possible double charge; the stock is the
// shop's truth of what it can sell), dev throws them away.
func NewDataStack(scope constructs.Construct, shared *Shared) *DataStack {
	stack := newStack(scope, shared.Env, "Data", "idempotency and stock tables")
	table := datastore.NewIdempotency(stack, "Idempotencia", &datastore.TableProps{
		Context:   shared.Context,
		TableName: jsii.String(shared.Env.PhysicalName(datastore.IdempotencyTableName)),
	})
	stock := datastore.NewStock(stack, "Stock", &datastore.TableProps{
		Context:   shared.Context,
		TableName: jsii.String(shared.Env.PhysicalName(datastore.StockTableName)),
	})
	output(stack, "IdempotencyTableName", "Idempotency table (lambdas/idempotency reads it from IDEMPOTENCY_TABLE_NAME)", table.Table.TableName())
	output(stack, "StockTableName", "Stock table (lambdas/stock reads it from STOCK_TABLE_NAME)", stock.Table.TableName())
	return &DataStack{Stack: stack, Table: table, Stock: stock}
}
