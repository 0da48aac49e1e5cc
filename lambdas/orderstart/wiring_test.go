package orderstart_test

import (
	"context"
	"encoding/json"
	"github.com/mercadofresco/integration/internal/lambdatest"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/orderstart"
	"github.com/mercadofresco/integration/lambdas/signing"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// The deployed starter, built as its main builds it (orderstart.Function,
// lambdas/iniciar-pedido) from mf-iniciar-pedido's environment in the prod
// template: a PedidoCreado on its queue reaches Step Functions as a
// StartExecution of the template's state machine, named after the order,
// once its signature verifies with the key of SIGNING_SECRET_ARN read from
// Secrets Manager, and a poison message reaches the DLQ of DLQ_URLS through
// SQS. Replacing the Step Functions or SQS client with one that does
// nothing fails it.
func TestDeployedStarterReachesStepFunctions(t *testing.T) {
	env := lambdatest.DeployedEnv(t, "MercadoFresco-OrderFlow-prod", "mf-iniciar-pedido")
	aws := localaws.NewEndpoint(t, nil)
	lambdatest.Setenv(t, env, aws.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	handle, err := orderstart.Function(ctx, lambdaenv.New(os.Getenv), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	created := time.Now().UTC().Add(-time.Second).Format(time.RFC3339)
	pedido := eventsapi.PedidoCreado{
		IDEvento: "out-P-77", CreadoEn: created, Version: 1, PedidoID: "P-77", ClienteID: "C-1",
		Cliente: eventsapi.Cliente{ID: "C-1", Email: "c@example.com"}, TotalCentimos: 4820, Moneda: "EUR", TokenTarjeta: "tok",
		Lineas: []eventsapi.Linea{{SKU: "S", Cantidad: 1, PrecioCentimos: 4820}},
	}
	pedido.Firma = sign(signing.Key{ID: localaws.SecretVersion, Secret: []byte(aws.Secret(env["SIGNING_SECRET_ARN"]))}, pedido)
	detail, _ := json.Marshal(pedido)
	body, _ := json.Marshal(map[string]any{
		"version": "0", "id": "ev-77", "detail-type": eventsapi.TypePedidoCreado, "source": "mercadofresco.tienda",
		"account": localaws.Account, "time": created, "region": localaws.Region, "resources": []string{}, "detail": json.RawMessage(detail),
	})
	resp, err := handle(ctx, lambdatest.SQSEvent("cola-mercadofresco-inicio-pedido", string(body), "no es JSON"))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("handler: %v, failures %+v", err, resp.BatchItemFailures)
	}
	starts := aws.Requests("AWSStepFunctions.StartExecution")
	if len(starts) != 1 {
		t.Fatalf("requests at the endpoint %v, want one StartExecution", aws.Targets())
	}
	var in struct{ StateMachineArn, Name, Input string }
	starts[0].JSON(t, &in)
	if in.StateMachineArn != env["STATE_MACHINE_ARN"] || !strings.Contains(in.Name, "P-77") || !strings.Contains(in.Input, `"pedido_id":"P-77"`) {
		t.Fatalf("StartExecution %+v, want the template's state machine %s, a name and input of P-77", in, env["STATE_MACHINE_ARN"])
	}
	localaws.WantDeadLetter(t, aws, env["DLQ_URLS"], "no es JSON")
}
