package orderstart_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/orderstart"
	"github.com/mercadofresco/integration/lambdas/signing"
)

// deployedEnv is the environment of function name in the committed
// snapshot of stack (test/testdata/snapshots), with every reference
// rendered as the value CloudFormation would give it (a state machine's
// ARN, a queue's URL, from their names).
func deployedEnv(t *testing.T, stack, name string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "test", "testdata", "snapshots", stack+".template.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Properties map[string]any
		}
	}
	if err := json.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	const account, region = "333333333333", "eu-west-1"
	var render func(v any) string
	render = func(v any) string {
		switch x := v.(type) {
		case string:
			return x
		case map[string]any:
			if j, ok := x["Fn::Join"].([]any); ok {
				parts, _ := j[1].([]any)
				var out []string
				for _, p := range parts {
					out = append(out, render(p))
				}
				return strings.Join(out, j[0].(string))
			}
			if id, ok := x["Ref"].(string); ok {
				r := tpl.Resources[id]
				switch r.Type {
				case "AWS::StepFunctions::StateMachine":
					return fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%v", region, account, r.Properties["StateMachineName"])
				case "AWS::SQS::Queue":
					return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%v", region, account, r.Properties["QueueName"])
				case "AWS::SecretsManager::Secret":
					return fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:%v-AbC123", region, account, r.Properties["Name"])
				}
				t.Fatalf("cannot render a Ref to %s (%s)", id, r.Type)
			}
		}
		t.Fatalf("cannot render %v", v)
		return ""
	}
	for _, r := range tpl.Resources {
		if r.Type != "AWS::Lambda::Function" || r.Properties["FunctionName"] != name {
			continue
		}
		vars, _ := r.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
		out := map[string]string{}
		for k, v := range vars {
			out[k] = render(v)
		}
		return out
	}
	t.Fatalf("no function %s in %s", name, stack)
	return nil
}

// wiringKey is the signing key the recorder serves as the secret's
// AWSCURRENT version.
var wiringKey = signing.Key{ID: "version-wiring", Secret: []byte("0123456789abcdef0123456789abcdef")}

// recorder is an AWS endpoint that records each request's target and body
// and answers StartExecution as Step Functions does, and GetSecretValue
// with wiringKey.
type recorder struct {
	mu       sync.Mutex
	requests []recorded
}

type recorded struct{ Target, Body string }

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.requests = append(r.requests, recorded{Target: req.Header.Get("X-Amz-Target"), Body: string(b)})
	r.mu.Unlock()
	if req.Header.Get("X-Amz-Target") == "secretsmanager.GetSecretValue" {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		fmt.Fprintf(w, `{"Name":"k","VersionId":%q,"SecretString":%q,"VersionStages":["AWSCURRENT"]}`, wiringKey.ID, wiringKey.Secret)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	fmt.Fprint(w, `{"executionArn":"arn:aws:states:eu-west-1:333333333333:execution:mercadofresco-procesar-pedido:x","startDate":1764583200}`)
}

// The deployed starter, built as its main builds it (orderstart.Function,
// lambdas/iniciar-pedido) from mf-iniciar-pedido's environment in the prod
// template: a PedidoCreado on its queue reaches Step Functions as a
// StartExecution of the template's state machine, named after the order.
// Replacing the Step Functions client with one that does nothing fails it.
func TestDeployedStarterReachesStepFunctions(t *testing.T) {
	env := deployedEnv(t, "MercadoFresco-OrderFlow-prod", "mf-iniciar-pedido")
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	for k, v := range env {
		t.Setenv(k, v)
	}
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))

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
	pedido.Firma = sign(wiringKey, pedido)
	detail, _ := json.Marshal(pedido)
	body, _ := json.Marshal(map[string]any{
		"version": "0", "id": "ev-77", "detail-type": eventsapi.TypePedidoCreado, "source": "mercadofresco.tienda",
		"account": "333333333333", "time": created, "region": "eu-west-1", "resources": []string{}, "detail": json.RawMessage(detail),
	})
	resp, err := handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{
		MessageId: "m-77", Body: string(body), EventSourceARN: "arn:aws:sqs:eu-west-1:333333333333:cola-mercadofresco-inicio-pedido",
		Attributes: map[string]string{"ApproximateReceiveCount": "1"},
	}}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("handler: %v, failures %+v", err, resp.BatchItemFailures)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var starts []recorded
	for _, r := range rec.requests {
		if r.Target != "secretsmanager.GetSecretValue" {
			starts = append(starts, r)
		}
	}
	if len(starts) != 1 || starts[0].Target != "AWSStepFunctions.StartExecution" {
		t.Fatalf("requests at the endpoint %+v, want one StartExecution (and the signing key's reads)", rec.requests)
	}
	var in struct{ StateMachineArn, Name, Input string }
	if err := json.Unmarshal([]byte(starts[0].Body), &in); err != nil {
		t.Fatal(err)
	}
	if in.StateMachineArn != env["STATE_MACHINE_ARN"] || !strings.Contains(in.Name, "P-77") || !strings.Contains(in.Input, `"pedido_id":"P-77"`) {
		t.Fatalf("StartExecution %+v, want the template's state machine %s, a name and input of P-77", in, env["STATE_MACHINE_ARN"])
	}
}
