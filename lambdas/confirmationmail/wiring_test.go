package confirmationmail_test

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/mercadofresco/integration/internal/wiringtest"
	"github.com/mercadofresco/integration/lambdas/confirmationmail"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
)

// The deployed confirmation e-mail consumer, built as its main builds it
// (sqsconsumer.Start with confirmationmail.FromRuntime,
// lambdas/correo-confirmacion) from mf-correo-confirmacion's environment in
// the prod template; only CORREO_SECUNDARIO_URL (the secondary provider)
// and the breaker cache's address are pointed at local servers. A
// confirmed order's e-mail reaches SES v2 from CORREO_REMITENTE with the
// template's configuration set, after a claim on the idempotency table;
// once SES throttles, the next order's e-mail reaches the secondary
// provider as a POST of /v1/correos with its Idempotency-Key and the API
// key of CORREO_SECUNDARIO_SECRET_ARN; a poison message reaches the DLQ of
// DLQ_URLS through SQS. Replacing the SES, secondary provider's, DynamoDB's,
// the cache's or SQS's client with one that does nothing fails it.
func TestDeployedConfirmationMailReachesSESAndSecondary(t *testing.T) {
	env := wiringtest.DeployedEnv(t, "MercadoFresco-Messaging-prod", "mf-correo-confirmacion")
	aws := wiringtest.NewEndpoint(t)
	secundario := wiringtest.NewDependency(t, http.StatusAccepted, `{"id":"correo-2"}`)
	env["CORREO_SECUNDARIO_URL"] = secundario.URL()
	cache := wiringtest.NewBreakerCache(t, env)
	wiringtest.Setenv(t, env, aws.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := sqsconsumer.Start(ctx, "correo-confirmacion", lambdaenv.New(os.Getenv), confirmationmail.FromRuntime)
	if err != nil {
		t.Fatal(err)
	}
	const queue, ses = "cola-mercadofresco-correo-confirmacion", "POST /v2/email/outbound-emails"
	for _, batch := range [][]string{
		{wiringtest.PedidoConfirmado("P-81"), "no es JSON"},
		{wiringtest.PedidoConfirmado("P-82")}, // SES throttles from here on
	} {
		resp, err := p.Process(ctx, wiringtest.SQSEvent(queue, batch...))
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("batch: %v, failures %+v", err, resp.BatchItemFailures)
		}
		aws.Fail(ses, http.StatusTooManyRequests, "TooManyRequestsException")
	}

	wiringtest.WantRequest(t, aws, ses, `"FromEmailAddress":"`+env["CORREO_REMITENTE"]+`"`,
		`"ConfigurationSetName":"`+env["SES_CONFIGURATION_SET"]+`"`, "ana@example.com", "P-81")
	secundario.WantPost(t, confirmationmail.PathCorreos, "P-82", aws.Secret(env["CORREO_SECUNDARIO_SECRET_ARN"]))
	wiringtest.WantRequest(t, aws, "DynamoDB_20120810.PutItem", `"TableName":"`+env["IDEMPOTENCY_TABLE_NAME"]+`"`, "P-81")
	wiringtest.WantDeadLetter(t, aws, env["DLQ_URLS"], "no es JSON")
	if n := cache.ScriptCalls(t); n == 0 {
		t.Fatal("the breakers never reached the cache")
	}
}
