package stock_test

import (
	"github.com/mercadofresco/integration/internal/lambdatest"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/stock"
	"testing"
)

// The deployed stock consumer, built as its main builds it
// (sqsconsumer.Start with stock.FromRuntime, lambdas/movimientos-stock)
// from mf-movimientos-stock's environment in the prod template, nothing
// overridden: an adjustment reaches the template's stock table as the
// conditional update of the SKU's totals and the write of its line, and a
// poison message reaches the FIFO DLQ of DLQ_URLS through SQS. Replacing
// the DynamoDB or SQS client with one that does nothing fails it.
func TestDeployedStockReachesTable(t *testing.T) {
	c := lambdatest.StartConsumer(t, "MercadoFresco-Messaging-prod", "mf-movimientos-stock", stock.FromRuntime, nil)
	ajuste := `{"version":1,"tipo":"ajuste","referencia":"INV-9","sku":"SKU-W","cantidad":5,"secuencia":1,"emitido_en":"2026-11-27T18:00:00Z"}`
	c.Process(t, "mercadofresco-movimientos-stock.fifo", ajuste, "no es JSON")

	table := `"TableName":"` + c.Env["STOCK_TABLE_NAME"] + `"`
	localaws.WantRequest(t, c.AWS, "DynamoDB_20120810.UpdateItem", table, "SKU-W")
	localaws.WantRequest(t, c.AWS, "DynamoDB_20120810.PutItem", table, "SKU-W", "INV-9")
	c.WantDeadLetter(t, "no es JSON")
}
