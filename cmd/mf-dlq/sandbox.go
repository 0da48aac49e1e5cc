package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// sandbox is the rehearsal's AWS on one endpoint (localaws.OperatorEndpoint): the
// local SQS with the environment's queues of config/catalog and a data set
// (dlq.Generate) restored into the Pedidos DLQ; per source queue a Lambda
// event source mapping, enabled, with a consumer that processes what the
// fixed cause allows (sandboxAccepts); and CloudWatch's
// NumberOfMessagesDeleted of what the consumers deleted and
// ApproximateAgeOfOldestMessage.
type sandbox struct {
	sqs      *localaws.SQS
	mappings localaws.Mappings
	sources  []sandboxSource
	info     sandboxInfo

	mu      sync.Mutex
	deletes map[string][]time.Time // source queue name -> when its consumer deleted a message
}

type sandboxSource struct {
	uuid, url, arn, name string
	consumer             catalog.Consumer
}

// sandboxInfo is what sandbox prints (--json: as JSON) before it serves.
type sandboxInfo struct {
	EndpointURL string `json:"endpoint_url"`
	Region      string `json:"region"`
	Environment string `json:"environment"`
	Scenario    string `json:"scenario"`
	Seed        uint64 `json:"seed"`
	Messages    int    `json:"messages"`
	DLQ         string `json:"dlq"`
}

func newSandbox(scenario string, seed uint64, env, accepts string) (*sandbox, error) {
	if err := catalog.ValidEnvironment(env); err != nil {
		return nil, fmt.Errorf("%w: %w", dlq.ErrUsage, err)
	}
	sb := &sandbox{sqs: localaws.NewSQS(localaws.SQSConfig{}), deletes: map[string][]time.Time{},
		info: sandboxInfo{Environment: env, Scenario: scenario, Seed: seed, DLQ: catalog.PhysicalName(catalog.PedidosDLQName, env)}}
	sb.info.Region = sb.sqs.Region()
	var pedidos sandboxSource
	var pedidosDLQ string
	for i, q := range catalog.Queues {
		d, err := sb.sqs.CreateQueue(catalog.PhysicalName(q.DLQName, env), localaws.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour})
		if err != nil {
			return nil, err
		}
		s := sandboxSource{uuid: fmt.Sprintf("00000000-5a4d-4b0c-8000-%012d", i+1), name: catalog.PhysicalName(q.Name, env)}
		if s.url, err = sb.sqs.CreateQueue(s.name, localaws.QueueConfig{VisibilityTimeout: 400 * time.Second,
			Redrive: &localaws.RedrivePolicy{DeadLetterTargetARN: sb.sqs.ARN(d), MaxReceiveCount: 4}}); err != nil {
			return nil, err
		}
		s.arn = sb.sqs.ARN(s.url)
		if q.Logical == "Pedidos" {
			pedidos, pedidosDLQ = s, d
		}
		if len(q.Consumers) == 0 {
			continue
		}
		s.consumer = q.Consumers[0]
		o, err := (&opts{accept: accepts}).expectations(dlq.Options{AcceptedVersions: s.consumer.SupportedVersions})
		if err != nil {
			return nil, err
		}
		s.consumer.SupportedVersions = o.AcceptedVersions
		sb.sources = append(sb.sources, s)
		sb.mappings.Add(localaws.Mapping{UUID: s.uuid, EventSourceArn: s.arn, Enabled: true,
			FunctionArn: fmt.Sprintf("arn:aws:lambda:%s:000000000000:function:%s", sb.sqs.Region(), catalog.PhysicalName(s.consumer.Function, env))})
	}
	msgs, err := dlq.Generate(scenario, seed, time.Now().Add(-time.Minute), pedidos.arn)
	if err != nil {
		return nil, err
	}
	sb.info.Messages = len(msgs)
	return sb, sb.sqs.Restore(pedidosDLQ, msgs)
}

// serveSandbox serves the rehearsal over HTTP until Ctrl-C, its consumers
// running: point the other commands at it with --endpoint-url.
func serveSandbox(ctx context.Context, o *opts, stdout io.Writer) error {
	sb, err := newSandbox(o.scenario, o.seed, cmp.Or(o.env, "dev"), o.accept)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: sb.handler(), ReadHeaderTimeout: 10 * time.Second}
	sb.info.EndpointURL = "http://" + ln.Addr().String()
	if i := sb.info; o.json {
		_ = json.NewEncoder(stdout).Encode(i) // a broken stdout shows in the commands that use the endpoint
	} else {
		fmt.Fprintf(stdout, "sandbox: scenario %s, seed %d: %d messages in %s\nserving SQS, Lambda event source mappings and CloudWatch metrics at %s (Ctrl-C stops);\n"+
			"each source queue has an enabled consumer that processes what the fixed cause allows (transient failures),\n"+
			"and fails, as the real one would, on poison, on the unfixed SKU %s and on expired orders not re-admitted\n\n"+
			"  export AWS_ACCESS_KEY_ID=sandbox AWS_SECRET_ACCESS_KEY=sandbox AWS_REGION=%s\n  mf-dlq inspect Pedidos -e %s --endpoint-url %s\n",
			i.Scenario, i.Seed, i.Messages, i.DLQ, i.EndpointURL, dlq.BadSKU, i.Region, i.Environment, i.EndpointURL)
	}
	go func() {
		for tick := time.NewTicker(200 * time.Millisecond); ctx.Err() == nil; <-tick.C {
			_, _ = sb.consumeOnce(ctx) // a failed round is retried on the next tick
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx) // nothing left to do if it cannot shut down cleanly
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// handler serves the sandbox: SQS, the mappings and the metrics.
func (sb *sandbox) handler() http.Handler {
	return localaws.OperatorEndpoint(sb.sqs, &sb.mappings, func(metric, queue string, start, end time.Time) map[time.Time]float64 {
		out := map[time.Time]float64{}
		sb.mu.Lock()
		defer sb.mu.Unlock()
		for _, at := range sb.deletes[queue] {
			if metric == "NumberOfMessagesDeleted" && !at.Before(start) && at.Before(end) {
				out[at.Truncate(time.Minute)]++
			}
		}
		for _, s := range sb.sources {
			if st, _ := sb.sqs.Inspect(s.url); metric == "ApproximateAgeOfOldestMessage" && s.name == queue && len(st) > 0 {
				oldest := st[0].SentAt
				for _, m := range st {
					if m.SentAt.Before(oldest) {
						oldest = m.SentAt
					}
				}
				out[time.Now().Truncate(time.Minute)] = time.Since(oldest).Seconds()
			}
		}
		return out
	})
}

// consumeOnce lets each enabled consumer receive until its queue returns
// nothing: it deletes what sandboxAccepts and fails the rest, which SQS's
// redrive policy moves back to the DLQ after maxReceiveCount receives. It
// returns how many messages were deleted.
func (sb *sandbox) consumeOnce(ctx context.Context) (int, error) {
	deleted := 0
	for _, s := range sb.sources {
		for i := 0; sb.mappings.Enabled(s.uuid) && i < 50; i++ {
			ev, err := sb.sqs.Receive(ctx, s.url, s.arn, 10)
			if err != nil {
				return deleted, err
			} else if len(ev.Records) == 0 {
				break
			}
			for _, r := range ev.Records {
				if !sandboxAccepts(s.consumer, r.Body, r.MessageAttributes[lambdaapi.AttrReadmision].StringValue != nil) {
					// Failed: visible again at once, one receive spent.
					_, err = sb.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &s.url, ReceiptHandle: &r.ReceiptHandle})
				} else if _, err = sb.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &s.url, ReceiptHandle: &r.ReceiptHandle}); err == nil {
					deleted++
					sb.mu.Lock()
					sb.deletes[s.name] = append(sb.deletes[s.name], time.Now())
					sb.mu.Unlock()
				}
				if err != nil {
					return deleted, err
				}
			}
		}
	}
	return deleted, nil
}

// sandboxAccepts is the sandbox consumer's verdict: the cause of the
// transient failures is fixed; poison (the consumer's content rules, as
// classify applies them), an order with the SKU the data scenario breaks,
// and a message older than the replay window without the re-admission
// mark still fail.
func sandboxAccepts(c catalog.Consumer, body string, readmitted bool) bool {
	switch dlq.Classify([]types.Message{{MessageId: aws.String("m"), Body: &body}}, dlq.OptionsOf(c)).Verdict {
	case dlq.Poison:
		return false
	case dlq.Expired:
		return readmitted
	}
	return !strings.Contains(body, dlq.BadSKU)
}
