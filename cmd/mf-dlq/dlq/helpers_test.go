package dlq_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/retry"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

var t0 = time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)

// simClock is virtual time: Sleep advances it at once, so rate limits and
// sampling windows are checked without sleeping. onSleep, when set, runs
// after each advance (to make things happen "meanwhile").
type simClock struct {
	*retry.VirtualClock
	mu      sync.Mutex
	onSleep func()
}

func (c *simClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d > 0 {
		c.Advance(d)
	}
	c.mu.Lock()
	f := c.onSleep
	c.mu.Unlock()
	if f != nil {
		f()
	}
	return ctx.Err()
}

// env is a Pedidos source queue with its DLQ (dev names) in a fake SQS.
type env struct {
	t         *testing.T
	fake      *localaws.SQS
	clock     *simClock
	src, dlq  string
	out, log  *bytes.Buffer
	tool      *dlq.Tool
	mu        sync.Mutex
	sentTimes []time.Time // SendMessage calls to the source, in virtual time
}

func newEnv(t *testing.T) *env {
	t.Helper()
	clk := &simClock{VirtualClock: retry.NewVirtualClock(t0)}
	f := localaws.NewSQS(localaws.SQSConfig{Now: clk.Now})
	dlqURL, err := f.CreateQueue(catalog.PhysicalName(catalog.PedidosDLQName, "dev"), localaws.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srcURL, err := f.CreateQueue(catalog.PhysicalName(catalog.PedidosQueueName, "dev"), localaws.QueueConfig{
		VisibilityTimeout: 400 * time.Second,
		Redrive:           &localaws.RedrivePolicy{DeadLetterTargetARN: f.ARN(dlqURL), MaxReceiveCount: 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, fake: f, clock: clk, src: srcURL, dlq: dlqURL, out: &bytes.Buffer{}, log: &bytes.Buffer{}}
	e.tool = &dlq.Tool{SQS: &recordingSQS{SQS: f, env: e}, Clock: clk, Out: e.out, Log: e.log}
	return e
}

// recordingSQS records the virtual time of every send to the source.
type recordingSQS struct {
	dlq.SQS
	env    *env
	onSend func(n int) // called after each successful send, with the count
}

func (r *recordingSQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	out, err := r.SQS.SendMessage(ctx, in)
	if err == nil && *in.QueueUrl == r.env.src {
		r.env.mu.Lock()
		r.env.sentTimes = append(r.env.sentTimes, r.env.clock.Now())
		n := len(r.env.sentTimes)
		r.env.mu.Unlock()
		if r.onSend != nil {
			r.onSend(n)
		}
	}
	return out, err
}

// redriven puts n messages in the DLQ the way SQS does: sent to the source,
// received maxReceiveCount times without success, moved on the next receive.
func (e *env) redriven(n int, body func(i int) string) {
	e.t.Helper()
	ctx := context.Background()
	for i := range n {
		if _, err := e.fake.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &e.src, MessageBody: aws.String(body(i)), MessageAttributes: map[string]types.MessageAttributeValue{"tipo": sqsbatch.StringAttribute("PedidoConfirmado")}}); err != nil {
			e.t.Fatal(err)
		}
	}
	for range 5 {
		for {
			out, err := e.fake.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &e.src, MaxNumberOfMessages: 10})
			if err != nil {
				e.t.Fatal(err)
			}
			if len(out.Messages) == 0 {
				break
			}
		}
		e.clock.Advance(401 * time.Second)
	}
	if got := e.depth(e.src); got != 0 {
		e.t.Fatalf("setup: %d messages left in the source", got)
	}
}

// consumerSent puts n messages in the DLQ the way lambdas/sqsbatch does.
func (e *env) consumerSent(n int, class, reason string, body func(i int) string) {
	e.t.Helper()
	for i := range n {
		_, err := e.fake.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &e.dlq, MessageBody: aws.String(body(i)), MessageAttributes: map[string]types.MessageAttributeValue{
			sqsbatch.AttrFailureClass:      sqsbatch.StringAttribute(class),
			sqsbatch.AttrFailureReason:     sqsbatch.StringAttribute(reason),
			sqsbatch.AttrConsumerVersion:   sqsbatch.StringAttribute("sha256:0123456789ab"),
			sqsbatch.AttrOriginalMessageID: sqsbatch.StringAttribute(fmt.Sprintf("orig-%d", i)),
			sqsbatch.AttrReceiveCount:      sqsbatch.NumberAttribute(1),
			"tipo":                         sqsbatch.StringAttribute("PedidoConfirmado"),
		}})
		if err != nil {
			e.t.Fatal(err)
		}
	}
}

// depth is the number of messages stored in a queue (any state).
func (e *env) depth(url string) int {
	e.t.Helper()
	st, err := e.fake.Inspect(url)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(st)
}

func (e *env) target(spec, environment string) *dlq.Target {
	e.t.Helper()
	tg, err := e.tool.Resolve(context.Background(), spec, environment)
	if err != nil {
		e.t.Fatalf("Resolve(%q, %q): %v", spec, environment, err)
	}
	return tg
}

func order(version int) func(int) string {
	return func(i int) string {
		return fmt.Sprintf(`{"version":%d,"tipo":"PedidoConfirmado","pedido_id":"PED-2026-%06d","lineas":[{"sku":"750%07d","cantidad":1}],"confirmado_en":%q}`,
			version, i, i, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
	}
}

func contains(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}

// sendSource sends n orders to the source queue (a backlog).
func (e *env) sendSource(n int) {
	e.t.Helper()
	for i := range n {
		if _, err := e.fake.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &e.src, MessageBody: aws.String(order(1)(i))}); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) drainSource() { e.drain(e.src) }
func (e *env) drainDLQ()    { e.drain(e.dlq) }

// drain receives and deletes everything in a queue (a consumer at work).
func (e *env) drain(url string) {
	e.t.Helper()
	ctx := context.Background()
	for {
		out, err := e.fake.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return
		}
		for _, m := range out.Messages {
			if _, err := e.fake.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}); err != nil {
				e.t.Fatal(err)
			}
		}
	}
}
