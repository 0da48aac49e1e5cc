package confirmationmail_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mercadofresco/integration/internal/lambdatest"
	"github.com/mercadofresco/integration/internal/localaws"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/mercadofresco/integration/internal/testseed"
	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/confirmationmail"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/retry"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
)

var ddb *localaws.Dynalite

func TestMain(m *testing.M) { localaws.RunWithDynalite(m, &ddb) }

func newFakeSES(t *testing.T) *localaws.SES {
	f := localaws.NewSES("mf-correo-test")
	t.Cleanup(f.Close)
	return f
}

// sent counts the e-mails a fake provider really sent (2xx effects).
func sent(s *localaws.Service) int {
	n := 0
	for _, e := range s.Effects() {
		if e.Response.Status < 300 {
			n++
		}
	}
	return n
}

type world struct {
	q          *lambdatest.Queues
	ses        *localaws.SES
	sec        *localaws.Service
	envios     *confirmationmail.Envios
	store      *idempotency.Store
	sesBreaker *breaker.Breaker
	secBreaker *breaker.Breaker
	proc       *sqsbatch.Processor
}

type opts struct {
	breakers    bool
	secAttempts int
}

func newWorld(t *testing.T, o opts) *world {
	t.Helper()
	seed := testseed.New(t).Seed
	w := &world{q: lambdatest.NewQueues(t, "cola-mercadofresco-correo-confirmacion", lambdatest.QueueOptions{MaxReceiveCount: 5}), ses: newFakeSES(t)}
	w.sec = lambdatest.NewDependency(t, func(r localaws.ServiceRequest) localaws.ServiceResponse {
		var in confirmationmail.SolicitudCorreo
		if json.Unmarshal(r.Body, &in) != nil || r.Path != confirmationmail.PathCorreos || in.Para == "" {
			return localaws.JSON(422, `{"codigo":"correo_invalido"}`)
		}
		return localaws.JSON(202, fmt.Sprintf(`{"id":"sec-%s"}`, in.PedidoID))
	}, localaws.WithBearer(lambdatest.APIKey)).Service
	if o.breakers {
		rdb := localaws.StartRedis(t).Client(t)
		clk := retry.NewVirtualClock(time.Now())
		w.sesBreaker = lambdatest.Breaker(t, rdb, lambdaapi.NameSES, 3, clk.Now)
		w.secBreaker = lambdatest.Breaker(t, rdb, lambdaapi.NameCorreoSecundario, 2, clk.Now)
	}
	store, table := w.q.IdempotencyStore(t, ddb)
	w.store = store
	w.envios = &confirmationmail.Envios{DB: ddb.Client, Table: table, Now: w.q.Clock.Now}
	sesClient := sesv2.New(sesv2.Options{
		Region: "eu-west-1", BaseEndpoint: aws.String(w.ses.URL()), HTTPClient: w.ses.Client(),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
	}, confirmationmail.NewSESClientOptions)
	secClient := lambdatest.Client(t, lambdaapi.NameCorreoSecundario, w.sec, lambdatest.DepOptions{
		Attempts: o.secAttempts, Breaker: w.secBreaker, Seed: seed, ReadTimeout: time.Second,
	})
	mailer := &confirmationmail.Mailer{
		Primary:   &confirmationmail.SES{Client: sesClient, From: "pedidos@mercadofresco.example", ConfigurationSet: "mf-correo-test", Breaker: w.sesBreaker, Timeout: time.Second},
		Secondary: &confirmationmail.HTTPProvider{Client: secClient, From: "pedidos@mercadofresco.example"},
		Envios:    w.envios,
		Logger:    lambdatest.Logger(t),
	}
	plan, err := sqsconsumer.NewPlan(sqsconsumer.PlanConfig{MaxReceiveCount: w.q.MaxReceiveCount, Sender: w.q.Fake})
	lambdatest.Must(t, err)
	w.proc, err = confirmationmail.NewProcessor(w.q.Settings(), confirmationmail.Deps{OnceDeps: sqsconsumer.OnceDeps{Store: w.store, DLQ: w.q.Fake, Visibility: w.q.Fake, Plan: plan, Logger: lambdatest.Logger(t)}, Mailer: mailer})
	lambdatest.Must(t, err)
	return w
}

func pedido(id, email string) string {
	return fmt.Sprintf(`{"version":1,"pedido_id":%q,"cliente":{"id":"C-1","email":%q,"nombre":"Ana \"la\" García"},"lineas":[{"sku":"SKU-1","cantidad":2,"precio_centimos":2410}],"total_centimos":4820,"moneda":"EUR","referencia_cobro":"ch_1","confirmado_en":%q}`, id, email, lambdatest.ConfirmadoEn)
}

func (w *world) process(t *testing.T, recs ...events.SQSMessage) events.SQSEventResponse {
	t.Helper()
	resp, err := w.proc.Process(lambdatest.Ctx(t, 30*time.Second), events.SQSEvent{Records: recs})
	lambdatest.Must(t, err)
	return resp
}

func TestOneEmailPerOrderWithinAndAcrossBatches(t *testing.T) {
	w := newWorld(t, opts{})
	resp := w.process(t,
		w.q.Record("a", pedido("P-1", "ana@example.com")),
		w.q.Record("a", pedido("P-1", "ana@example.com")),
		w.q.Record("b", pedido("P-1", "ana@example.com")),
		w.q.Record("c", pedido("P-2", "luis@example.com")),
		w.q.Record("sin-correo", `{"version":1,"pedido_id":"P-3","total_centimos":100,"moneda":"EUR"}`),
		w.q.Record("correo-roto", pedido("P-4", "no-es-un-correo")),
		w.q.Record("v2", `{"version":2,"pedido_id":"P-5","cliente":{"email":"x@example.com"}}`),
		w.q.Record("moneda", strings.Replace(pedido("P-6", "eva@example.com"), `"EUR"`, `"eur"`, 1)),
	)
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v", resp.BatchItemFailures)
	}
	w.process(t, w.q.Record("d", pedido("P-2", "luis@example.com")), w.q.Record("e", pedido("P-1", "ana@example.com")))
	if n := sent(w.ses.Service); n != 2 || len(w.sec.Requests()) != 0 {
		t.Fatalf("SES sent %d e-mails and the secondary got %d requests; want 2 and 0", n, len(w.sec.Requests()))
	}
	w.q.RequireDeadLetters(t, map[string]string{
		"sin-correo":  `"cliente.email"`,
		"correo-roto": "is not an e-mail address",
		"v2":          "unknown major version 2",
		"moneda":      `moneda "eur" is not an ISO 4217 code`,
	})
}

// SES throttles: the e-mail goes through the secondary at once, in the same
// invocation; later deliveries of the order send nothing, even once SES is
// back.
func TestSESThrottlingFailsOverToTheSecondary(t *testing.T) {
	w := newWorld(t, opts{})
	w.ses.SetMode(localaws.SESThrottled)
	if resp := w.process(t, w.q.Record("a", pedido("P-1", "ana@example.com"))); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v", resp.BatchItemFailures)
	}
	w.ses.SetMode(localaws.SESSends)
	w.process(t, w.q.Record("b", pedido("P-1", "ana@example.com")))
	if s, p := sent(w.ses.Service), sent(w.sec); s != 0 || p != 1 {
		t.Fatalf("SES sent %d, secondary %d; want only the secondary, once", s, p)
	}
	if r := w.sec.Requests(); r[0].IdempotencyKey != "correo-confirmacion:P-1" {
		t.Fatalf("secondary got Idempotency-Key %q", r[0].IdempotencyKey)
	}
}

// SES's circuit opens after consecutive failures (500s); from then on the
// e-mails go to the secondary without a request to SES.
func TestSESCircuitOpenSendsThroughTheSecondary(t *testing.T) {
	w := newWorld(t, opts{breakers: true})
	w.ses.SetMode(localaws.SESFails)
	for i := range 5 {
		w.process(t, w.q.Record(fmt.Sprint(i), pedido(fmt.Sprintf("P-%d", i), "ana@example.com")))
	}
	if n := len(w.ses.Requests()); n != 3 {
		t.Fatalf("SES got %d requests, want 3 (its threshold): then the circuit is open", n)
	}
	if s, p := sent(w.ses.Service), sent(w.sec); s != 0 || p != 5 {
		t.Fatalf("SES sent %d, secondary %d; want 0 and 5", s, p)
	}
}

// Both providers unavailable (SES throttled, the secondary's circuit open):
// the e-mail waits 300 s as a delayed copy, not dead-lettered and not sent; when SES is
// back it is sent once, through SES.
func TestBothUnavailableDelaysTheEmail(t *testing.T) {
	w := newWorld(t, opts{breakers: true})
	ctx := lambdatest.Ctx(t, 30*time.Second)
	for range 2 { // open the secondary's circuit (threshold 2)
		call, err := w.secBreaker.Allow(ctx)
		lambdatest.Must(t, err)
		call.Done(ctx, errors.New("503"))
	}
	w.ses.SetMode(localaws.SESThrottled)
	w.q.Send(t, pedido("P-1", "ana@example.com"), "")
	_, resp := w.q.Pump(ctx, t, w.proc, 10)
	if got := lambdatest.Failures(resp); len(got) != 0 {
		t.Fatalf("failures %v, want none: the e-mail waits as a delayed copy", got)
	}
	st, err := w.q.Fake.Inspect(w.q.Source)
	lambdatest.Must(t, err)
	if len(st) != 1 || aws.ToString(st[0].MessageAttributes[sqsconsumer.AttrDeferrals].StringValue) != "1" ||
		st[0].VisibleAt.Sub(w.q.Clock.Now()) < 150*time.Second || st[0].VisibleAt.Sub(w.q.Clock.Now()) > 300*time.Second {
		t.Fatalf("source queue %+v, want one copy (mf-aplazamientos 1) delayed 150 to 300 s", st)
	}
	if len(w.sec.Requests()) != 0 || sent(w.ses.Service) != 0 {
		t.Fatal("something was sent")
	}
	w.ses.SetMode(localaws.SESSends)
	w.q.Drain(ctx, t, w.proc, 10, 5)
	if s, p := sent(w.ses.Service), len(w.sec.Requests()); s != 1 || p != 0 {
		t.Fatalf("SES sent %d, secondary got %d requests; want 1 and 0", s, p)
	}
	w.q.RequireDeadLetters(t, nil)
}

// The secondary received the e-mail and its answer was lost: it alone is
// asked again, with the same key, and answers with the first e-mail; SES is
// never asked, though it is back.
func TestSecondaryAnswerLostIsAskedAgainNeverSES(t *testing.T) {
	w := newWorld(t, opts{secAttempts: 1})
	w.ses.SetMode(localaws.SESThrottled)
	w.sec.Inject(localaws.Rule{Times: 1, Fault: localaws.Fault{HangAfterEffect: true}})
	ctx := lambdatest.Ctx(t, 30*time.Second)
	w.q.Send(t, pedido("P-1", "ana@example.com"), "")
	_, resp := w.q.Pump(ctx, t, w.proc, 10)
	if len(resp.BatchItemFailures) != 1 {
		t.Fatalf("failures %v, want the e-mail back for a retry; DLQ %+v; secondary %+v", resp.BatchItemFailures, w.q.DeadLetters(t), w.sec.Requests())
	}
	w.ses.SetMode(localaws.SESSends)
	sesBefore := len(w.ses.Requests())
	w.q.Drain(ctx, t, w.proc, 10, 5)
	if p := sent(w.sec); p != 1 || len(w.sec.Requests()) != 2 {
		t.Fatalf("secondary sent %d e-mails in %d requests, want 1 in 2", p, len(w.sec.Requests()))
	}
	if len(w.ses.Requests()) != sesBefore || sent(w.ses.Service) != 0 {
		t.Fatal("SES was asked after the secondary may have sent the e-mail")
	}
	w.q.RequireDeadLetters(t, nil)
}

// SES took the e-mail and its answer never came: it may have been sent.
// Neither SES nor the secondary is asked again; the message goes to the
// DLQ as envio_incierto, and so does every repeat.
func TestSESNoAnswerIsNeverSentAgain(t *testing.T) {
	w := newWorld(t, opts{})
	w.ses.Inject(localaws.Rule{Times: 1, Fault: localaws.Fault{HangAfterEffect: true}})
	w.process(t, w.q.Record("a", pedido("P-1", "ana@example.com")))
	w.process(t, w.q.Record("b", pedido("P-1", "ana@example.com")))
	if s, r, p := sent(w.ses.Service), len(w.ses.Requests()), len(w.sec.Requests()); s != 1 || r != 1 || p != 0 {
		t.Fatalf("SES sent %d in %d requests, secondary got %d; want 1, 1, 0", s, r, p)
	}
	w.q.RequireDeadLetters(t, map[string]string{"a": confirmationmail.CodeIncierto, "b": confirmationmail.CodeIncierto})
}

// A Lambda died after asking SES and before recording the answer (its
// idempotency lock has expired, its send record says "SES was asked"): the
// next delivery does not send again.
func TestCrashAfterAskingSESIsNeverSentAgain(t *testing.T) {
	w := newWorld(t, opts{})
	lambdatest.Must(t, w.envios.Begin(context.Background(), "correo-confirmacion:P-1", "ses"))
	w.process(t, w.q.Record("a", pedido("P-1", "ana@example.com")))
	if r, p := len(w.ses.Requests()), len(w.sec.Requests()); r != 0 || p != 0 {
		t.Fatalf("SES got %d requests, secondary %d; want none", r, p)
	}
	w.q.RequireDeadLetters(t, map[string]string{"a": "earlier delivery"})
}

// SES refuses the e-mail (content or address): a data error, to the DLQ;
// the secondary is not tried.
func TestRejectedEmailIsADataError(t *testing.T) {
	w := newWorld(t, opts{})
	w.ses.SetMode(localaws.SESRejects)
	w.process(t, w.q.Record("a", pedido("P-1", "ana@example.com")))
	if len(w.sec.Requests()) != 0 {
		t.Fatal("the secondary was tried for a rejected e-mail")
	}
	w.q.RequireDeadLetters(t, map[string]string{"a": "MessageRejected"})
	if d := w.q.DeadLetters(t)["a"]; d.Class != "permanent" {
		t.Fatalf("class %q", d.Class)
	}
}

func TestRender(t *testing.T) {
	var p eventsapi.PedidoConfirmado
	lambdatest.Must(t, json.Unmarshal([]byte(pedido("P-1", "ana@example.com")), &p))
	m := confirmationmail.Render(&p)
	for _, want := range []string{"P-1", "48,20 EUR", "Ana"} {
		if !strings.Contains(m.Texto, want) || !strings.Contains(m.HTML, want) {
			t.Errorf("e-mail lacks %q:\n%s\n%s", want, m.Texto, m.HTML)
		}
	}
	if strings.Contains(m.HTML, `"la"`) {
		t.Errorf("HTML not escaped: %s", m.HTML)
	}
}

// An e-mail redriven 46 days after its order was confirmed (both its
// records expired at 45 days) is refused before anything is claimed or
// sent: no second e-mail, the message dead-lettered as
// expired-idempotency-window. A duplicate 44 days later finds the records.
func TestEmailOlderThanItsWindowIsNotSentTwice(t *testing.T) {
	w := newWorld(t, opts{})
	body := pedido("P-VIEJO", "ana@example.com")
	w.process(t, w.q.Record("a", body))
	w.q.Clock.Advance(44 * 24 * time.Hour)
	w.process(t, w.q.Record("b", body))
	w.q.Clock.Advance(2 * 24 * time.Hour)
	w.process(t, w.q.Record("c", body))
	if n := sent(w.ses.Service); n != 1 || len(w.sec.Requests()) != 0 {
		t.Fatalf("SES sent %d e-mails, the secondary got %d requests; want one e-mail", n, len(w.sec.Requests()))
	}
	if n := len(w.ses.Requests()); n != 1 {
		t.Fatalf("SES was asked %d times, want once", n)
	}
	w.q.RequireExpired(t, "c")
	if n := len(w.q.DeadLetters(t)); n != 1 {
		t.Fatalf("DLQ holds %d messages, want only the expired one", n)
	}
}

// The send records must live as long as the window: a consumer whose send
// records would expire first refuses to start.
func TestSendRecordsShorterThanTheWindowAreRefused(t *testing.T) {
	w := newWorld(t, opts{})
	short := &confirmationmail.Envios{DB: ddb.Client, Table: "x", TTL: 19 * 24 * time.Hour}
	plan, err := sqsconsumer.NewPlan(sqsconsumer.PlanConfig{MaxReceiveCount: 5})
	lambdatest.Must(t, err)
	_, err = confirmationmail.NewProcessor(w.q.Settings(), confirmationmail.Deps{OnceDeps: sqsconsumer.OnceDeps{Store: w.store, Plan: plan}, Mailer: &confirmationmail.Mailer{Envios: short}})
	if err == nil || !strings.Contains(err.Error(), "send records live") {
		t.Fatalf("err = %v", err)
	}
}
