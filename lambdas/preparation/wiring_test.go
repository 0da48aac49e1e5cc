package preparation_test

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/mercadofresco/integration/internal/wiringtest"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/preparation"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
)

// The deployed preparation consumer, built as its main builds it
// (sqsconsumer.Start with preparation.FromRuntime, lambdas/preparar-pedido)
// from mf-preparar-pedido's environment in the prod template; only
// ALMACEN_URL (the warehouse) and the breaker cache's address are pointed
// at local servers. A confirmed order reaches the warehouse as one POST of
// /v1/preparaciones with its Idempotency-Key and the API key of
// ALMACEN_SECRET_ARN, after a claim on the template's idempotency table and
// a look at its breaker in the cache; a poison message reaches the DLQ of
// DLQ_URLS through SQS. Replacing the warehouse's, DynamoDB's, the cache's
// or SQS's client with one that does nothing fails it.
func TestDeployedPreparationReachesWarehouse(t *testing.T) {
	env := wiringtest.DeployedEnv(t, "MercadoFresco-Messaging-prod", "mf-preparar-pedido")
	aws := wiringtest.NewEndpoint(t)
	almacen := wiringtest.NewDependency(t, http.StatusCreated, `{"id":"prep-1","estado":"recibida"}`)
	env["ALMACEN_URL"] = almacen.URL()
	cache := wiringtest.NewBreakerCache(t, env)
	wiringtest.Setenv(t, env, aws.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := sqsconsumer.Start(ctx, "preparar-pedido", lambdaenv.New(os.Getenv), preparation.FromRuntime)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Process(ctx, wiringtest.SQSEvent("cola-mercadofresco-pedidos", wiringtest.PedidoConfirmado("P-71"), "no es JSON"))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("batch: %v, failures %+v", err, resp.BatchItemFailures)
	}

	almacen.WantPost(t, preparation.PathPreparaciones, "P-71", aws.Secret(env["ALMACEN_SECRET_ARN"]))
	wiringtest.WantRequest(t, aws, "DynamoDB_20120810.PutItem", `"TableName":"`+env["IDEMPOTENCY_TABLE_NAME"]+`"`, "P-71")
	wiringtest.WantDeadLetter(t, aws, env["DLQ_URLS"], "no es JSON")
	if n := cache.ScriptCalls(t); n == 0 {
		t.Fatal("the breaker never reached the cache")
	}
}
