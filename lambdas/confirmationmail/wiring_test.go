package confirmationmail_test

import (
	"github.com/mercadofresco/integration/internal/lambdatest"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/confirmationmail"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"net/http"
	"testing"
)

// The deployed confirmation e-mail consumer, built as its main builds it
// (sqsconsumer.Start with confirmationmail.FromRuntime,
// lambdas/correo-confirmacion) from mf-correo-confirmacion's environment in
// the prod template; only CORREO_SECUNDARIO_URL (the secondary provider) and
// the breaker cache's address are pointed at local servers. A confirmed
// order's e-mail reaches SES v2 from CORREO_REMITENTE with the template's
// configuration set, after a claim on the idempotency table and the write of
// its send record there; once SES throttles, the next order's e-mail reaches
// the secondary provider as a POST of /v1/correos with its Idempotency-Key
// and the API key of CORREO_SECUNDARIO_SECRET_ARN; a poison message reaches
// the DLQ of DLQ_URLS through SQS. Replacing the SES, secondary provider's,
// DynamoDB's, the cache's or SQS's client with one that does nothing fails
// it.
func TestDeployedConfirmationMailReachesSESAndSecondary(t *testing.T) {
	secundario := lambdatest.NewDependency(t, func(localaws.ServiceRequest) localaws.ServiceResponse {
		return localaws.JSON(http.StatusAccepted, `{"id":"correo-2"}`)
	})
	c := lambdatest.StartConsumer(t, "MercadoFresco-Messaging-prod", "mf-correo-confirmacion", confirmationmail.FromRuntime,
		map[string]*lambdatest.Dependency{"CORREO_SECUNDARIO_URL": secundario})
	const queue, ses = "cola-mercadofresco-correo-confirmacion", "POST /v2/email/outbound-emails"
	c.Process(t, queue, lambdatest.PedidoConfirmado("P-81"), "no es JSON")
	c.AWS.Fail(ses, http.StatusTooManyRequests, "TooManyRequestsException")
	c.Process(t, queue, lambdatest.PedidoConfirmado("P-82"))

	localaws.WantRequest(t, c.AWS, ses, `"FromEmailAddress":"`+c.Env["CORREO_REMITENTE"]+`"`,
		`"ConfigurationSetName":"`+c.Env["SES_CONFIGURATION_SET"]+`"`, "ana@example.com", "P-81")
	secundario.WantPost(t, confirmationmail.PathCorreos, "P-82", c.AWS.Secret(c.Env["CORREO_SECUNDARIO_SECRET_ARN"]))
	c.WantClaim(t, idempotency.KeyCorreoConfirmacion, "P-81")
	localaws.WantRequest(t, c.AWS, "DynamoDB_20120810.PutItem", `{"S":"correo-confirmacion:P-81:envio"}`) // the send record
	c.WantDeadLetter(t, "no es JSON")
	c.Cache.WantReached(t)
}
