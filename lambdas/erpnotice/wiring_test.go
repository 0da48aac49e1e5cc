package erpnotice_test

import (
	"github.com/mercadofresco/integration/internal/lambdatest"
	"github.com/mercadofresco/integration/lambdas/erpnotice"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"net/http"
	"testing"
)

// The deployed ERP notice consumer, built as its main builds it
// (sqsconsumer.Start with erpnotice.FromRuntime, lambdas/aviso-erp) from
// mf-aviso-erp's environment in the prod template; only ERP_URL (the ERP)
// and the breaker cache's address are pointed at local servers. A
// confirmed order reaches the ERP as one POST of /v1/avisos-pedido with its
// Idempotency-Key and the API key of ERP_SECRET_ARN, after a claim on the
// template's idempotency table and a look at its breaker in the cache; a
// poison message reaches the DLQ of DLQ_URLS through SQS. Replacing the
// ERP's, DynamoDB's, the cache's or SQS's client with one that does nothing
// fails it.
func TestDeployedERPNoticeReachesERP(t *testing.T) {
	erp := lambdatest.NewDependency(t, http.StatusCreated, `{"id":"reg-1"}`)
	c := lambdatest.StartConsumer(t, "MercadoFresco-Messaging-prod", "mf-aviso-erp", erpnotice.FromRuntime,
		map[string]*lambdatest.Dependency{"ERP_URL": erp})
	c.Process(t, "cola-mercadofresco-aviso-erp", lambdatest.PedidoConfirmado("P-72"), "no es JSON")

	erp.WantPost(t, erpnotice.PathAvisos, "P-72", c.AWS.Secret(c.Env["ERP_SECRET_ARN"]))
	c.WantClaim(t, idempotency.KeyAvisoERP, "P-72")
	c.WantDeadLetter(t, "no es JSON")
	c.Cache.WantReached(t)
}
