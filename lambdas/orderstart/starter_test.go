package orderstart_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"

	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/orderstart"
	"github.com/mercadofresco/integration/lambdas/signing"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// fakeSFN behaves like Step Functions for StartExecution on a standard
// state machine: a name is used once (ExecutionAlreadyExists afterwards;
// the real service answers a repeat with the same input on a running
// execution with its ARN instead, which the starter treats the same way).
type fakeSFN struct {
	mu         sync.Mutex
	executions map[string]string // name -> input
	calls      int
	starts     int // executions started
	fail       error
	// With now set, a name is forgotten ExecutionNameRetention after its
	// execution started, as Step Functions does (then it can start again).
	now     func() time.Time
	started map[string]time.Time
}

func newFake() *fakeSFN { return &fakeSFN{executions: map[string]string{}} }

func (f *fakeSFN) StartExecution(_ context.Context, in *sfn.StartExecutionInput, _ ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail != nil {
		return nil, f.fail
	}
	name := aws.ToString(in.Name)
	_, dup := f.executions[name]
	if dup && f.now != nil && f.now().Sub(f.started[name]) >= eventsapi.ExecutionNameRetention {
		dup = false // the name was forgotten
	}
	if dup {
		return nil, &types.ExecutionAlreadyExists{Message: aws.String("Execution Already Exists: '" + name + "'")}
	}
	f.executions[name] = aws.ToString(in.Input)
	f.starts++
	if f.now != nil {
		if f.started == nil {
			f.started = map[string]time.Time{}
		}
		f.started[name] = f.now()
	}
	return &sfn.StartExecutionOutput{ExecutionArn: aws.String(aws.ToString(in.StateMachineArn) + ":" + name)}, nil
}

const (
	smARN    = "arn:aws:states:eu-west-1:111111111111:stateMachine:mercadofresco-procesar-pedido"
	queueARN = "arn:aws:sqs:eu-west-1:111111111111:cola-mercadofresco-inicio-pedido"
)

// testKey signs the tests' events as the outbox publisher signs them;
// testKeys verifies with it.
var testKey = signing.Key{ID: "version-test", Secret: []byte("0123456789abcdef0123456789abcdef")}

type testKeys struct{ err error }

func (k testKeys) Verify(_ context.Context, c signing.Charge, sig string) error {
	if k.err != nil {
		return k.err
	}
	return signing.Verify([]signing.Key{testKey}, c, sig)
}

func pedido(pedidoID string, version int) eventsapi.PedidoCreado {
	return eventsapi.PedidoCreado{
		IDEvento: "out-" + pedidoID, CreadoEn: "2026-12-01T09:59:59Z", Version: version, PedidoID: pedidoID, ClienteID: "C-1",
		Cliente:       eventsapi.Cliente{ID: "C-1", Email: "c@example.com"},
		TotalCentimos: 4820, Moneda: "EUR", TokenTarjeta: "tok",
		Lineas: []eventsapi.Linea{{SKU: "S", Cantidad: 1, PrecioCentimos: 4820}},
	}
}

func sign(k signing.Key, p eventsapi.PedidoCreado) string {
	sig, _ := signing.Sign(k, signing.Charge{EventID: p.IDEvento, OrderID: p.PedidoID, AmountCents: p.TotalCentimos, Currency: p.Moneda, CardToken: p.TokenTarjeta})
	return sig
}

func event(t *testing.T, eventID, pedidoID string, version int) string {
	t.Helper()
	detail := pedido(pedidoID, version)
	detail.Firma = sign(testKey, detail)
	return envelope(eventID, detail)
}

func envelope(eventID string, detail eventsapi.PedidoCreado) string {
	d, _ := json.Marshal(detail)
	b, _ := json.Marshal(map[string]any{
		"version": "0", "id": eventID, "detail-type": "PedidoCreado", "source": "mercadofresco.tienda",
		"account": "111111111111", "time": "2026-12-01T10:00:00Z", "region": "eu-west-1", "resources": []string{},
		"detail": json.RawMessage(d),
	})
	return string(b)
}

// now is the tests' clock: the events' creado_en is a second before it.
var now = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func processor(t *testing.T, api orderstart.StartExecutionAPI, opts ...orderstart.Option) (*sqsbatch.Processor, *localaws.SQS, string) {
	t.Helper()
	if len(opts) == 0 {
		opts = []orderstart.Option{orderstart.WithClock(func() time.Time { return now })}
	}
	opts = append([]orderstart.Option{orderstart.WithVerifier(testKeys{})}, opts...)
	s, err := orderstart.New(api, smARN, slog.New(slog.DiscardHandler), opts...)
	if err != nil {
		t.Fatal(err)
	}
	sqs := localaws.NewSQS(localaws.SQSConfig{})
	dlq, _ := sqs.CreateQueue("cola-mercadofresco-inicio-pedido-dlq", localaws.QueueConfig{})
	cfg := orderstart.BatchConfig(s)
	cfg.DLQ, cfg.DLQRoutes = sqs, lambdaapi.DLQRoutes{"cola-mercadofresco-inicio-pedido": dlq}
	cfg.Logger = slog.New(slog.DiscardHandler)
	p, err := sqsbatch.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, sqs, dlq
}

func rec(id, body string) events.SQSMessage {
	return events.SQSMessage{MessageId: id, EventSourceARN: queueARN, Body: body,
		Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
}

// The outbox publishes at least once: the same order's event twice (two
// event ids: a crash replay re-publishes with the same detail) in one
// batch, and once more in a later batch, start ONE execution.
func TestDuplicateEventStartsOneExecution(t *testing.T) {
	fake := newFake()
	p, _, _ := processor(t, fake)
	ctx := context.Background()
	resp, err := p.Process(ctx, events.SQSEvent{Records: []events.SQSMessage{
		rec("m1", event(t, "ev-1", "P-4820", 1)),
		rec("m2", event(t, "ev-2", "P-4820", 1)),
		rec("m3", event(t, "ev-3", "P-9", 1)),
	}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("batch: %v %+v", err, resp.BatchItemFailures)
	}
	resp, err = p.Process(ctx, events.SQSEvent{Records: []events.SQSMessage{rec("m4", event(t, "ev-1", "P-4820", 1))}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("second batch: %v %+v", err, resp.BatchItemFailures)
	}
	if len(fake.executions) != 2 || fake.calls != 4 {
		t.Fatalf("executions %v after %d StartExecution calls; want 2 executions (P-4820 once, P-9)", fake.executions, fake.calls)
	}
	in := fake.executions["pedido-P-4820"]
	got, err := eventsapi.Parse[eventsapi.PedidoCreado]([]byte(in))
	if err != nil || got.PedidoID != "P-4820" || got.TokenTarjeta != "tok" {
		t.Fatalf("execution input %s: %v", in, err)
	}
}

func TestInvalidEventsArePoison(t *testing.T) {
	fake := newFake()
	p, sqs, dlq := processor(t, fake)
	other := strings.Replace(event(t, "ev-x", "P-1", 1), `"PedidoCreado"`, `"PedidoPagado"`, 1)
	noToken := strings.Replace(event(t, "ev-y", "P-2", 1), `"token_tarjeta":"tok"`, `"token_tarjeta":""`, 1)
	resp, err := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		rec("v2", event(t, "ev-v2", "P-3", 2)), rec("other", other), rec("notoken", noToken), rec("junk", "{"),
	}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("poison must be dead-lettered, not retried: %v %+v", err, resp.BatchItemFailures)
	}
	dead, _ := sqs.Inspect(dlq)
	if len(dead) != 4 || fake.calls != 0 {
		t.Fatalf("%d dead-lettered, %d StartExecution calls", len(dead), fake.calls)
	}
	var reasons []string
	for _, d := range dead {
		reasons = append(reasons, aws.ToString(d.MessageAttributes[sqsbatch.AttrFailureReason].StringValue))
	}
	all := strings.Join(reasons, "\n")
	for _, want := range []string{"unknown major version 2", "PedidoPagado", "token_tarjeta"} {
		if !strings.Contains(all, want) {
			t.Errorf("no reason mentions %q:\n%s", want, all)
		}
	}
}

// An event the outbox publisher did not sign as it reads is refused before
// StartExecution and reaches the DLQ at once with its reason; a failure to
// read the key comes back instead.
func TestForgedEventsAreRefused(t *testing.T) {
	forger := signing.Key{ID: testKey.ID, Secret: []byte("a forger's key of thirty-two byte")}
	cases := []struct {
		name   string
		forge  func(p *eventsapi.PedidoCreado)
		reason string
	}{
		{"missing signature", func(p *eventsapi.PedidoCreado) { p.Firma = "" }, "no signature"},
		{"wrong key", func(p *eventsapi.PedidoCreado) { p.Firma = sign(forger, *p) }, "does not match the charge"},
		{"unknown key", func(p *eventsapi.PedidoCreado) { p.Firma = sign(signing.Key{ID: "otra", Secret: testKey.Secret}, *p) }, "unknown signing key"},
		{"malformed", func(p *eventsapi.PedidoCreado) { p.Firma = "firmado" }, "malformed signature"},
		{"tampered amount", func(p *eventsapi.PedidoCreado) { p.TotalCentimos = 1 }, "does not match the charge"},
		{"tampered token", func(p *eventsapi.PedidoCreado) { p.TokenTarjeta = "tok_otro" }, "does not match the charge"},
		{"tampered currency", func(p *eventsapi.PedidoCreado) { p.Moneda = "USD" }, "does not match the charge"},
		{"another event's signature", func(p *eventsapi.PedidoCreado) { p.IDEvento = "out-otro" }, "does not match the charge"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake()
			p, sqs, dlq := processor(t, fake)
			detail := pedido("P-F", 1)
			detail.Firma = sign(testKey, detail)
			tc.forge(&detail)
			resp, err := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec("m1", envelope("ev-f", detail))}})
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("a forged event must be dead-lettered, not retried: %v %+v", err, resp.BatchItemFailures)
			}
			dead, _ := sqs.Inspect(dlq)
			if len(dead) != 1 || fake.calls != 0 {
				t.Fatalf("%d dead-lettered, %d StartExecution calls; want 1 and 0", len(dead), fake.calls)
			}
			reason := aws.ToString(dead[0].MessageAttributes[sqsbatch.AttrFailureReason].StringValue)
			if !strings.Contains(reason, "P-F") || !strings.Contains(reason, "no execution started") || !strings.Contains(reason, tc.reason) {
				t.Fatalf("DLQ reason %q does not name the order, the refusal and %q", reason, tc.reason)
			}
		})
	}
	t.Run("key unreadable", func(t *testing.T) {
		fake := newFake()
		s, _ := orderstart.New(fake, smARN, slog.New(slog.DiscardHandler), orderstart.WithVerifier(testKeys{err: errors.New("secrets manager unreachable")}),
			orderstart.WithClock(func() time.Time { return now }))
		if _, err := s.Start(context.Background(), []byte(event(t, "ev", "P-K", 1))); err == nil || errors.Is(err, failure.ErrPoison) || errors.Is(err, failure.ErrPermanent) || fake.calls != 0 {
			t.Fatalf("Start = %v with %d calls; want a transient error and no call", err, fake.calls)
		}
	})
}

func TestNewRequiresAVerifier(t *testing.T) {
	if _, err := orderstart.New(newFake(), smARN, nil); err == nil || !strings.Contains(err.Error(), "verifier") {
		t.Fatalf("New without WithVerifier = %v", err)
	}
}

func TestStartFailureIsRetried(t *testing.T) {
	fake := newFake()
	fake.fail = &types.ExecutionLimitExceeded{Message: aws.String("limit")}
	p, sqs, dlq := processor(t, fake)
	resp, err := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec("m1", event(t, "e", "P-1", 1))}})
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m1" {
		t.Fatalf("a throttled start must come back: %v %+v", err, resp.BatchItemFailures)
	}
	if dead, _ := sqs.Inspect(dlq); len(dead) != 0 {
		t.Fatalf("dead-lettered a transient failure: %v", dead)
	}
}

// A StartExecution error about the request itself is refused on every
// receive: it is dead-lettered at once with its reason, not retried until
// the redrive moves it without one. Throttling and service errors come back.
func TestPermanentStartErrorsAreDeadLettered(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		permanent bool
	}{
		{"InvalidExecutionInput", &types.InvalidExecutionInput{Message: aws.String("Input exceeds 262144 characters")}, true},
		{"ValidationException", &smithy.GenericAPIError{Code: "ValidationException", Message: "1 validation error"}, true},
		{"InvalidName", &types.InvalidName{Message: aws.String("bad name")}, true},
		{"ExecutionLimitExceeded", &types.ExecutionLimitExceeded{Message: aws.String("limit")}, false},
		{"ServiceUnavailable", &smithy.GenericAPIError{Code: "ServiceUnavailable", Message: "try later"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake()
			fake.fail = tc.err
			p, sqs, dlq := processor(t, fake)
			resp, err := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec("m1", event(t, "e", "P-1", 1))}})
			if err != nil {
				t.Fatal(err)
			}
			dead, _ := sqs.Inspect(dlq)
			if tc.permanent {
				if len(resp.BatchItemFailures) != 0 || len(dead) != 1 {
					t.Fatalf("%s: failures %+v, %d dead-lettered; want it dead-lettered once", tc.name, resp.BatchItemFailures, len(dead))
				}
				if reason := aws.ToString(dead[0].MessageAttributes[sqsbatch.AttrFailureReason].StringValue); !strings.Contains(reason, tc.name) {
					t.Errorf("reason %q does not name %s", reason, tc.name)
				}
				return
			}
			if len(resp.BatchItemFailures) != 1 || len(dead) != 0 {
				t.Fatalf("%s: failures %+v, %d dead-lettered; want it back in the queue", tc.name, resp.BatchItemFailures, len(dead))
			}
		})
	}
}

func TestExecutionName(t *testing.T) {
	long := strings.Repeat("x", 74)
	tests := []struct {
		id, want string
	}{
		{"P-4820", "pedido-P-4820"},
		{"2026_12_01-ab", "pedido-2026_12_01-ab"},
		{strings.Repeat("a", 73), "pedido-" + strings.Repeat("a", 73)},
	}
	for _, tc := range tests {
		if got := orderstart.ExecutionName(tc.id); got != tc.want {
			t.Errorf("ExecutionName(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
	seen := map[string]string{}
	for _, id := range []string{"a/b", "a:b", "a b", "a_b", long, long + "y", "pedido ñ", "<x>", "P-4820", "ped\x00ido", strings.Repeat("é", 100)} {
		n := orderstart.ExecutionName(id)
		if len(n) == 0 || len(n) > orderstart.MaxExecutionName {
			t.Errorf("ExecutionName(%q) = %q: length %d", id, n, len(n))
		}
		for _, r := range n {
			if !(r == '-' || r == '_' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')) {
				t.Errorf("ExecutionName(%q) = %q has %q", id, n, r)
			}
		}
		if n != orderstart.ExecutionName(id) {
			t.Errorf("ExecutionName(%q) is not deterministic", id)
		}
		if prev, dup := seen[n]; dup {
			t.Errorf("ids %q and %q share the execution name %q", prev, id, n)
		}
		seen[n] = id
	}
	// A clean id can never produce a hashed name.
	if n := orderstart.ExecutionName("a/b"); !strings.HasPrefix(n, orderstart.HashedPrefix) {
		t.Errorf("%q", n)
	}
}

func TestNewRequiresClientAndARN(t *testing.T) {
	if _, err := orderstart.New(nil, smARN, nil, orderstart.WithVerifier(testKeys{})); err == nil {
		t.Fatal("nil client accepted")
	}
	if _, err := orderstart.New(newFake(), "", nil, orderstart.WithVerifier(testKeys{})); err == nil {
		t.Fatal("empty ARN accepted")
	}
}

// A payment retry (intento >= 2) gets its own execution, once; the first
// attempt's name is unchanged, and no retry name equals a first-attempt name.
func TestPaymentRetryGetsItsOwnExecutionName(t *testing.T) {
	if got := orderstart.ExecutionNameFor("PED-1", 0); got != orderstart.ExecutionName("PED-1") || orderstart.ExecutionNameFor("PED-1", 1) != got {
		t.Fatalf("first attempt named %q, want %q", got, orderstart.ExecutionName("PED-1"))
	}
	seen := map[string]string{}
	for _, id := range []string{"PED-1", "PED-1_i2", "PED-2", strings.Repeat("x", 200), "ped/ñ"} {
		for intento := 1; intento <= 4; intento++ {
			n := orderstart.ExecutionNameFor(id, intento)
			if len(n) > orderstart.MaxExecutionName || !validName(n) {
				t.Fatalf("name %q for %q attempt %d is not a valid execution name", n, id, intento)
			}
			key := fmt.Sprintf("%s#%d", id, intento)
			if prev, dup := seen[n]; dup {
				t.Fatalf("%s and %s share the name %q", prev, key, n)
			}
			seen[n] = key
			if orderstart.ExecutionNameFor(id, intento) != n {
				t.Fatalf("name of %s is not stable", key)
			}
		}
	}
}

func validName(n string) bool {
	for _, r := range n {
		if !(r == '-' || r == '_' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')) {
			return false
		}
	}
	return n != ""
}

// Step Functions forgets an execution's name 90 days after the execution:
// an archive replay (or a late redrive) of an order event older than that
// would start a second execution and charge again. At 88 days the replay
// meets the name; at 91 days the starter refuses it before calling Step
// Functions, and dead-letters it as expired-idempotency-window.
func TestEventOlderThanItsWindowStartsNoSecondExecution(t *testing.T) {
	clock := now
	fake := newFake()
	fake.now = func() time.Time { return clock }
	p, sqs, dlq := processor(t, fake, orderstart.WithClock(func() time.Time { return clock }))
	ctx := context.Background()
	body := event(t, "ev-1", "P-ARCHIVO", 1)
	for i, at := range []time.Duration{0, 88 * 24 * time.Hour, 91 * 24 * time.Hour} {
		clock = now.Add(at)
		resp, err := p.Process(ctx, events.SQSEvent{Records: []events.SQSMessage{rec(fmt.Sprintf("m%d", i), body)}})
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("after %s: %v %+v", at, err, resp.BatchItemFailures)
		}
	}
	if fake.starts != 1 || fake.calls != 2 {
		t.Fatalf("%d executions started after %d StartExecution calls; want 1 execution and no call for the 91-day-old replay", fake.starts, fake.calls)
	}
	dead, _ := sqs.Inspect(dlq)
	if len(dead) != 1 {
		t.Fatalf("%d dead-lettered, want the expired replay", len(dead))
	}
	a := dead[0].MessageAttributes
	if aws.ToString(a[sqsbatch.AttrFailureClass].StringValue) != "permanent" || !strings.Contains(aws.ToString(a[sqsbatch.AttrFailureReason].StringValue), lambdaapi.ReasonExpiredWindow) {
		t.Fatalf("dead-lettered as %q: %s", aws.ToString(a[sqsbatch.AttrFailureClass].StringValue), aws.ToString(a[sqsbatch.AttrFailureReason].StringValue))
	}
}

// A window longer than Step Functions keeps names is refused.
func TestWindowLongerThanTheNameRetentionIsRefused(t *testing.T) {
	if _, err := orderstart.New(newFake(), smARN, nil, orderstart.WithVerifier(testKeys{}), orderstart.WithWindow(eventsapi.ExecutionNameRetention)); err == nil {
		t.Fatal("a 90-day window was accepted")
	}
	if eventsapi.StarterWindow >= eventsapi.ExecutionNameRetention {
		t.Fatalf("StarterWindow %s must stay below the name retention %s", eventsapi.StarterWindow, eventsapi.ExecutionNameRetention)
	}
}
