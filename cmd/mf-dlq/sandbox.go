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
	"strings"
	"sync"
	"time"

	awsarn "github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq/classify"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq/dataset"
	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/internal/localaws"
)

// offsetClock is the wall clock plus an offset (the tests let visibility
// timeouts pass without sleeping), or stopped at an instant while the
// sandbox replays a data set's past: the replay's steps of 1 ms must not
// depend on how fast a loaded machine runs them.
type offsetClock struct {
	mu      sync.Mutex
	off     time.Duration
	stopped bool
	at      time.Time
}

func (c *offsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return c.at
	}
	return time.Now().Add(c.off)
}

// Advance moves the clock forward by d, stopped or running.
func (c *offsetClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		c.at = c.at.Add(d)
	} else {
		c.off += d
	}
}

// stop makes Now return t until start.
func (c *offsetClock) stop(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped, c.at = true, t
}

// start lets the clock run again as the wall clock.
func (c *offsetClock) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped, c.off = false, 0
}

// cmdSandbox serves a sandbox (newSandbox) over HTTP until Ctrl-C, with
// its consumers running: point the other commands at it with
// --endpoint-url to practise the runbook.
func cmdSandbox(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
	scenario := fs.String("scenario", dataset.DeployV2, "data set to load: "+strings.Join(dataset.Scenarios, ", "))
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "random seed (printed)")
	listen := fs.String("listen", "127.0.0.1:0", "address to serve on")
	envName := fs.String("e", "dev", "environment whose queue names to create")
	accepts := fs.String("consumer-accepts", "", "major versions the sandbox consumers accept (default: the catalogue's, 1): 1,2 rehearses the deploy of a consumer that accepts version 2")
	var asJSON bool
	registerJSON(fs, &asJSON)
	if _, err := parse(fs, args); err != nil {
		return 0, err
	}
	sb, err := newSandbox(ctx, *scenario, *seed, *envName)
	if err != nil {
		return 0, err
	}
	if *accepts != "" {
		var o classify.Options
		if err := override(&o, *accepts, ""); err != nil {
			return 0, err
		}
		for _, m := range sb.mappings {
			m.consumer.SupportedVersions = o.AcceptedVersions
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return 0, err
	}
	srv := &http.Server{Handler: sb.Handler(), ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String()
	info := sandboxInfo{EndpointURL: url, Region: sb.fake.Region(), Environment: *envName, Scenario: *scenario, Seed: *seed, Messages: sb.loaded,
		DLQ: catalog.PhysicalName(catalog.PedidosDLQName, *envName)}
	for _, m := range sb.mappings {
		info.Queues = append(info.Queues, m.queueName)
	}
	if asJSON {
		if err := emit(stdout, info); err != nil {
			return 0, err
		}
	} else {
		fmt.Fprintf(stdout, "sandbox: scenario %s, seed %d: %d messages in %s\n"+
			"serving SQS, Lambda event source mappings and CloudWatch metrics at %s (Ctrl-C stops);\n"+
			"each source queue has an enabled consumer that processes what the fixed cause allows (transient failures),\n"+
			"and fails, as the real one would, on poison, on the unfixed SKU %s and on expired orders not re-admitted\n\n"+
			"  export AWS_ACCESS_KEY_ID=sandbox AWS_SECRET_ACCESS_KEY=sandbox AWS_REGION=%s\n  mf-dlq inspect Pedidos -e %s --endpoint-url %s\n",
			*scenario, *seed, sb.loaded, info.DLQ, url, dataset.BadSKU, sb.fake.Region(), *envName, url)
	}
	go sb.run(ctx, 200*time.Millisecond)
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

// sandboxInfo is what sandbox --json prints.
type sandboxInfo struct {
	EndpointURL string   `json:"endpoint_url"`
	Region      string   `json:"region"`
	Environment string   `json:"environment"`
	Scenario    string   `json:"scenario"`
	Seed        uint64   `json:"seed"`
	Messages    int      `json:"messages"`
	DLQ         string   `json:"dlq"`
	Queues      []string `json:"queues"`
}

// newSandbox builds an in-memory SQS (internal/localaws) holding the environment's
// catalogue queues (config/catalog), with a generated data set played
// into the Pedidos DLQ through SQS's own mechanics: redriven messages are
// sent to the source and received maxReceiveCount times,
// consumer-dead-lettered ones are sent to the DLQ with their mf-*
// attributes. Each source queue gets a Lambda event source mapping
// (enabled) and a consumer (sandboxaws.go).
func newSandbox(ctx context.Context, scenario string, seed uint64, envName string) (*sandbox, error) {
	if err := catalog.ValidEnvironment(envName); err != nil {
		return nil, fmt.Errorf("%w: %w", dlq.ErrUsage, err)
	}
	clock := &offsetClock{}
	sb := &sandbox{clock: clock, deletes: map[string][]time.Time{}}
	sb.fake = localaws.NewSQS(localaws.SQSConfig{Now: clock.Now})
	var pedidosSrc, pedidosDLQ string
	for i, q := range catalog.Queues {
		d, err := sb.fake.CreateQueue(catalog.PhysicalName(q.DLQName, envName), localaws.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour})
		if err != nil {
			return nil, err
		}
		name := catalog.PhysicalName(q.Name, envName)
		s, err := sb.fake.CreateQueue(name, localaws.QueueConfig{
			VisibilityTimeout: 400 * time.Second, Redrive: &localaws.RedrivePolicy{DeadLetterTargetARN: sb.fake.ARN(d), MaxReceiveCount: 4}})
		if err != nil {
			return nil, err
		}
		if q.Logical == "Pedidos" {
			pedidosSrc, pedidosDLQ = s, d
		}
		m := &sandboxMapping{uuid: fmt.Sprintf("00000000-5a4d-4b0c-8000-%012d", i+1), queueURL: s, queueARN: sb.fake.ARN(s), queueName: name, enabled: true}
		if len(q.Consumers) > 0 {
			c := q.Consumers[0]
			m.consumer = c
			m.functionARN = fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", sb.fake.Region(), accountOf(m.queueARN), catalog.PhysicalName(c.Function, envName))
		}
		sb.mappings = append(sb.mappings, m)
	}
	topo := dataset.DefaultTopology
	topo.SourceARN = sb.fake.ARN(pedidosSrc)
	msgs, err := dataset.Generate(scenario, seed, time.Now().Add(-time.Minute), topo)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", dlq.ErrUsage, err)
	}
	if err := replay(ctx, sb.fake, clock, pedidosSrc, pedidosDLQ, msgs); err != nil {
		return nil, err
	}
	clock.start()
	sb.loaded = len(msgs)
	return sb, nil
}

func accountOf(arn string) string {
	if a, err := awsarn.Parse(arn); err == nil {
		return a.AccountID
	}
	return "000000000000"
}

// receiveAndFail receives up to max messages of url and makes them visible
// again at once: a failed receive that spends one receive of each.
func receiveAndFail(ctx context.Context, fake *localaws.SQS, url string, max int32) error {
	out, err := fake.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: max})
	if err != nil {
		return err
	}
	for _, m := range out.Messages {
		if _, err := fake.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}); err != nil {
			return err
		}
	}
	return nil
}

// replay plays msgs (as generated) into the fake in SentTimestamp order.
func replay(ctx context.Context, fake *localaws.SQS, clock *offsetClock, src, dlqURL string, msgs []types.Message) error {
	sort.SliceStable(msgs, func(i, j int) bool {
		return classify.Stamp(msgs[i], types.MessageSystemAttributeNameSentTimestamp).Before(classify.Stamp(msgs[j], types.MessageSystemAttributeNameSentTimestamp))
	})
	at := time.Time{}
	for _, m := range msgs {
		if sent := classify.Stamp(m, types.MessageSystemAttributeNameSentTimestamp); sent.After(at) {
			at = sent
		}
		clock.stop(at)
		to := src
		if m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)] == "" {
			to = dlqURL // sent to the DLQ by the consumer
		}
		if _, err := fake.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &to, MessageBody: m.Body, MessageAttributes: m.MessageAttributes}); err != nil {
			return err
		}
		if to == dlqURL {
			continue
		}
		// maxReceiveCount failed receives, then the attempt that moves it.
		for range 5 {
			at = at.Add(time.Millisecond)
			clock.stop(at)
			if err := receiveAndFail(ctx, fake, src, 1); err != nil {
				return err
			}
		}
	}
	left, err := fake.Inspect(src)
	if err != nil {
		return err
	}
	held, err := fake.Inspect(dlqURL)
	if err != nil {
		return err
	}
	if len(left) != 0 || len(held) != len(msgs) {
		return fmt.Errorf("sandbox replay: %d of %d messages reached the DLQ, %d stayed in the source queue", len(held), len(msgs), len(left))
	}
	return nil
}
