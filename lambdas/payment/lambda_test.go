package payment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/mercadofresco/integration/internal/lambdatest"
	"github.com/mercadofresco/integration/internal/localaws"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/mercadofresco/integration/lambdas/httpdep"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/payment"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// Environment of the child process that runs the real aws-lambda-go
// runtime loop.
const (
	helperEnv      = "PAYMENT_TEST_LAMBDA_HELPER"
	helperGateway  = "PAYMENT_TEST_GATEWAY_URL"
	helperDynamo   = "PAYMENT_TEST_DYNAMO_ENDPOINT"
	helperTable    = "PAYMENT_TEST_TABLE"
	runtimeAPIPath = "/2018-06-01/runtime/invocation/"
)

// runLambdaHelper is the child: the cobro handler under lambda.Start, as
// the deployed main runs it, against the parent's gateway and dynalite.
func runLambdaHelper() {
	store, err := idempotency.NewStore(localaws.DynamoDBClient(os.Getenv(helperDynamo)), idempotency.Config{TableName: os.Getenv(helperTable)})
	if err != nil {
		panic(err)
	}
	r, _ := retry.New(retry.Policy{MaxAttempts: 1})
	c, err := payment.NewClient(httpdep.Config{BaseURL: os.Getenv(helperGateway), Keys: httpdep.StaticKey(apiKey), Retrier: r})
	if err != nil {
		panic(err)
	}
	tasks, _ := payment.NewTasks(store, c, nil, payment.WithVerifier(testKeys{}))
	lambda.Start(tasks.CobroHandler())
}

// runtimeAPI serves invocations to the child and records its answers.
type runtimeAPI struct {
	mu       sync.Mutex
	payloads []string
	next     int
	answers  map[string]answer
	got      chan struct{}
}

type answer struct {
	path string
	body map[string]any
}

func (rt *runtimeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/next"):
		rt.mu.Lock()
		if rt.next >= len(rt.payloads) {
			rt.mu.Unlock()
			<-r.Context().Done() // no more work: the child waits until killed
			return
		}
		id := "req-" + strconv.Itoa(rt.next)
		p := rt.payloads[rt.next]
		rt.next++
		rt.mu.Unlock()
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", id)
		w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(30*time.Second).UnixMilli(), 10))
		w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:eu-west-1:111111111111:function:mf-cobro")
		io.WriteString(w, p)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, runtimeAPIPath):
		rest := strings.TrimPrefix(r.URL.Path, runtimeAPIPath)
		id, kind, _ := strings.Cut(rest, "/")
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		rt.mu.Lock()
		rt.answers[id] = answer{path: kind, body: body}
		rt.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		rt.got <- struct{}{}
	default:
		http.NotFound(w, r)
	}
}

// TestErrorTypeThroughTheLambdaRuntime runs the cobro handler in a child
// process under the real aws-lambda-go runtime loop, against a stand-in of
// the Lambda Runtime API, and checks the errorType it reports: the name
// Step Functions' Retry and Catch match.
func TestErrorTypeThroughTheLambdaRuntime(t *testing.T) {
	gw := lambdatest.NewGateway(apiKey)
	defer gw.Close()
	table := fmt.Sprintf("idem-rt-%d", os.Getpid())
	ddb.CreateTable(t, table, lambdaapi.IdempotencyKeyAttribute, "")

	declined := signed(lambdaapi.CobroInput{PedidoID: "PED-RT-1", ImporteCentimos: 4820, Moneda: "EUR", TokenTarjeta: lambdatest.DeclinedToken})
	ok := signed(lambdaapi.CobroInput{PedidoID: "PED-RT-3", ImporteCentimos: 4820, Moneda: "EUR", TokenTarjeta: "tok_visa"})
	rt := &runtimeAPI{answers: map[string]answer{}, got: make(chan struct{}, 8), payloads: []string{
		`{"pedido_id":"PED-RT-1","importe_centimos":4820,"moneda":"EUR","token_tarjeta":"` + lambdatest.DeclinedToken + `","id_evento":"` + declined.IDEvento + `","firma":"` + declined.Firma + `"}`,
		`{"pedido_id":"PED-RT-2","importe_centimos":48.20,"moneda":"EUR","token_tarjeta":"tok_visa"}`,
		`{"pedido_id":"PED-RT-3","importe_centimos":4820,"moneda":"EUR","token_tarjeta":"tok_visa","campo_nuevo":true,"id_evento":"` + ok.IDEvento + `","firma":"` + ok.Firma + `"}`,
	}}
	api := httptest.NewServer(rt)
	defer api.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		helperEnv+"=1",
		"AWS_LAMBDA_RUNTIME_API="+strings.TrimPrefix(api.URL, "http://"),
		helperGateway+"="+gw.URL(), helperDynamo+"="+ddb.Endpoint, helperTable+"="+table)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	for range rt.payloads {
		select {
		case <-rt.got:
		case <-ctx.Done():
			t.Fatalf("the child answered %d invocations; stderr:\n%s", len(rt.answers), stderr.String())
		}
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for id, want := range map[string]string{"req-0": lambdaapi.ErrTarjetaRechazada, "req-1": lambdaapi.ErrSolicitudInvalida} {
		a := rt.answers[id]
		if a.path != "error" || a.body["errorType"] != want {
			t.Errorf("%s: %s %q body %v; want errorType %q", id, a.path, a.body["errorType"], a.body, want)
		}
	}
	charged := rt.answers["req-2"]
	if charged.path != "response" || charged.body["referencia_cobro"] != gw.Charges()[0].ID || charged.body["importe_centimos"] != 4820.0 {
		t.Errorf("success: %s %v", charged.path, charged.body)
	}
}
