package orderstart_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/mercadofresco/integration/internal/lambdatest"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/internal/testseed"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/orderstart"
	"github.com/mercadofresco/integration/lambdas/signing"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
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
	body := signedEvent(t, signing.Key{ID: localaws.SecretVersion, Secret: []byte(aws.Secret(env["SIGNING_SECRET_ARN"]))}, "P-77")
	resp, err := handle(ctx, lambdatest.SQSEvent("cola-mercadofresco-inicio-pedido", body, "no es JSON"))
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

// The deployed starter returns failed starts jittered: 20 orders whose
// StartExecution is throttled come back (ChangeMessageVisibility on the
// buffer) spread over [d/2, d] of the template's VISIBILITY_TIMEOUT, not
// all together after it.
func TestDeployedStarterReturnsFailuresJittered(t *testing.T) {
	env := lambdatest.DeployedEnv(t, "MercadoFresco-OrderFlow-prod", "mf-iniciar-pedido")
	d, err := time.ParseDuration(env["VISIBILITY_TIMEOUT"])
	if err != nil || d == 0 {
		t.Fatalf("VISIBILITY_TIMEOUT %q: %v", env["VISIBILITY_TIMEOUT"], err)
	}
	aws := localaws.NewEndpoint(t, nil)
	lambdatest.Setenv(t, env, aws.URL)
	aws.Fail("AWSStepFunctions.StartExecution", 400, "ThrottlingException")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rnd := testseed.New(t)
	p, err := sqsconsumer.Start(ctx, "iniciar-pedido", lambdaenv.New(os.Getenv), func(ctx context.Context, rt *sqsconsumer.Runtime) (*sqsbatch.Processor, error) {
		rt.Settings.Rand = rnd
		return orderstart.FromRuntime(ctx, rt)
	})
	if err != nil {
		t.Fatal(err)
	}
	key := signing.Key{ID: localaws.SecretVersion, Secret: []byte(aws.Secret(env["SIGNING_SECRET_ARN"]))}
	url, _ := aws.Queues.CreateQueue("cola-mercadofresco-inicio-pedido", localaws.QueueConfig{VisibilityTimeout: d})
	for i := range 20 {
		body := signedEvent(t, key, fmt.Sprintf("P-%d", i))
		if _, err := aws.Queues.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body}); err != nil {
			t.Fatal(err)
		}
	}
	var ev events.SQSEvent
	for range 2 {
		part, err := aws.Queues.Receive(ctx, url, aws.Queues.ARN(url), 10)
		if err != nil {
			t.Fatal(err)
		}
		ev.Records = append(ev.Records, part.Records...)
	}
	received := time.Now()
	if resp, err := p.Process(ctx, ev); err != nil || len(resp.BatchItemFailures) != 20 {
		t.Fatalf("%v, %d failures: every throttled start must come back", err, len(resp.BatchItemFailures))
	}
	st, _ := aws.Queues.Inspect(url)
	back := map[time.Duration]bool{}
	for _, m := range st {
		in := m.VisibleAt.Sub(received)
		if in < d/2 || in > d+5*time.Second {
			t.Errorf("%s comes back after %s, want %s..%s", m.MessageID, in, d/2, d)
		}
		back[in.Truncate(time.Second)] = true
	}
	if len(back) < 8 {
		t.Errorf("20 starts come back at %d distinct times: not jittered", len(back))
	}
}

// signedEvent is a PedidoCreado of pedidoID created a second ago, signed
// with k, as the rule delivers it to the buffer.
func signedEvent(t *testing.T, k signing.Key, pedidoID string) string {
	t.Helper()
	created := time.Now().UTC().Add(-time.Second).Format(time.RFC3339)
	pedido := eventsapi.PedidoCreado{
		IDEvento: "out-" + pedidoID, CreadoEn: created, Version: 1, PedidoID: pedidoID, ClienteID: "C-1",
		Cliente: eventsapi.Cliente{ID: "C-1", Email: "c@example.com"}, TotalCentimos: 4820, Moneda: "EUR", TokenTarjeta: "tok",
		Lineas: []eventsapi.Linea{{SKU: "S", Cantidad: 1, PrecioCentimos: 4820}},
	}
	pedido.Firma = sign(k, pedido)
	detail, _ := json.Marshal(pedido)
	body, _ := json.Marshal(map[string]any{
		"version": "0", "id": "ev-" + pedidoID, "detail-type": eventsapi.TypePedidoCreado, "source": "mercadofresco.tienda",
		"account": localaws.Account, "time": created, "region": localaws.Region, "resources": []string{}, "detail": json.RawMessage(detail),
	})
	return string(body)
}
