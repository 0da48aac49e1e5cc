package preparation_test

import (
	"github.com/mercadofresco/integration/internal/lambdatest"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/preparation"
	"net/http"
	"testing"
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
	almacen := lambdatest.NewDependency(t, http.StatusCreated, `{"id":"prep-1","estado":"recibida"}`)
	c := lambdatest.StartConsumer(t, "MercadoFresco-Messaging-prod", "mf-preparar-pedido", preparation.FromRuntime,
		map[string]*lambdatest.Dependency{"ALMACEN_URL": almacen})
	c.Process(t, "cola-mercadofresco-pedidos", lambdatest.PedidoConfirmado("P-71"), "no es JSON")

	almacen.WantPost(t, preparation.PathPreparaciones, "P-71", c.AWS.Secret(c.Env["ALMACEN_SECRET_ARN"]))
	c.WantClaim(t, idempotency.KeyPreparacion, "P-71")
	c.WantDeadLetter(t, "no es JSON")
	c.Cache.WantReached(t)
}
