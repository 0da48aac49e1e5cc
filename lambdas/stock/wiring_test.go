package stock_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/mercadofresco/integration/internal/wiringtest"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
	"github.com/mercadofresco/integration/lambdas/stock"
)

// The deployed stock consumer, built as its main builds it
// (sqsconsumer.Start with stock.FromRuntime, lambdas/movimientos-stock)
// from mf-movimientos-stock's environment in the prod template, nothing
// overridden: an adjustment reaches the template's stock table as the
// conditional update of the SKU's totals and the write of its line, and a
// poison message reaches the FIFO DLQ of DLQ_URLS through SQS. Replacing
// the DynamoDB or SQS client with one that does nothing fails it.
func TestDeployedStockReachesTable(t *testing.T) {
	env := wiringtest.DeployedEnv(t, "MercadoFresco-Messaging-prod", "mf-movimientos-stock")
	aws := wiringtest.NewEndpoint(t)
	wiringtest.Setenv(t, env, aws.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := sqsconsumer.Start(ctx, "movimientos-stock", lambdaenv.New(os.Getenv), stock.FromRuntime)
	if err != nil {
		t.Fatal(err)
	}
	ajuste := `{"version":1,"tipo":"ajuste","referencia":"INV-9","sku":"SKU-W","cantidad":5,"secuencia":1,"emitido_en":"2026-11-27T18:00:00Z"}`
	resp, err := p.Process(ctx, wiringtest.SQSEvent("mercadofresco-movimientos-stock.fifo", ajuste, "no es JSON"))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("batch: %v, failures %+v", err, resp.BatchItemFailures)
	}
	table := `"TableName":"` + env["STOCK_TABLE_NAME"] + `"`
	wiringtest.WantRequest(t, aws, "DynamoDB_20120810.UpdateItem", table, "SKU-W")
	wiringtest.WantRequest(t, aws, "DynamoDB_20120810.PutItem", table, "SKU-W", "INV-9")
	wiringtest.WantDeadLetter(t, aws, env["DLQ_URLS"], "no es JSON")
}
