package payment_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mercadofresco/integration/internal/lambdatest"
	"github.com/mercadofresco/integration/internal/localaws"
	"log"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/mercadofresco/integration/internal/testseed"
	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/httpdep"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/payment"
	"github.com/mercadofresco/integration/lambdas/retry"
	"github.com/mercadofresco/integration/lambdas/signing"
)

// One dynalite for the package; each test gets its own table.
var ddb *localaws.Dynalite

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		runLambdaHelper() // the errorType test's child process
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	srv, err := localaws.LaunchDynalite(ctx)
	cancel()
	if err != nil {
		log.Fatalf("dynalite: %v", err)
	}
	ddb = srv
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

var tableSeq atomic.Int64

func store(t *testing.T) *idempotency.Store {
	s, _ := storeAndTable(t)
	return s
}

func storeAndTable(t *testing.T) (*idempotency.Store, string) {
	t.Helper()
	name := fmt.Sprintf("idem-%d-%d", os.Getpid(), tableSeq.Add(1))
	ddb.CreateTable(t, name, lambdaapi.IdempotencyKeyAttribute, "")
	s, err := idempotency.NewStore(ddb.Client, idempotency.Config{TableName: name})
	if err != nil {
		t.Fatal(err)
	}
	return s, name
}

const apiKey = "sk_test_1"

type rig struct {
	gw    *lambdatest.Gateway
	tasks *payment.Tasks
	clk   *retry.VirtualClock
	table string
}

type rigOpts struct {
	attempts    int
	readTimeout time.Duration
	budget      bool // the breaker's retry budget governs the retries
	breaker     *breaker.Breaker
	keys        httpdep.KeySource
	callBudget  bool // cap each operation's calls (payment.CallBudget)
}

func newRig(t *testing.T, o rigOpts) *rig {
	t.Helper()
	seed := testseed.New(t).Seed
	gw := lambdatest.NewGateway(apiKey)
	t.Cleanup(gw.Close)
	// Waits run on a virtual clock anchored on the wall clock (retry.Next
	// compares it with ctx deadlines): tests take no backoff time.
	clk := retry.NewVirtualClock(time.Now())
	opts := []retry.Option{retry.WithClock(clk), retry.WithRand(retry.NewSeeded(seed))}
	if o.budget {
		opts = append(opts, retry.WithBudget(o.breaker))
	}
	if o.attempts == 0 {
		o.attempts = 3
	}
	r, err := retry.New(retry.Policy{MaxAttempts: o.attempts}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if o.readTimeout == 0 {
		o.readTimeout = 2 * time.Second
	}
	if o.keys == nil {
		o.keys = httpdep.StaticKey(apiKey)
	}
	st, table := storeAndTable(t)
	cfg := httpdep.Config{BaseURL: gw.URL(), Keys: o.keys, Retrier: r, Breaker: o.breaker, ReadTimeout: o.readTimeout}
	if o.callBudget {
		b, err := payment.NewCallBudget(ddb.Client, table)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Calls = b
	}
	c, err := payment.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := payment.NewTasks(st, c, nil, payment.WithVerifier(testKeys{}))
	if err != nil {
		t.Fatal(err)
	}
	return &rig{gw: gw, tasks: tasks, clk: clk, table: table}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testKey is the signing key of these tests; testKeys verifies with it
// as the deployed function does with the secret's versions.
var testKey = signing.Key{ID: "version-test", Secret: []byte("0123456789abcdef0123456789abcdef")}

type testKeys struct{}

func (testKeys) Verify(_ context.Context, c signing.Charge, sig string) error {
	return signing.Verify([]signing.Key{testKey}, c, sig)
}

// signed is in as the workflow passes it: with its event id and the
// outbox publisher's signature of its charge.
func signed(in lambdaapi.CobroInput) lambdaapi.CobroInput {
	if in.IDEvento == "" {
		in.IDEvento = "evento-" + in.PedidoID
	}
	in.Firma, _ = signing.Sign(testKey, payment.ChargeOf(in))
	return in
}

func cobro(pedido string) lambdaapi.CobroInput {
	return signed(lambdaapi.CobroInput{PedidoID: pedido, ImporteCentimos: 4820, Moneda: "EUR", TokenTarjeta: "tok_visa"})
}

func errName(t *testing.T, err error) string {
	t.Helper()
	var te *payment.TaskError
	if !errors.As(err, &te) {
		t.Fatalf("error %v is not a *payment.TaskError", err)
	}
	return te.Name
}

// TestNoDoubleChargeAcrossTimeoutAfterCharge: the gateway charges and its
// answer never arrives.
func TestNoDoubleChargeAcrossTimeoutAfterCharge(t *testing.T) {
	t.Run("the client's own retry gets the first charge back", func(t *testing.T) {
		r := newRig(t, rigOpts{readTimeout: 200 * time.Millisecond})
		r.gw.Inject(localaws.Rule{Times: 1, Fault: localaws.Fault{HangAfterEffect: true}})
		out, err := r.tasks.Cobro(ctxT(t), cobro("PED-48-20"))
		if err != nil {
			t.Fatal(err)
		}
		if n := r.gw.ChargesFor("PED-48-20"); n != 1 {
			t.Fatalf("charged %d times", n)
		}
		reqs := r.gw.Requests()
		if len(reqs) != 2 || !reqs[1].Replayed || reqs[0].IdempotencyKey != "cobro:PED-48-20" || reqs[1].IdempotencyKey != reqs[0].IdempotencyKey {
			t.Fatalf("requests %+v: want the timed-out one and a replay with the same key", reqs)
		}
		if out.ReferenciaCobro != r.gw.Charges()[0].ID || out.ImporteCentimos != 4820 || out.Moneda != "EUR" {
			t.Errorf("output %+v", out)
		}
	})
	t.Run("the workflow's retry after the Lambda gave up", func(t *testing.T) {
		r := newRig(t, rigOpts{attempts: 1, readTimeout: 200 * time.Millisecond})
		r.gw.Inject(localaws.Rule{Times: 1, Fault: localaws.Fault{HangAfterEffect: true}})
		ctx := ctxT(t)
		_, err := r.tasks.Cobro(ctx, cobro("PED-1"))
		if name := errName(t, err); name != lambdaapi.ErrPasarelaNoDisponible {
			t.Fatalf("first invocation: %s, want %s (retried by the workflow)", name, lambdaapi.ErrPasarelaNoDisponible)
		}
		out, err := r.tasks.Cobro(ctx, cobro("PED-1"))
		if err != nil {
			t.Fatal(err)
		}
		again, err := r.tasks.Cobro(ctx, cobro("PED-1"))
		if err != nil || again != out {
			t.Fatalf("third invocation %+v %v, want %+v", again, err, out)
		}
		if n := r.gw.ChargesFor("PED-1"); n != 1 {
			t.Fatalf("charged %d times", n)
		}
		if n := len(r.gw.Requests()); n != 2 {
			t.Errorf("%d gateway requests, want 2 (the third invocation is answered by the idempotency table)", n)
		}
	})
	t.Run("reset after the charge", func(t *testing.T) {
		r := newRig(t, rigOpts{})
		r.gw.Inject(localaws.Rule{Times: 1, Fault: localaws.Fault{ResetAfterEffect: true}})
		if _, err := r.tasks.Cobro(ctxT(t), cobro("PED-2")); err != nil {
			t.Fatal(err)
		}
		if n := r.gw.ChargesFor("PED-2"); n != 1 {
			t.Fatalf("charged %d times", n)
		}
	})
}

func TestTransientFailuresAreRetried(t *testing.T) {
	for _, f := range []localaws.Fault{{Status: 500}, {Status: 502}, {Status: 503}, {Reset: true}, {Status: 429, RetryAfter: "1"}} {
		t.Run(f.Name(), func(t *testing.T) {
			r := newRig(t, rigOpts{})
			r.gw.Inject(localaws.Rule{Times: 2, Fault: f})
			if _, err := r.tasks.Cobro(ctxT(t), cobro("PED-3")); err != nil {
				t.Fatal(err)
			}
			if n, reqs := r.gw.ChargesFor("PED-3"), len(r.gw.Requests()); n != 1 || reqs != 3 {
				t.Fatalf("charges %d requests %d, want 1 and 3", n, reqs)
			}
			sleeps := r.clk.Sleeps()
			if len(sleeps) != 2 {
				t.Fatalf("waits %v", sleeps)
			}
			if f.Status == 429 {
				for _, d := range sleeps {
					if d < time.Second {
						t.Errorf("waited %s after Retry-After: 1", d)
					}
				}
			}
		})
	}
}

func TestNoRetryOn400Or402(t *testing.T) {
	r := newRig(t, rigOpts{})
	ctx := ctxT(t)
	declined := cobro("PED-4")
	declined.TokenTarjeta = lambdatest.DeclinedToken
	declined = signed(declined)
	for i := range 2 {
		_, err := r.tasks.Cobro(ctx, declined)
		if name := errName(t, err); name != lambdaapi.ErrTarjetaRechazada {
			t.Fatalf("attempt %d: %s", i, name)
		}
	}
	if n := len(r.gw.Requests()); n != 1 {
		t.Fatalf("%d gateway requests for a declined card called twice, want 1 (no retry; the repeat is answered from the table)", n)
	}
	r.gw.Inject(localaws.Rule{Times: 1, Fault: localaws.Fault{Status: 400}})
	_, err := r.tasks.Cobro(ctx, cobro("PED-5"))
	if name := errName(t, err); name != lambdaapi.ErrSolicitudInvalida {
		t.Fatalf("400: %s", name)
	}
	if n := len(r.gw.Requests()); n != 2 {
		t.Fatalf("400 was retried: %d requests", n)
	}
	if len(r.clk.Sleeps()) != 0 {
		t.Errorf("waited %v", r.clk.Sleeps())
	}
}

func TestInvalidInput(t *testing.T) {
	r := newRig(t, rigOpts{})
	ctx := ctxT(t)
	for _, in := range []lambdaapi.CobroInput{
		{ImporteCentimos: 1, Moneda: "EUR", TokenTarjeta: "t"},
		{PedidoID: "P", ImporteCentimos: 0, Moneda: "EUR", TokenTarjeta: "t"},
		{PedidoID: "P", ImporteCentimos: 1, Moneda: "eur", TokenTarjeta: "t"},
		{PedidoID: "P", ImporteCentimos: 1, Moneda: "EUR"},
		{PedidoID: "P:1", ImporteCentimos: 1, Moneda: "EUR", TokenTarjeta: "t"},
	} {
		if _, err := r.tasks.Cobro(ctx, in); errName(t, err) != lambdaapi.ErrSolicitudInvalida {
			t.Errorf("%+v: %v", in, err)
		}
	}
	h := r.tasks.CobroHandler()
	_, err := h(ctx, json.RawMessage(`{"pedido_id":"P","importe_centimos":48.20,"moneda":"EUR","token_tarjeta":"t"}`))
	var ie messages.InvokeResponse_Error
	if !errors.As(err, &ie) || ie.Type != lambdaapi.ErrSolicitudInvalida {
		t.Errorf("fractional cents: %#v", err)
	}
	if len(r.gw.Requests()) != 0 {
		t.Errorf("invalid input reached the gateway")
	}
}

// A direct invoke of cobro with anything but what the outbox publisher
// signed is refused as FirmaInvalida, and the gateway gets no request.
func TestCobroChargesOnlyWhatWasSigned(t *testing.T) {
	other := signing.Key{ID: testKey.ID, Secret: []byte("a forger's key of thirty-two byte")}
	cases := []struct {
		name   string
		in     func(lambdaapi.CobroInput) lambdaapi.CobroInput
		noKeys bool
		want   string
	}{
		{"changed amount", func(in lambdaapi.CobroInput) lambdaapi.CobroInput { in.ImporteCentimos = 1; return in }, false, "does not match the charge"},
		{"changed currency", func(in lambdaapi.CobroInput) lambdaapi.CobroInput { in.Moneda = "USD"; return in }, false, "does not match the charge"},
		{"changed card token", func(in lambdaapi.CobroInput) lambdaapi.CobroInput { in.TokenTarjeta = "tok_otro"; return in }, false, "does not match the charge"},
		{"another event's signature", func(in lambdaapi.CobroInput) lambdaapi.CobroInput { in.IDEvento = "otro"; return in }, false, "does not match the charge"},
		{"no signature", func(in lambdaapi.CobroInput) lambdaapi.CobroInput { in.Firma = ""; return in }, false, "no signature"},
		{"signed with another key", func(in lambdaapi.CobroInput) lambdaapi.CobroInput {
			in.Firma, _ = signing.Sign(other, payment.ChargeOf(in))
			return in
		}, false, "does not match the charge"},
		{"no key to verify with", func(in lambdaapi.CobroInput) lambdaapi.CobroInput { return in }, true, "holds no signing key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, rigOpts{})
			tasks := r.tasks
			if tc.noKeys {
				st, _ := storeAndTable(t)
				c, _ := payment.NewClient(httpdep.Config{BaseURL: r.gw.URL(), Keys: httpdep.StaticKey(apiKey)})
				tasks, _ = payment.NewTasks(st, c, nil)
			}
			_, err := tasks.CobroHandler()(ctxT(t), mustJSON(t, tc.in(cobro("PED-FIRMA"))))
			var ie messages.InvokeResponse_Error
			if !errors.As(err, &ie) || ie.Type != lambdaapi.ErrFirmaInvalida || !strings.Contains(ie.Message, tc.want) || !strings.Contains(ie.Message, "PED-FIRMA") {
				t.Fatalf("cobro = %#v, want errorType %s naming the order and %q", err, lambdaapi.ErrFirmaInvalida, tc.want)
			}
			if n := len(r.gw.Requests()); n != 0 {
				t.Fatalf("%d gateway requests for a refused charge", n)
			}
		})
	}
	// The workflow does not retry it: it is not a transient error.
	for _, e := range lambdaapi.PaymentErrors {
		if e.Name == lambdaapi.ErrFirmaInvalida && e.Retry {
			t.Fatal("FirmaInvalida is marked Retry")
		}
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRefundOnce(t *testing.T) {
	r := newRig(t, rigOpts{readTimeout: 200 * time.Millisecond})
	ctx := ctxT(t)
	ch, err := r.tasks.Cobro(ctx, cobro("PED-6"))
	if err != nil {
		t.Fatal(err)
	}
	in := lambdaapi.ReembolsoInput{PedidoID: "PED-6", ReferenciaCobro: ch.ReferenciaCobro, ImporteCentimos: 4820, Moneda: "EUR"}
	r.gw.Inject(localaws.Rule{Times: 1, Fault: localaws.Fault{HangAfterEffect: true}})
	a, err := r.tasks.Reembolso(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.tasks.Reembolso(ctx, in)
	if err != nil || a != b || a.ReferenciaReembolso == "" {
		t.Fatalf("repeat %+v %v, want %+v", b, err, a)
	}
	if n := len(r.gw.Refunds()); n != 1 {
		t.Fatalf("%d refunds", n)
	}
	for _, req := range r.gw.Requests()[1:] {
		if req.IdempotencyKey != "reembolso:PED-6" {
			t.Errorf("refund key %q", req.IdempotencyKey)
		}
	}
	// Refund of an unknown charge: a business refusal, recorded, not retried.
	_, err = r.tasks.Reembolso(ctx, lambdaapi.ReembolsoInput{PedidoID: "PED-7", ReferenciaCobro: "cob_999", ImporteCentimos: 1, Moneda: "EUR"})
	if name := errName(t, err); name != lambdaapi.ErrSolicitudInvalida {
		t.Errorf("unknown charge: %s", name)
	}
}

// A refund the order's recorded charge does not back is refused before the
// gateway is called, with a message that says why: an order never charged,
// another charge's reference, another currency, more than was charged, and
// a charge that was declined.
func TestRefundOnlyWhatTheOrderWasCharged(t *testing.T) {
	r := newRig(t, rigOpts{})
	ctx := ctxT(t)
	ch, err := r.tasks.Cobro(ctx, cobro("PED-20"))
	if err != nil {
		t.Fatal(err)
	}
	ok := lambdaapi.ReembolsoInput{PedidoID: "PED-20", ReferenciaCobro: ch.ReferenciaCobro, ImporteCentimos: ch.ImporteCentimos, Moneda: ch.Moneda}
	cases := []struct {
		name string
		in   func(lambdaapi.ReembolsoInput) lambdaapi.ReembolsoInput
		want string
	}{
		{"unknown order", func(in lambdaapi.ReembolsoInput) lambdaapi.ReembolsoInput { in.PedidoID = "PED-NUNCA"; return in }, "has no completed charge (cobro:PED-NUNCA)"},
		{"another charge", func(in lambdaapi.ReembolsoInput) lambdaapi.ReembolsoInput {
			in.ReferenciaCobro = "cob_otro"
			return in
		}, `referencia_cobro "cob_otro" is not the order's charge`},
		{"another currency", func(in lambdaapi.ReembolsoInput) lambdaapi.ReembolsoInput { in.Moneda = "USD"; return in }, "moneda USD is not the charge's EUR"},
		{"more than charged", func(in lambdaapi.ReembolsoInput) lambdaapi.ReembolsoInput { in.ImporteCentimos++; return in }, fmt.Sprintf("importe_centimos %d exceeds the %d charged", ch.ImporteCentimos+1, ch.ImporteCentimos)},
	}
	before := len(r.gw.Requests())
	for _, c := range cases {
		_, err := r.tasks.Reembolso(ctx, c.in(ok))
		var te *payment.TaskError
		if !errors.As(err, &te) || te.Name != lambdaapi.ErrSolicitudInvalida || !strings.Contains(te.Message, c.want) {
			t.Errorf("%s: %v, want %s saying %q", c.name, err, lambdaapi.ErrSolicitudInvalida, c.want)
		}
	}
	if n := len(r.gw.Requests()) - before; n != 0 {
		t.Errorf("%d gateway calls for refused refunds, want 0", n)
	}
	// A declined charge backs no refund.
	r.gw.Inject(localaws.Rule{Times: 1, Fault: localaws.Fault{Status: 402}})
	if _, err := r.tasks.Cobro(ctx, cobro("PED-21")); errName(t, err) != lambdaapi.ErrTarjetaRechazada {
		t.Fatalf("declined charge: %v", err)
	}
	_, err = r.tasks.Reembolso(ctx, lambdaapi.ReembolsoInput{PedidoID: "PED-21", ReferenciaCobro: "cob_x", ImporteCentimos: 1, Moneda: "EUR"})
	if te := (*payment.TaskError)(nil); !errors.As(err, &te) || !strings.Contains(te.Message, "has no completed charge") {
		t.Errorf("refund of a declined charge: %v", err)
	}
	// What the charge backs is refunded, and a partial refund too.
	ok.ImporteCentimos--
	if _, err := r.tasks.Reembolso(ctx, ok); err != nil {
		t.Fatalf("partial refund of the charge: %v", err)
	}
}

// secrets is a Secrets Manager stand-in whose value can change.
type secrets struct {
	mu    sync.Mutex
	value string
	reads int
}

func (s *secrets) GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(s.value)}, nil
}

func TestAPIKeyRefreshedOn401(t *testing.T) {
	sm := &secrets{value: `{"api_key":"` + apiKey + `"}`}
	clk := retry.NewVirtualClock(time.Now())
	keys := httpdep.NewSecretKey(sm, "arn:aws:secretsmanager:eu-west-1:111111111111:secret:pasarela", 0).WithClock(clk.Now)
	r := newRig(t, rigOpts{keys: keys})
	ctx := ctxT(t)
	if _, err := r.tasks.Cobro(ctx, cobro("PED-8")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.tasks.Cobro(ctx, cobro("PED-9")); err != nil {
		t.Fatal(err)
	}
	if sm.reads != 1 {
		t.Fatalf("secret read %d times for two charges, want 1 (cached)", sm.reads)
	}
	clk.Advance(2 * time.Second) // SecretKey refuses refreshes within 1 s of a read
	r.gw.SetAPIKey("sk_test_2")
	sm.mu.Lock()
	sm.value = "sk_test_2"
	sm.mu.Unlock()
	if _, err := r.tasks.Cobro(ctx, cobro("PED-10")); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if sm.reads != 2 || r.gw.ChargesFor("PED-10") != 1 {
		t.Fatalf("reads %d charges %d", sm.reads, r.gw.ChargesFor("PED-10"))
	}
}

// TestBreakerOpensAndFailsFast: against a private Redis, a gateway that
// keeps failing opens the shared circuit; the task then fails fast with
// CircuitoAbierto, without a request.
func TestBreakerOpensAndFailsFast(t *testing.T) {
	srv := localaws.StartRedis(t)
	br, err := breaker.New(breaker.NewRedisStore(srv.Client(t)), breaker.Config{
		Name: lambdaapi.GatewayDependency, KeyPrefix: localaws.RedisKeyPrefix(t), FailureThreshold: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, rigOpts{breaker: br, attempts: 2})
	r.gw.Inject(localaws.Rule{Fault: localaws.Fault{Status: 503}})
	ctx := ctxT(t)
	_, err = r.tasks.Cobro(ctx, cobro("PED-11"))
	if name := errName(t, err); name != lambdaapi.ErrPasarelaNoDisponible {
		t.Fatalf("first: %s", name)
	}
	_, err = r.tasks.Cobro(ctx, cobro("PED-12"))
	if name := errName(t, err); name != lambdaapi.ErrPasarelaNoDisponible {
		t.Fatalf("second: %s", name)
	}
	before := len(r.gw.Requests())
	if before != 4 {
		t.Fatalf("%d requests, want 4 (2 operations x 2 attempts)", before)
	}
	_, err = r.tasks.Cobro(ctx, cobro("PED-13"))
	if name := errName(t, err); name != lambdaapi.ErrCircuitoAbierto {
		t.Fatalf("after 4 failures: %s (%v)", name, err)
	}
	if after := len(r.gw.Requests()); after != before {
		t.Fatalf("the open circuit let %d requests through", after-before)
	}
}

// TestBudgetStopsRetriesUnderTotalFailure: with the gateway down (and the
// circuit kept closed), the retries of many operations sharing the
// breaker's budget stay near 10 %.
func TestBudgetStopsRetriesUnderTotalFailure(t *testing.T) {
	b, err := breaker.New(breaker.NewMemoryStore(), breaker.Config{Name: lambdaapi.GatewayDependency, FailureThreshold: 1000})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, rigOpts{attempts: 5, breaker: b, budget: true})
	r.gw.Inject(localaws.Rule{Fault: localaws.Fault{Status: 503}})
	ctx := ctxT(t)
	const ops = 60
	denied := 0
	for i := range ops {
		_, err := r.tasks.Cobro(ctx, cobro(fmt.Sprintf("PED-B%d", i)))
		if name := errName(t, err); name != lambdaapi.ErrPasarelaNoDisponible {
			t.Fatalf("%d: %s", i, name)
		}
		if errors.Is(err, retry.ErrBudgetExhausted) {
			denied++
		}
	}
	reqs := len(r.gw.Requests())
	t.Logf("%d requests for %d operations of up to 5 attempts; %d stopped by the budget", reqs, ops, denied)
	if limit := ops + ops/9 + breaker.RetryFloor + 1; reqs > limit {
		t.Fatalf("%d requests > %d: the budget did not stop the retries", reqs, limit)
	}
	if denied == 0 {
		t.Fatal("no retry was denied")
	}
}

// TestCallBudgetBoundsAnOperationAcrossExecutions: each execution of the
// workflow (and each payment retry of the customer) may make up to
// GATEWAY_MAX_ATTEMPTS calls per task run; the budget stops the order's
// charge at MaxGatewayCallsPerOperation calls in all, with an error the
// workflow does not retry, and other orders keep theirs.
func TestCallBudgetBoundsAnOperationAcrossExecutions(t *testing.T) {
	r := newRig(t, rigOpts{attempts: 4, callBudget: true})
	r.gw.Inject(localaws.Rule{Match: func(q localaws.ServiceRequest) bool { return q.IdempotencyKey == "cobro:PED-LIM" }, Fault: localaws.Fault{Status: 503}})
	ctx := ctxT(t)
	calls := func() int {
		n := 0
		for _, q := range r.gw.Requests() {
			if q.IdempotencyKey == "cobro:PED-LIM" {
				n++
			}
		}
		return n
	}
	var names []string
	for range 6 { // 6 task runs x up to 4 attempts = 24 calls without the budget
		_, err := r.tasks.Cobro(ctx, cobro("PED-LIM"))
		names = append(names, errName(t, err))
	}
	if got := calls(); got != lambdaapi.MaxGatewayCallsPerOperation {
		t.Fatalf("%d gateway calls for one order, want %d (errors %v)", got, lambdaapi.MaxGatewayCallsPerOperation, names)
	}
	if last := names[len(names)-1]; last != lambdaapi.ErrIntentosAgotados {
		t.Fatalf("errors %v: the last is not %s", names, lambdaapi.ErrIntentosAgotados)
	}
	if _, err := r.tasks.Cobro(ctx, cobro("PED-OTRO")); err != nil {
		t.Fatalf("another order: %v", err)
	}
}

// TestCallBudgetNotSpentByAnOpenCircuit: calls the breaker refuses are given
// back, so a long outage (the customer paying again every few minutes
// while the circuit is open) does not spend an order's budget.
func TestCallBudgetNotSpentByAnOpenCircuit(t *testing.T) {
	srv := localaws.StartRedis(t)
	br, err := breaker.New(breaker.NewRedisStore(srv.Client(t)), breaker.Config{
		Name: lambdaapi.GatewayDependency, KeyPrefix: localaws.RedisKeyPrefix(t), FailureThreshold: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, rigOpts{breaker: br, callBudget: true})
	r.gw.Inject(localaws.Rule{Fault: localaws.Fault{Status: 503}})
	ctx := ctxT(t)
	_, _ = r.tasks.Cobro(ctx, cobro("PED-ABRE")) // 3 failures open the circuit
	for i := range 20 {
		if _, err := r.tasks.Cobro(ctx, cobro("PED-ESPERA")); errName(t, err) != lambdaapi.ErrCircuitoAbierto {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	out, err := ddb.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(r.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{lambdaapi.IdempotencyKeyAttribute: &types.AttributeValueMemberS{Value: "cobro:PED-ESPERA#llamadas"}}})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := out.Item["llamadas"].(*types.AttributeValueMemberN); !ok || n.Value != "0" {
		t.Fatalf("budget item %v: refused calls were counted", out.Item)
	}
}

func TestEveryErrorNameIsListed(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range lambdaapi.PaymentErrors {
		if seen[e.Name] || e.Name == "" || strings.ContainsAny(e.Name, " .:") {
			t.Errorf("bad or duplicate name %q", e.Name)
		}
		seen[e.Name] = true
	}
	if len(seen) != 9 {
		t.Errorf("%d names", len(seen))
	}
}

func TestLoadSettings(t *testing.T) {
	env := lambdaenv.FromMap(map[string]string{
		"GATEWAY_URL": "https://pasarela.example", "GATEWAY_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:1:secret:x",
		"GATEWAY_MAX_ATTEMPTS": "2", "IDEMPOTENCY_TABLE_NAME": "t", "ENTORNO": "dev", "BREAKER_REDIS_ADDR": "cache.example:6379",
	})
	s, err := payment.LoadSettings(env)
	if err != nil {
		t.Fatal(err)
	}
	if s.Gateway.Policy.MaxAttempts != 2 || s.Gateway.ReadTimeout != lambdaapi.DefaultReadTimeout || !s.Breaker.RedisTLS || s.Breaker.FailureThreshold != 20 {
		t.Errorf("settings %+v", s)
	}
	_, err = payment.LoadSettings(lambdaenv.FromMap(map[string]string{"GATEWAY_MAX_ATTEMPTS": "99", "GATEWAY_URL": "ftp://x"}))
	for _, want := range []string{"GATEWAY_URL", "GATEWAY_SECRET_ARN", "GATEWAY_MAX_ATTEMPTS", "IDEMPOTENCY_TABLE_NAME", "ENTORNO", "BREAKER_REDIS_ADDR"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	_, err = payment.LoadSettings(lambdaenv.FromMap(map[string]string{
		"GATEWAY_URL": "https://p.example", "GATEWAY_SECRET_ARN": "a", "IDEMPOTENCY_TABLE_NAME": "t", "ENTORNO": "dev", "BREAKER_REDIS_ADDR": "no-port",
	}))
	if err == nil || !strings.Contains(err.Error(), "BREAKER_REDIS_ADDR") {
		t.Errorf("bad address: %v", err)
	}
}

// The error an operation gives up with (the Step Functions Cause an
// operator reads) names the failure once, with the retries' reason.
func TestGiveUpMessageNamesTheFailureOnce(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.gw.Inject(localaws.Rule{Fault: localaws.Fault{Status: 503}})
	_, err := r.tasks.Cobro(ctxT(t), cobro("PED-MSG"))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if n := strings.Count(msg, "gateway unavailable"); n != 1 || !strings.Contains(msg, "attempt") {
		t.Fatalf("message %q names the failure %d times or lacks the attempts", msg, n)
	}
}
