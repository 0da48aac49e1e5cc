package lambdatest

import (
	"context"
	"github.com/mercadofresco/integration/internal/localaws"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
)

// Consumer is a deployed SQS consumer built as its main builds it
// (sqsconsumer.Start with the builder its main passes to sqsconsumer.Main)
// from its template environment, every AWS call going to AWS.
type Consumer struct {
	Env map[string]string
	AWS *localaws.Endpoint
	// Cache is the breakers' cache; nil for a function without breakers.
	Cache *BreakerCache
	p     *sqsbatch.Processor
}

// StartConsumer builds function (its FunctionName in stack, "mf-" and the
// name its main gives sqsconsumer.Main) with build. Before it is built,
// each variable of deps (the third party's URL variable, nothing else)
// points at its Dependency, and a function with a breaker gets a
// BreakerCache.
func StartConsumer(t *testing.T, stack, function string, build func(context.Context, *sqsconsumer.Runtime) (*sqsbatch.Processor, error), deps map[string]*Dependency) *Consumer {
	t.Helper()
	c := &Consumer{Env: DeployedEnv(t, stack, function), AWS: localaws.NewEndpoint(t, nil)}
	for k, d := range deps {
		if _, ok := c.Env[k]; !ok {
			t.Fatalf("lambdatest: %s has no %s to point at a local server", function, k)
		}
		c.Env[k] = d.URL()
	}
	if _, ok := c.Env["BREAKER_REDIS_ADDR"]; ok {
		c.Cache = NewBreakerCache(t, c.Env)
	}
	Setenv(t, c.Env, c.AWS.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := sqsconsumer.Start(ctx, strings.TrimPrefix(function, "mf-"), lambdaenv.New(os.Getenv), build)
	if err != nil {
		t.Fatal(err)
	}
	c.p = p
	return c
}

// Process runs one batch of bodies received once from queueName
// (SQSEvent) and fails the test unless every record succeeds or is
// dead-lettered.
func (c *Consumer) Process(t testing.TB, queueName string, bodies ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.p.Process(ctx, SQSEvent(queueName, bodies...))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("batch: %v, failures %+v", err, resp.BatchItemFailures)
	}
}

// WantClaim fails the test unless the idempotency table of
// IDEMPOTENCY_TABLE_NAME got the PutItem claiming key(pedidoID) (exactly
// that key: other records of the table, such as the e-mail send records,
// extend it).
func (c *Consumer) WantClaim(t testing.TB, key func(pedidoID string) (string, error), pedidoID string) {
	t.Helper()
	k, err := key(pedidoID)
	if err != nil {
		t.Fatal(err)
	}
	localaws.WantRequest(t, c.AWS, "DynamoDB_20120810.PutItem", `"TableName":"`+c.Env["IDEMPOTENCY_TABLE_NAME"]+`"`,
		`"`+lambdaapi.IdempotencyKeyAttribute+`":{"S":"`+k+`"}`)
}

// WantDeadLetter fails the test unless the DLQ of DLQ_URLS got body
// through SQS.
func (c *Consumer) WantDeadLetter(t testing.TB, body string) {
	t.Helper()
	localaws.WantDeadLetter(t, c.AWS, c.Env["DLQ_URLS"], body)
}
