package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq/dataset"
	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/internal/sqsfake"
	"github.com/mercadofresco/integration/internal/sqsfake/sqsserver"
	"github.com/mercadofresco/integration/lambdas/queue"
)

// offsetClock is the wall clock plus an offset (the sandbox replays a data
// set's past, the tests let visibility timeouts pass without sleeping).
type offsetClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *offsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

// Advance moves the clock forward by d.
func (c *offsetClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

// set makes Now return t (at this instant).
func (c *offsetClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off = time.Until(t)
}

// cmdSandbox serves an in-memory SQS (sqsfake over the SQS JSON protocol)
// holding the environment's Messaging queues, with a generated data set
// played into the Pedidos DLQ through SQS's own mechanics: redriven
// messages are sent to the source and received maxReceiveCount times,
// consumer-dead-lettered ones are sent to the DLQ with their mf-*
// attributes. Point the other commands at it with --endpoint-url to
// practise the runbook (Lambda and CloudWatch are not served).
func cmdSandbox(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
	scenario := fs.String("scenario", dataset.DeployV2, "data set to load (see gen)")
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "random seed (printed)")
	listen := fs.String("listen", "127.0.0.1:0", "address to serve on")
	envName := fs.String("e", "dev", "environment whose queue names to create")
	if _, err := parse(fs, args); err != nil {
		return 0, err
	}
	if err := catalog.ValidEnvironment(*envName); err != nil {
		return 0, fmt.Errorf("%w: %w", dlq.ErrUsage, err)
	}
	clock := &offsetClock{}
	fake := sqsfake.New(sqsfake.WithClock(clock.Now))
	var pedidosSrc, pedidosDLQ string
	for _, q := range catalog.Queues {
		d, err := fake.CreateQueue(catalog.PhysicalName(q.DLQName, *envName), sqsfake.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour})
		if err != nil {
			return 0, err
		}
		s, err := fake.CreateQueue(catalog.PhysicalName(q.Name, *envName), sqsfake.QueueConfig{
			VisibilityTimeout: 400 * time.Second, Redrive: &sqsfake.RedrivePolicy{DeadLetterTargetARN: fake.ARN(d), MaxReceiveCount: 4}})
		if err != nil {
			return 0, err
		}
		if q.Logical == "Pedidos" {
			pedidosSrc, pedidosDLQ = s, d
		}
	}
	topo := dataset.DefaultTopology
	topo.SourceARN = fake.ARN(pedidosSrc)
	msgs, err := dataset.Generate(*scenario, *seed, time.Now().Add(-time.Minute), topo)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", dlq.ErrUsage, err)
	}
	if err := replay(ctx, fake, clock, pedidosSrc, pedidosDLQ, msgs); err != nil {
		return 0, err
	}
	clock.set(time.Now())
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return 0, err
	}
	srv := &http.Server{Handler: sqsserver.Handler(fake), ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "sandbox: scenario %s, seed %d: %d messages in %s\nserving SQS at %s (Ctrl-C stops)\n\n  export AWS_ACCESS_KEY_ID=sandbox AWS_SECRET_ACCESS_KEY=sandbox AWS_REGION=%s\n  mf-dlq inspect Pedidos -e %s --endpoint-url %s\n",
		*scenario, *seed, len(msgs), catalog.PhysicalName(catalog.PedidosDLQName, *envName), url, fake.Region(), *envName, url)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx) // nothing left to do if it cannot shut down cleanly
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return 0, err
	}
	return exitOK, nil
}

// replay plays msgs (as generated) into the fake in SentTimestamp order.
func replay(ctx context.Context, fake *sqsfake.Fake, clock *offsetClock, src, dlqURL string, msgs []queue.Message) error {
	sort.SliceStable(msgs, func(i, j int) bool { return ms(msgs[i]) < ms(msgs[j]) })
	at := time.Time{}
	for _, m := range msgs {
		at = maxTime(at, time.UnixMilli(ms(m)))
		clock.set(at)
		if m.Attributes[queue.AttrDeadLetterQueueSourceArn] == "" {
			if _, err := fake.SendMessage(ctx, &queue.SendMessageInput{QueueURL: dlqURL, Body: m.Body, MessageAttributes: m.MessageAttributes}); err != nil {
				return err
			}
			continue
		}
		if _, err := fake.SendMessage(ctx, &queue.SendMessageInput{QueueURL: src, Body: m.Body, MessageAttributes: m.MessageAttributes}); err != nil {
			return err
		}
		// maxReceiveCount failed receives, then the attempt that moves it.
		for range 5 {
			at = at.Add(time.Millisecond)
			clock.set(at)
			if _, err := fake.ReceiveMessage(ctx, &queue.ReceiveMessageInput{QueueURL: src, MaxMessages: 1, VisibilityTimeout: time.Nanosecond}); err != nil {
				return err
			}
		}
	}
	return nil
}

func ms(m queue.Message) int64 {
	n, _ := strconv.ParseInt(m.Attributes[queue.AttrSentTimestamp], 10, 64)
	return n
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
