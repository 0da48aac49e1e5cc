package erpnotice_test

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/mercadofresco/integration/internal/wiringtest"
	"github.com/mercadofresco/integration/lambdas/erpnotice"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
)

// The deployed ERP notice consumer, built as its main builds it
// (sqsconsumer.Start with erpnotice.FromRuntime, lambdas/aviso-erp) from
// mf-aviso-erp's environment in the prod template; only ERP_URL (the ERP) and
// the breaker cache's address are pointed at local servers. A confirmed
// order reaches the ERP as one POST of /v1/avisos-pedido with its
// Idempotency-Key and the API key of ERP_SECRET_ARN, after a claim on the
// template's idempotency table and a look at its breaker in the cache; a
// poison message reaches the DLQ of DLQ_URLS through SQS. Replacing the
// ERP's, DynamoDB's, the cache's or SQS's client with one that does nothing
// fails it.
func TestDeployedERPNoticeReachesERP(t *testing.T) {
	env := wiringtest.DeployedEnv(t, "MercadoFresco-Messaging-prod", "mf-aviso-erp")
	aws := wiringtest.NewEndpoint(t)
	erp := wiringtest.NewDependency(t, http.StatusCreated, `{"id":"reg-1"}`)
	env["ERP_URL"] = erp.URL()
	cache := wiringtest.NewBreakerCache(t, env)
	wiringtest.Setenv(t, env, aws.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := sqsconsumer.Start(ctx, "aviso-erp", lambdaenv.New(os.Getenv), erpnotice.FromRuntime)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Process(ctx, wiringtest.SQSEvent("cola-mercadofresco-aviso-erp", wiringtest.PedidoConfirmado("P-72"), "no es JSON"))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("batch: %v, failures %+v", err, resp.BatchItemFailures)
	}

	erp.WantPost(t, erpnotice.PathAvisos, "P-72", aws.Secret(env["ERP_SECRET_ARN"]))
	wiringtest.WantRequest(t, aws, "DynamoDB_20120810.PutItem", `"TableName":"`+env["IDEMPOTENCY_TABLE_NAME"]+`"`, "P-72")
	wiringtest.WantDeadLetter(t, aws, env["DLQ_URLS"], "no es JSON")
	if n := cache.ScriptCalls(t); n == 0 {
		t.Fatal("the breaker never reached the cache")
	}
}
