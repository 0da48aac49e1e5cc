package dlq_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

func TestResolve(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, tt := range []struct{ spec, env string }{
		{"Pedidos", "dev"}, {"pedidos", "dev"}, {"mercadofresco-pedidos-fallidos", "dev"}, {"cola-mercadofresco-pedidos", "dev"},
		{"mercadofresco-pedidos-fallidos-dev", ""}, {"cola-mercadofresco-pedidos-dev", ""}, // a source stands for its DLQ
		{e.dlq, ""}, {e.fake.ARN(e.dlq), ""},
	} {
		tg, err := e.tool.Resolve(ctx, tt.spec, tt.env)
		if err != nil {
			t.Errorf("Resolve(%q, %q): %v", tt.spec, tt.env, err)
			continue
		}
		if tg.DLQ.URL != e.dlq || len(tg.Sources) != 1 || tg.Sources[0].URL != e.src || tg.Catalog == nil || tg.Catalog.Logical != "Pedidos" || tg.Env != "dev" {
			t.Errorf("Resolve(%q, %q) = %+v", tt.spec, tt.env, tg)
		}
	}
	for _, tt := range []struct {
		spec, env string
		want      error
		text      string
	}{
		{"Pedidos", "", dlq.ErrUsage, "add -e"},
		{"Pedidos", "prod", dlq.ErrQueueNotFound, `"mercadofresco-pedidos-fallidos" does not exist`},
		{"Pedidos", "qa", dlq.ErrUsage, "unknown environment"},
		{"Nope", "dev", dlq.ErrQueueNotFound, "logical name (Pedidos, Correo, AvisoERP, StockMovements, Inicio)"},
		{"otra-cola", "", dlq.ErrQueueNotFound, "--region"},
		{"", "", dlq.ErrUsage, "name the queue"},
	} {
		_, err := e.tool.Resolve(ctx, tt.spec, tt.env)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("Resolve(%q, %q) = %v, want %v mentioning %q", tt.spec, tt.env, err, tt.want, tt.text)
		}
	}
	// A source stands for its DLQ only when the DLQ's own sources can be
	// listed: a failure there is an error, not a DLQ without sources.
	e.fake.SetFault(func(op, target string) error {
		if op == "ListDeadLetterSourceQueues" && target == e.dlq {
			return &smithy.GenericAPIError{Code: "AccessDenied", Message: "denied"}
		}
		return nil
	})
	defer e.fake.SetFault(nil)
	if tg, err := e.tool.Resolve(ctx, "cola-mercadofresco-pedidos-dev", ""); err == nil || !strings.Contains(err.Error(), "sqs:ListDeadLetterSourceQueues") {
		t.Errorf("Resolve of a source whose DLQ's sources cannot be listed = %+v, %v; want the permission error", tg, err)
	}
}

// TestInspectNeverDeletesNorPushes: inspection receives with a 5-second
// visibility, deletes nothing, releases everything, and refuses a queue
// whose receives would count towards a redrive policy.
func TestInspectNeverDeletesNorPushes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.redriven(20, order(2))
	e.consumerSent(10, "poison", "unknown major version 2", order(2))
	tg := e.target("Pedidos", "dev")
	counts := func() map[string]int {
		st, _ := e.fake.Inspect(e.dlq)
		m := map[string]int{}
		for _, s := range st {
			m[s.MessageID] = s.ReceiveCount
			if s.InFlight {
				t.Errorf("message %s still in flight after inspection", s.MessageID)
			}
		}
		return m
	}
	before := counts()
	var saved bytes.Buffer
	msgs, err := e.tool.Inspect(ctx, tg, 50, &saved)
	if err != nil || len(msgs) != 30 {
		t.Fatalf("Inspect = %d messages, %v", len(msgs), err)
	}
	after := counts()
	for id, n := range before {
		if after[id] != n+1 {
			t.Errorf("message %s: receive count %d → %d, want +1 (one receive per inspection)", id, n, after[id])
		}
	}
	if _, err := e.tool.Inspect(ctx, tg, 10, nil); err != nil {
		t.Fatal(err)
	}
	if s := e.fake.Stats(e.dlq); s.Deleted != 0 || s.MovedToDLQ != 0 || s.StaleDeletes != 0 {
		t.Errorf("DLQ stats after inspection: %+v", s)
	}
	if n := e.depth(e.dlq); n != 30 {
		t.Errorf("DLQ holds %d messages, want 30", n)
	}
	contains(t, "table", e.out.String(), "MESSAGE ID", "redrive", "consumer", "poison: unknown major version 2", "sha256:0123456789ab")
	// The saved file has the receive-message shape and reads back.
	contains(t, "saved JSON", saved.String(), `"MessageAttributes":{`, `"DataType":"String"`, `"ApproximateReceiveCount":"5"`, `"DeadLetterQueueSourceArn":`)
	back, err := dlq.ReadMessages(&saved)
	if err != nil || len(back) != 30 {
		t.Fatalf("ReadMessages = %d, %v", len(back), err)
	}
	byOrigin := map[bool]int{}
	for i, m := range back {
		_, ok := sqsbatch.ParseDeadLetter(m.MessageAttributes)
		byOrigin[ok]++
		if aws.ToString(m.MessageId) != aws.ToString(msgs[i].MessageId) || m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)] == "" {
			t.Fatalf("saved message %d differs: %+v", i, m)
		}
	}
	if byOrigin[true] != 10 || byOrigin[false] != 20 {
		t.Errorf("saved mf-* attributes: %v", byOrigin)
	}

	// A DLQ that has a redrive policy of its own: receiving would count.
	dlq2, _ := e.fake.CreateQueue("final", localaws.QueueConfig{})
	mid, _ := e.fake.CreateQueue("mid", localaws.QueueConfig{Redrive: &localaws.RedrivePolicy{DeadLetterTargetARN: e.fake.ARN(dlq2), MaxReceiveCount: 1}})
	if _, err := e.fake.CreateQueue("top", localaws.QueueConfig{Redrive: &localaws.RedrivePolicy{DeadLetterTargetARN: e.fake.ARN(mid), MaxReceiveCount: 1}}); err != nil {
		t.Fatal(err)
	}
	e.fake.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &mid, MessageBody: aws.String("x")})
	tgMid, err := e.tool.Resolve(ctx, mid, "")
	if err != nil || tgMid.DLQ.URL != mid {
		t.Fatalf("Resolve(mid) = %+v, %v", tgMid, err)
	}
	for range 3 {
		if _, err := e.tool.Inspect(ctx, tgMid, 10, nil); !errors.Is(err, dlq.ErrRefused) || !strings.Contains(err.Error(), "has a redrive policy") {
			t.Fatalf("inspecting a DLQ with its own redrive policy: %v", err)
		}
	}
	if e.depth(dlq2) != 0 || e.fake.Stats(mid).Received != 0 {
		t.Errorf("inspection pushed messages on: final holds %d, mid received %d", e.depth(dlq2), e.fake.Stats(mid).Received)
	}
}

func TestInspectEmpty(t *testing.T) {
	e := newEnv(t)
	_, err := e.tool.Inspect(context.Background(), e.target("Pedidos", "dev"), 10, nil)
	if !errors.Is(err, dlq.ErrEmpty) || !strings.Contains(err.Error(), "returned no message") {
		t.Fatalf("empty DLQ: %v", err)
	}
}

// TestRedriveLoopRate: 200 messages a consumer dead-lettered go back with
// the loop at 10 msg/s, within 10% (virtual time), restored attributes.
func TestRedriveLoopRate(t *testing.T) {
	e := newEnv(t)
	e.consumerSent(200, "permanent", "warehouse: sku 7501031311309 has no location", order(1))
	res, err := e.tool.Redrive(context.Background(), e.target("Pedidos", "dev"), dlq.RedriveOptions{ConfirmFixed: true, Only: []dlq.Verdict{dlq.Data}})
	if err != nil {
		t.Fatalf("Redrive: %v\n%s", err, e.log)
	}
	if res.Moved != 200 || e.depth(e.src) != 200 || e.depth(e.dlq) != 0 {
		t.Fatalf("moved %d; source %d, DLQ %d", res.Moved, e.depth(e.src), e.depth(e.dlq))
	}
	first, last := e.sentTimes[0], e.sentTimes[len(e.sentTimes)-1]
	got := float64(len(e.sentTimes)-1) / last.Sub(first).Seconds()
	if math.Abs(got-10)/10 > 0.10 {
		t.Errorf("rate %.2f msg/s over %s, want 10 ± 10%%", got, last.Sub(first))
	}
	// Every window of one second holds at most 10 sends (+1 for the bucket's edge).
	for i := range e.sentTimes {
		j := i
		for j < len(e.sentTimes) && e.sentTimes[j].Sub(e.sentTimes[i]) < time.Second {
			j++
		}
		if j-i > 11 {
			t.Fatalf("%d sends within one second from %s", j-i, e.sentTimes[i])
		}
	}
	st, _ := e.fake.Inspect(e.src)
	for _, s := range st {
		if _, ok := s.MessageAttributes[sqsbatch.AttrFailureClass]; ok || aws.ToString(s.MessageAttributes["tipo"].StringValue) != "PedidoConfirmado" {
			t.Fatalf("redriven message attributes %v: want the originals without mf-*", s.MessageAttributes)
		}
	}
	contains(t, "progress", e.log.String(), "msg/s", "ETA")
	contains(t, "summary", e.out.String(), "moved 200 of 200", "next: mf-dlq verify")
}

// TestRedriveMixedOriginsUsesLoop: one consumer-sent message among SQS-moved
// ones rules out the move task (SQS does not know its source).
func TestRedriveMixedOriginsUsesLoop(t *testing.T) {
	e := newEnv(t)
	e.redriven(5, order(1))
	e.consumerSent(1, "poison", "unknown major version 2", order(2))
	res, err := e.tool.Redrive(context.Background(), e.target("Pedidos", "dev"), dlq.RedriveOptions{ConfirmFixed: true, Only: []dlq.Verdict{dlq.Transient, dlq.Poison}})
	if err != nil || res.Moved != 6 || e.depth(e.src) != 6 {
		t.Fatalf("Redrive = %+v, %v; source %d", res, err, e.depth(e.src))
	}
	_, err = e.tool.Redrive(context.Background(), e.target("Pedidos", "dev"), dlq.RedriveOptions{ConfirmFixed: true})
	if !errors.Is(err, dlq.ErrEmpty) {
		t.Errorf("second redrive of an empty DLQ: %v", err)
	}
}

func TestRedriveRefusals(t *testing.T) {
	ctx := context.Background()
	t.Run("not confirmed", func(t *testing.T) {
		e := newEnv(t)
		e.redriven(3, order(1))
		_, err := e.tool.Redrive(ctx, e.target("Pedidos", "dev"), dlq.RedriveOptions{})
		if !errors.Is(err, dlq.ErrRefused) || !strings.Contains(err.Error(), "--confirm-fixed") || e.depth(e.dlq) != 3 {
			t.Fatalf("%v", err)
		}
	})
	t.Run("poison or data not named", func(t *testing.T) {
		e := newEnv(t)
		e.redriven(3, order(1))
		e.redriven(2, order(2))
		e.consumerSent(2, "permanent", "x", order(1))
		_, err := e.tool.Redrive(ctx, e.target("Pedidos", "dev"), dlq.RedriveOptions{ConfirmFixed: true})
		if !errors.Is(err, dlq.ErrRefused) || !strings.Contains(err.Error(), "2 poison and 2 data") || e.depth(e.src) != 0 || e.depth(e.dlq) != 7 {
			t.Fatalf("%v; source %d, DLQ %d", err, e.depth(e.src), e.depth(e.dlq))
		}
		res, err := e.tool.Redrive(ctx, e.target("Pedidos", "dev"), dlq.RedriveOptions{ConfirmFixed: true, Only: []dlq.Verdict{dlq.Transient}})
		if err != nil || res.Moved != 3 || e.depth(e.src) != 3 || e.depth(e.dlq) != 4 {
			t.Fatalf("--only transient: %+v, %v; source %d, DLQ %d", res, err, e.depth(e.src), e.depth(e.dlq))
		}
	})
	t.Run("move task running", func(t *testing.T) {
		e := newEnv(t)
		e.redriven(30, order(1))
		if _, err := e.fake.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(e.fake.ARN(e.dlq)), MaxNumberOfMessagesPerSecond: aws.Int32(1)}); err != nil {
			t.Fatal(err)
		}
		_, err := e.tool.Redrive(ctx, e.target("Pedidos", "dev"), dlq.RedriveOptions{ConfirmFixed: true})
		if !errors.Is(err, dlq.ErrRefused) || !strings.Contains(err.Error(), "cancel-message-move-task --task-handle") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("not a DLQ", func(t *testing.T) {
		e := newEnv(t)
		plain, _ := e.fake.CreateQueue("plain", localaws.QueueConfig{})
		e.fake.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &plain, MessageBody: aws.String("x")})
		_, err := e.tool.Redrive(ctx, e.target("plain", ""), dlq.RedriveOptions{ConfirmFixed: true})
		if !errors.Is(err, dlq.ErrRefused) || !strings.Contains(err.Error(), "SNS subscription") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("empty", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.tool.Redrive(ctx, e.target("Pedidos", "dev"), dlq.RedriveOptions{ConfirmFixed: true})
		if !errors.Is(err, dlq.ErrEmpty) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("missing permission", func(t *testing.T) {
		e := newEnv(t)
		e.consumerSent(5, "permanent", "x", order(1))
		e.fake.SetFault(func(op, _ string) error {
			if op == "SendMessage" {
				return &smithy.GenericAPIError{Code: "AccessDenied", Message: "User is not authorized to perform: sqs:sendmessage"}
			}
			return nil
		})
		_, err := e.tool.Redrive(ctx, e.target("Pedidos", "dev"), dlq.RedriveOptions{ConfirmFixed: true, Only: []dlq.Verdict{dlq.Data}})
		if !strings.Contains(err.Error(), "missing permission: the caller lacks sqs:SendMessage") || !strings.Contains(err.Error(), "stays in the DLQ") {
			t.Fatalf("%v", err)
		}
		e.fake.SetFault(nil)
		e.clock.Advance(time.Minute)
		if e.depth(e.dlq) != 5 || e.depth(e.src) != 0 {
			t.Errorf("DLQ %d, source %d: nothing may move or be lost", e.depth(e.dlq), e.depth(e.src))
		}
	})
}

// TestRedriveInterrupted: Ctrl-C in the middle stops after the message in
// hand, releases the held ones, and loses nothing.
func TestRedriveInterrupted(t *testing.T) {
	e := newEnv(t)
	e.consumerSent(40, "permanent", "x", order(1))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.tool.SQS.(*recordingSQS).onSend = func(n int) {
		if n == 15 {
			cancel()
		}
	}
	res, err := e.tool.Redrive(ctx, e.target("Pedidos", "dev"), dlq.RedriveOptions{ConfirmFixed: true, Only: []dlq.Verdict{dlq.Data}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Redrive: %v", err)
	}
	if res.Moved != 15 || e.depth(e.src) != 15 || e.depth(e.dlq) != 25 {
		t.Fatalf("moved %d; source %d, DLQ %d", res.Moved, e.depth(e.src), e.depth(e.dlq))
	}
	st, _ := e.fake.Inspect(e.dlq)
	for _, s := range st {
		if s.InFlight {
			t.Fatalf("message %s left in flight: the stop must release it", s.MessageID)
		}
	}
}

// TestRedriveLeavesExpiredMessages: messages older than the consumer's
// 45-day replay window (by their confirmado_en, or by the consumer's own
// expired-idempotency-window verdict) stay in the DLQ, with a warning that
// names the consumer, and the redrive ends refused (ErrRefused); the others
// go back. --readmit-expired sends them too, each with the re-admission
// mark.
func TestRedriveLeavesExpiredMessages(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.redriven(3, confirmed(50*24*time.Hour))
	e.redriven(2, confirmed(24*time.Hour))
	e.consumerSent(1, "permanent", "permanent: expired-idempotency-window: preparacion:PED-2026-000000: confirmado_en 2026-10-01T07:00:00Z is 60 days old", confirmed(time.Hour))
	tg := e.target("Pedidos", "dev")
	res, err := e.tool.Redrive(ctx, tg, dlq.RedriveOptions{DryRun: true})
	if err != nil || res.Moved != 0 || e.depth(e.dlq) != 6 {
		t.Fatalf("dry run: %+v %v", res, err)
	}
	contains(t, "warning", e.log.String(), "4 of 6 messages are older than the replay window of mf-preparar-pedido (preparacion:<pedido_id>, a 45 days window)", "--readmit-expired")
	contains(t, "plan", e.out.String(), "receive → send → delete")

	res, err = e.tool.Redrive(ctx, tg, dlq.RedriveOptions{ConfirmFixed: true})
	if !errors.Is(err, dlq.ErrRefused) || res.Moved != 2 || res.Expired != 4 || e.depth(e.src) != 2 || e.depth(e.dlq) != 4 {
		t.Fatalf("Redrive = %+v, %v; source %d, DLQ %d", res, err, e.depth(e.src), e.depth(e.dlq))
	}
	contains(t, "summary", e.out.String(), "4 messages stay in mercadofresco-pedidos-fallidos-dev: older than")
	if _, err := e.tool.Redrive(ctx, tg, dlq.RedriveOptions{ConfirmFixed: true}); !errors.Is(err, dlq.ErrRefused) || e.depth(e.dlq) != 4 {
		t.Fatalf("only expired messages left: %v, DLQ %d", err, e.depth(e.dlq))
	}

	res, err = e.tool.Redrive(ctx, tg, dlq.RedriveOptions{ConfirmFixed: true, ReadmitExpired: true})
	if err != nil || res.Moved != 4 || res.Readmitted != 4 || e.depth(e.dlq) != 0 || e.depth(e.src) != 6 {
		t.Fatalf("re-admission: %+v, %v; source %d, DLQ %d", res, err, e.depth(e.src), e.depth(e.dlq))
	}
	st, _ := e.fake.Inspect(e.src)
	marked := 0
	for _, m := range st {
		if mark, ok := m.MessageAttributes[lambdaapi.AttrReadmision]; ok {
			marked++
			if ts, err := time.Parse(time.RFC3339, aws.ToString(mark.StringValue)); err != nil || e.clock.Now().Sub(ts) > time.Minute {
				t.Errorf("re-admission mark %q, want the time of the redrive", aws.ToString(mark.StringValue))
			}
		}
	}
	if marked != 4 {
		t.Fatalf("%d messages carry the re-admission mark, want the 4 expired ones", marked)
	}
}

// confirmed returns PedidoConfirmado bodies confirmed age before the
// environment's clock starts.
func confirmed(age time.Duration) func(int) string {
	return func(i int) string {
		return fmt.Sprintf(`{"version":1,"tipo":"PedidoConfirmado","pedido_id":"PED-2026-%06d","lineas":[{"sku":"750%07d","cantidad":1}],"confirmado_en":%q}`,
			i, i, t0.Add(-age).Format(time.RFC3339))
	}
}

// fakeLambda holds event source mappings by UUID and queue ARN.
type fakeLambda struct {
	mappings map[string]*lambdatypes.EventSourceMappingConfiguration
	byQueue  map[string][]string
}

func (f *fakeLambda) ListEventSourceMappings(_ context.Context, in *lambda.ListEventSourceMappingsInput, _ ...func(*lambda.Options)) (*lambda.ListEventSourceMappingsOutput, error) {
	out := &lambda.ListEventSourceMappingsOutput{}
	for _, id := range f.byQueue[aws.ToString(in.EventSourceArn)] {
		out.EventSourceMappings = append(out.EventSourceMappings, *f.mappings[id])
	}
	return out, nil
}

func (f *fakeLambda) UpdateEventSourceMapping(_ context.Context, in *lambda.UpdateEventSourceMappingInput, _ ...func(*lambda.Options)) (*lambda.UpdateEventSourceMappingOutput, error) {
	m := f.mappings[aws.ToString(in.UUID)]
	m.State = aws.String(map[bool]string{true: "Enabling", false: "Disabling"}[aws.ToBool(in.Enabled)])
	return &lambda.UpdateEventSourceMappingOutput{UUID: m.UUID, State: m.State, FunctionArn: m.FunctionArn}, nil
}

func mapping(state string) *lambdatypes.EventSourceMappingConfiguration {
	return &lambdatypes.EventSourceMappingConfiguration{UUID: aws.String("u-1"), FunctionArn: aws.String("arn:aws:lambda:eu-west-1:1:function:mf-preparar-pedido-dev"), State: aws.String(state)}
}

// fakeMetrics answers the AWS/SQS metrics of one queue by their name, or
// fails with err.
type fakeMetrics struct {
	values map[string][]float64
	err    error
}

func (f fakeMetrics) GetMetricData(_ context.Context, in *cloudwatch.GetMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	m := in.MetricDataQueries[0].MetricStat.Metric
	if f.err != nil || aws.ToString(m.Namespace) != "AWS/SQS" || aws.ToString(m.Dimensions[0].Name) != "QueueName" {
		return nil, cmp.Or(f.err, errors.New("not an SQS metric"))
	}
	return &cloudwatch.GetMetricDataOutput{MetricDataResults: []cwtypes.MetricDataResult{{Values: f.values[aws.ToString(m.MetricName)]}}}, nil
}

func TestContain(t *testing.T) {
	e := newEnv(t)
	e.consumerSent(3, "permanent", "x", order(1))
	lam := &fakeLambda{mappings: map[string]*lambdatypes.EventSourceMappingConfiguration{"u-1": mapping("Enabled")}, byQueue: map[string][]string{e.fake.ARN(e.src): {"u-1"}}}
	e.tool.Lambda, e.tool.CloudWatch = lam, fakeMetrics{values: map[string][]float64{"ApproximateAgeOfOldestMessage": {2520, 60}}}
	// Meanwhile, the consumer keeps dead-lettering: one message per sample.
	e.clock.onSleep = func() { e.consumerSent(1, "permanent", "x", order(1)) }
	res, err := e.tool.Contain(context.Background(), e.target("Pedidos", "dev"), 30*time.Second, 4, aws.Bool(false))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Growing || res.DLQDepth[0] != 3 || res.DLQDepth[3] != 6 {
		t.Errorf("depths %v growing=%v", res.DLQDepth, res.Growing)
	}
	if aws.ToString(lam.mappings["u-1"].State) != "Disabling" {
		t.Errorf("mapping not disabled: %+v", lam.mappings["u-1"])
	}
	contains(t, "contain", e.out.String(), "GROWING (+3", "age of oldest message: 42m0s", "is now Disabling", "retention period (4 days)", "--enable-consumer")
}

// TestVerify: VERIFIED only when the DLQ is at 0, the source's consumer
// is enabled, its backlog is empty or falling, and the deletions reached
// the count; an unreachable CloudWatch is unknown, never a yes.
func TestVerify(t *testing.T) {
	e := newEnv(t)
	lam := &fakeLambda{mappings: map[string]*lambdatypes.EventSourceMappingConfiguration{"u-1": mapping("Enabled")}, byQueue: map[string][]string{e.fake.ARN(e.src): {"u-1"}}}
	deleted := fakeMetrics{values: map[string][]float64{"NumberOfMessagesDeleted": {5, 7}}}
	e.tool.Lambda, e.tool.CloudWatch = lam, deleted
	tg := e.target("Pedidos", "dev")
	ctx := context.Background()
	if res, err := e.tool.Verify(ctx, tg, 10, t0.Add(-time.Hour), 30*time.Second); err != nil || !res.Verified {
		t.Fatalf("clean: %v %+v\n%s", err, res, e.out)
	}
	contains(t, "verify", e.out.String(), "VERIFIED:", "mapping u-1 Enabled", "deleted 12 messages")

	tests := []struct {
		name  string
		setup func() func()
		opts  verifyOpts
		want  string
	}{
		{"messages back in the DLQ", func() func() { e.consumerSent(2, "permanent", "x", order(1)); return e.drainDLQ }, verifyOpts{}, "holds 2 messages"},
		{"consumer disabled", func() func() {
			lam.mappings["u-1"] = mapping("Disabled")
			return func() { lam.mappings["u-1"] = mapping("Enabled") }
		}, verifyOpts{}, "is Disabled (mapping u-1)"},
		{"backlog not draining", func() func() { e.sendSource(3); return e.drainSource }, verifyOpts{window: time.Minute}, "3 messages waiting, not falling"},
		{"fewer deletions", func() func() { return func() {} }, verifyOpts{expect: 20}, "fewer than the 20 redriven"},
		{"CloudWatch unreachable", func() func() {
			e.tool.CloudWatch = fakeMetrics{err: errors.New("dial tcp: connection refused")}
			return func() { e.tool.CloudWatch = deleted }
		}, verifyOpts{expect: 10}, "unknown: CloudWatch unavailable"},
		{"no Lambda client", func() func() {
			e.tool.Lambda = nil
			return func() { e.tool.Lambda = lam }
		}, verifyOpts{}, "consumer of cola-mercadofresco-pedidos-dev: unknown"},
	}
	for _, tt := range tests {
		e.out.Reset()
		undo := tt.setup()
		res, err := e.tool.Verify(ctx, tg, tt.opts.expect, t0.Add(-time.Hour), cmp.Or(tt.opts.window, 30*time.Second))
		undo()
		if !errors.Is(err, dlq.ErrNotVerified) || res.Verified {
			t.Errorf("%s: %v %+v\n%s", tt.name, err, res, e.out)
		}
		contains(t, tt.name, e.out.String(), "NOT VERIFIED", tt.want)
	}
	// A backlog that falls while verify watches it is draining.
	e.out.Reset()
	e.sendSource(3)
	e.clock.onSleep = func() { e.drainSource(); e.sendSource(1) }
	res, err := e.tool.Verify(ctx, tg, 0, t0, time.Minute)
	e.clock.onSleep = nil
	if err != nil || !res.Verified {
		t.Errorf("draining: %v\n%s", err, e.out)
	}
	contains(t, "draining", e.out.String(), "backlog draining, 3 → 1")
}

type verifyOpts struct {
	expect int
	window time.Duration
}

func TestClassifyLive(t *testing.T) {
	e := newEnv(t)
	e.redriven(12, order(2))
	tg := e.target("Pedidos", "dev")
	r, err := e.tool.Classify(context.Background(), tg, 1000, dlq.ConsumerOptions(tg))
	if err != nil || r.Verdict != dlq.Poison || r.Total != 12 {
		t.Fatalf("Classify = %s (%d), %v", r.Verdict, r.Total, err)
	}
	if s := e.fake.Stats(e.dlq); s.Deleted != 0 {
		t.Errorf("classify deleted %d messages", s.Deleted)
	}
	var b bytes.Buffer
	dlq.PrintReport(&b, tg.DLQ.Name, r, e.tool.Command)
	contains(t, "report", b.String(), "verdict: POISON", "version 2, the consumer accepts 1", "consumer that accepts their schema",
		"then, once a consumer accepts version 2: mf-dlq redrive mercadofresco-pedidos-fallidos-dev --only poison --version 2 --confirm-fixed")
}

// TestRedriveWarnsUnknownConsumers: to a queue config/catalog does not
// know, messages first received more than the library's 24 h ago get a
// warning (their consumer's records may have expired).
func TestRedriveWarnsUnknownConsumers(t *testing.T) {
	e := newEnv(t)
	if _, err := e.fake.CreateQueue("otra-cola", localaws.QueueConfig{}); err != nil {
		t.Fatal(err)
	}
	e.consumerSent(2, "permanent", "rechazado", order(1))
	e.clock.Advance(30 * time.Hour)
	if _, err := e.tool.Redrive(context.Background(), e.target("Pedidos", "dev"), dlq.RedriveOptions{DryRun: true, To: "otra-cola"}); err != nil {
		t.Fatal(err)
	}
	contains(t, "warning", e.log.String(), "2 of 2 messages were first received more than 24h0m0s ago", "consumers of otra-cola")
}

// A message its consumer dead-letters for a missing key is poison to
// classify with the catalog's options: confirmado_en on the fan-out's
// queues, which the consumers require and the catalog once left out.
func TestConsumerOptionsCallAMissingKeyPoison(t *testing.T) {
	body := `{"version":1,"pedido_id":"P-1","cliente":{"id":"C","email":"a@example.com"},"lineas":[{"sku":"S","cantidad":1}],"referencia_cobro":"ch_1","total_centimos":100,"moneda":"EUR"}`
	for _, name := range []string{"Pedidos", "Correo", "AvisoERP"} {
		q, _, ok := catalog.Find(name)
		if !ok {
			t.Fatalf("no queue %s in the catalog", name)
		}
		m := types.Message{MessageId: aws.String("m"), Body: aws.String(body), Attributes: map[string]string{
			string(types.MessageSystemAttributeNameSentTimestamp): "1764457200000", string(types.MessageSystemAttributeNameApproximateReceiveCount): "5",
			string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn): "arn:aws:sqs:eu-west-1:1:q"}}
		r := dlq.Classify([]types.Message{m}, dlq.ConsumerOptions(&dlq.Target{Catalog: &q}))
		if r.Verdict != dlq.Poison || !strings.Contains(r.Messages[0].Why, lambdaapi.KeyConfirmadoEn) {
			t.Errorf("%s: %s (%s), want poison for the missing %s", name, r.Verdict, r.Messages[0].Why, lambdaapi.KeyConfirmadoEn)
		}
	}
}

// Every consumer of the catalogue has its content check, and classify calls
// what that check refuses poison (the consumer would dead-letter it again)
// and what it accepts not: per queue, a body that passes the envelope but
// breaks the consumer's Validate, and one that passes both.
func TestConsumerOptionsCallWhatTheConsumerRefusesPoison(t *testing.T) {
	now := time.Now().UTC()
	at := now.Add(-time.Minute).Format(time.RFC3339)
	confirmado := func(extra string) string {
		return `{"version":1,"pedido_id":"PED-2026-000001","confirmado_en":"` + at + `","cliente":{"id":"CLI-1","email":"ana@example.com"},` +
			`"total_centimos":1250,"moneda":"EUR","referencia_cobro":"ch_1",` + extra + `}`
	}
	creado := func(moneda string) string {
		return `{"version":"0","id":"e-1","detail-type":"PedidoCreado","source":"mercadofresco.tienda","detail":{"version":1,"pedido_id":"PED-2026-000001",` +
			`"cliente_id":"CLI-1","cliente":{"id":"CLI-1","email":"ana@example.com"},"total_centimos":1250,"moneda":"` + moneda + `",` +
			`"lineas":[{"sku":"S-1","cantidad":1,"precio_centimos":1250}],"token_tarjeta":"tok_1","creado_en":"` + at + `"}}`
	}
	movimiento := func(sku string) string {
		return `{"version":1,"tipo":"reserva","pedido_id":"PED-2026-000001","sku":"` + sku + `","cantidad":1,"secuencia":1,"emitido_en":"` + at + `"}`
	}
	for _, tc := range []struct {
		queue, valid, refused, why string
	}{
		{"Pedidos", confirmado(`"lineas":[{"sku":"S-1","cantidad":1}]`), confirmado(`"lineas":[{"sku":"S-1","cantidad":0}]`), "cantidad 0"},
		{"Correo", confirmado(`"lineas":[{"sku":"S-1","cantidad":1}]`), strings.Replace(confirmado(`"lineas":[]`), `"EUR"`, `"eur"`, 1), `moneda "eur"`},
		{"AvisoERP", confirmado(`"lineas":[{"sku":"S-1","cantidad":1}]`), strings.Replace(confirmado(`"lineas":[{"sku":"S-1","cantidad":1}]`), `1250`, `0`, 1), "total_centimos 0"},
		{"StockMovements", movimiento("S-1"), movimiento("S:1"), `sku "S:1"`},
		{"Inicio", creado("EUR"), creado("eur"), `moneda "eur"`},
	} {
		t.Run(tc.queue, func(t *testing.T) {
			q, _, ok := catalog.Find(tc.queue)
			if !ok {
				t.Fatalf("no queue %s in the catalog", tc.queue)
			}
			opts := dlq.ConsumerOptions(&dlq.Target{Catalog: &q})
			if opts.Content == nil {
				t.Fatalf("%s's consumer %s has no content check", tc.queue, q.Function)
			}
			for _, c := range []struct {
				body       string
				wantPoison bool
			}{{tc.valid, false}, {tc.refused, true}} {
				m := types.Message{MessageId: aws.String("m"), Body: aws.String(c.body), Attributes: map[string]string{
					string(types.MessageSystemAttributeNameSentTimestamp): fmt.Sprint(now.UnixMilli()), string(types.MessageSystemAttributeNameApproximateReceiveCount): "5",
					string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn): "arn:aws:sqs:eu-west-1:1:q"}}
				r := dlq.Classify([]types.Message{m}, opts)
				switch why := r.Messages[0].Why; {
				case c.wantPoison && (r.Verdict != dlq.Poison || !strings.Contains(why, tc.why)):
					t.Errorf("body with %s: %s (%s), want poison naming it", tc.why, r.Verdict, why)
				case c.wantPoison && !strings.Contains(r.Groups[0].Next, "fix the producer and do not redrive them"):
					t.Errorf("body with %s: next step %q, want it to say the same bodies must not be redriven when the data is wrong", tc.why, r.Groups[0].Next)
				case !c.wantPoison && r.Verdict != dlq.Transient:
					t.Errorf("valid body: %s (%s), want transient (the consumer would handle it)", r.Verdict, why)
				}
			}
		})
	}
	for _, q := range catalog.Queues {
		if dlq.ConsumerOptions(&dlq.Target{Catalog: &q}).Content == nil {
			t.Errorf("consumer %s of %s has no content check in lambdas/consumers", q.Function, q.Logical)
		}
	}
}
