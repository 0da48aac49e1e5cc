package lambdatest

// Deployed functions: builds one as its main does, from the
// environment the committed template gives it, with every AWS call going to
// a recording endpoint: DeployedEnv reads a function's Environment from
// test/testdata/snapshots (references resolved by synthesized.Physical to the
// values CloudFormation would give them), Setenv installs it with
// AWS_ENDPOINT_URL pointing at an Endpoint and isolated credentials, and
// Endpoint records each AWS request and answers it as the service would
// (answers table-driven by target; SQS is served by internal/localaws). The wiring
// tests of lambdas/* use it to prove by behaviour that each real client
// makes its requests.

import (
	"fmt"
	"github.com/mercadofresco/integration/constructs/golambda/gobuild"
	"github.com/mercadofresco/integration/internal/localaws"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/mercadofresco/integration/synthesized"
)

// app loads the committed templates of env (the stack name's suffix).
func app(t testing.TB, env string) *synthesized.App {
	t.Helper()
	root, err := gobuild.FindUp("go.mod")
	if err != nil {
		t.Fatalf("lambdatest: %v", err)
	}
	a, err := synthesized.LoadEnv(filepath.Join(root, "test", "testdata", "snapshots"), env)
	if err != nil {
		t.Fatalf("lambdatest: %v", err)
	}
	a.Account, a.Region = localaws.Account, localaws.Region
	return a
}

// DeployedEnv is the environment of the function named name in the
// committed snapshot of stack ("MercadoFresco-OrderFlow-prod"), each
// reference resolved as CloudFormation would (synthesized.Physical): a queue's URL, a state machine's or secret's ARN, a
// table's, bus's or configuration set's name, another stack's export, the
// RDS Proxy and Valkey endpoints as DNS names. It fails the test on a
// reference it cannot resolve.
func DeployedEnv(t testing.TB, stack, name string) map[string]string {
	t.Helper()
	a := app(t, stack[strings.LastIndex(stack, "-")+1:])
	l := synthesized.Physical{App: a}
	for _, r := range a.Resources("AWS::Lambda::Function") {
		if r.Stack != stack || r.Properties["FunctionName"] != name {
			continue
		}
		envBlock, _ := r.Properties["Environment"].(map[string]any)
		vars, _ := envBlock["Variables"].(map[string]any)
		out := map[string]string{}
		for k, v := range vars {
			s, err := a.ResolveString(stack, v, l)
			if err != nil {
				t.Fatalf("lambdatest: %s %s: %v", name, k, err)
			}
			out[k] = s
		}
		return out
	}
	t.Fatalf("lambdatest: no function %s in %s", name, stack)
	return nil
}

// Setenv sets env for the test and points every AWS SDK client at endpoint
// (localaws.UseEndpoint).
func Setenv(t *testing.T, env map[string]string, endpoint string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	localaws.UseEndpoint(t, endpoint, nil)
}

// SQSEvent is a Lambda event of bodies received once from the queue named
// queueName (message ids m-0, m-1, ...; on a FIFO queue each in message
// group "g").
func SQSEvent(queueName string, bodies ...string) events.SQSEvent {
	var ev events.SQSEvent
	for i, b := range bodies {
		id := fmt.Sprintf("m-%d", i)
		attrs := map[string]string{
			"ApproximateReceiveCount": "1",
			"SentTimestamp":           strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10),
		}
		if strings.HasSuffix(queueName, ".fifo") {
			attrs["MessageGroupId"] = "g"
		}
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: id, ReceiptHandle: "rh-" + id, Body: b, EventSource: "aws:sqs", AWSRegion: localaws.Region,
			EventSourceARN: fmt.Sprintf("arn:aws:sqs:%s:%s:%s", localaws.Region, localaws.Account, queueName), Attributes: attrs,
		})
	}
	return ev
}

// PedidoConfirmado is the body of a PedidoConfirmado of order pedidoID,
// confirmed a second ago (inside every replay window), as the fan-out's
// queues carry it.
func PedidoConfirmado(pedidoID string) string {
	return fmt.Sprintf(`{"version":1,"pedido_id":%q,"cliente":{"id":"C-1","email":"ana@example.com"},`+
		`"lineas":[{"sku":"SKU-1","cantidad":2,"precio_centimos":250}],"total_centimos":500,"moneda":"EUR",`+
		`"referencia_cobro":"ch_1","confirmado_en":%q}`, pedidoID, time.Now().UTC().Add(-time.Second).Format(time.RFC3339))
}
