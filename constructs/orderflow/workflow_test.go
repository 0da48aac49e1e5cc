package orderflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/smithy-go"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/orderflow"
	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/internal/schematest"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

type fixture struct {
	p  *cdktest.Platform
	wf *orderflow.Workflow
}

func inlineFn(p *cdktest.Platform, id, name string) awslambda.Function {
	return awslambda.NewFunction(p.Stack, jsii.String(id), &awslambda.FunctionProps{
		FunctionName: jsii.String(name),
		Runtime:      awslambda.Runtime_NODEJS_22_X(),
		Handler:      jsii.String("index.handler"),
		Code:         awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({})")),
	})
}

func newFixture(t *testing.T, props orderflow.WorkflowProps) *fixture {
	t.Helper()
	return newFixtureOn(t, cdktest.NewPlatform("Flujo"), props)
}

func newFixtureOn(t *testing.T, p *cdktest.Platform, props orderflow.WorkflowProps) *fixture {
	t.Helper()
	if props.Charge == nil {
		props.Charge = inlineFn(p, "Cobro", "mf-cobro")
	}
	if props.Refund == nil {
		props.Refund = inlineFn(p, "Reembolso", "mf-reembolso")
	}
	if props.StockMovements == nil {
		props.StockMovements = awssqs.NewQueue(p.Stack, jsii.String("Stock"), &awssqs.QueueProps{
			QueueName: jsii.String("mercadofresco-movimientos-stock.fifo"), Fifo: jsii.Bool(true),
			EncryptionMasterKey: p.Key,
		})
	}
	if props.Confirmed == nil {
		props.Confirmed = awssns.NewTopic(p.Stack, jsii.String("Confirmado"), &awssns.TopicProps{
			TopicName: jsii.String("mercadofresco-pedido-confirmado"), MasterKey: p.Key,
		})
	}
	props.DataKey = p.Key
	props.Alerts = p.Alerts
	return &fixture{p: p, wf: orderflow.NewWorkflow(p.Stack, "Procesar", &props)}
}

func (f *fixture) template() map[string]any {
	return *assertions.Template_FromStack(f.p.Stack, nil).ToJSON()
}

func (f *fixture) definition(t *testing.T) map[string]any {
	t.Helper()
	tpl := f.template()
	id := *f.p.Stack.GetLogicalId(f.wf.StateMachine.Node().DefaultChild().(awscdk.CfnElement))
	def, err := localaws.WorkflowDefinition(tpl, id, cdktest.Region, cdktest.Account)
	if err != nil {
		t.Fatal(err)
	}
	return def
}

func order() eventsapi.PedidoCreado {
	return eventsapi.PedidoCreado{
		IDEvento: "0190-evt", CreadoEn: "2026-12-01T09:59:58.2Z", Version: 1, PedidoID: "P-4820", ClienteID: "C-7",
		Cliente:       eventsapi.Cliente{ID: "C-7", Email: "ana@example.com", Nombre: "Ana"},
		TotalCentimos: 4820, Moneda: "EUR", TokenTarjeta: "tok_abc", Firma: "v1.version.mac",
		Lineas: []eventsapi.Linea{{SKU: "SKU-MANZANA", Cantidad: 3, PrecioCentimos: 120}, {SKU: "SKU-PAN", Cantidad: 1, PrecioCentimos: 4460}},
	}
}

// scenario is one execution of the order with its Task states scripted;
// Retry and Wait states wait 0 ms unless realWaits.
type scenario struct {
	name      string
	tasks     map[string][]localaws.TaskStep
	realWaits bool
}

// run validates def as synthesised (ARNs and pseudo parameters substituted)
// with asl-validator and runs the scenarios in aws-local-stepfunctions, in
// one Node process.
func run(t *testing.T, def map[string]any, scenarios []scenario) map[string]*localaws.ExecutionResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sf := localaws.NewStepFunctions(t, 1, nil)
	if errs := sf.Validate(ctx, def); len(errs) > 0 {
		t.Fatalf("asl-validator rejects the synthesised definition: %v\n%v", errs, def)
	}
	start := time.Now()
	out := map[string]*localaws.ExecutionResult{}
	for _, sc := range scenarios {
		e := localaws.Execution{ARN: "arn:aws:states:eu-west-1:111111111111:execution:mercadofresco-procesar-pedido:" + sc.name, Name: sc.name, Input: input(t, order())}
		r, err := sf.Run(ctx, def, e, localaws.Script(sc.tasks), !sc.realWaits)
		if err != nil {
			t.Fatal(err)
		}
		out[sc.name] = &r
	}
	t.Logf("%d scenarios in %s", len(scenarios), time.Since(start).Round(time.Millisecond))
	return out
}

var (
	charged  = localaws.TaskOk(lambdaapi.CobroOutput{PedidoID: "P-4820", ReferenciaCobro: "ch_123", ImporteCentimos: 4820, Moneda: "EUR"})
	refunded = localaws.TaskOk(lambdaapi.ReembolsoOutput{PedidoID: "P-4820", ReferenciaReembolso: "re_9", ReferenciaCobro: "ch_123"})
	sent     = localaws.TaskOk(map[string]any{"MessageId": "m-1"})
	accepted = localaws.TaskOk(map[string]any{"Successful": []any{}, "Failed": []any{}})
)

// input is the workflow's input for p, as the starter builds it.
func input(t *testing.T, p eventsapi.PedidoCreado) string {
	t.Helper()
	detail, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	in, err := eventsapi.WorkflowInput(detail, p, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return string(in)
}

// batchEntries are the entries of a SendMessageBatch task's calls, as
// MovimientoStock, checked against what a line's movement must be: a valid
// body of kind tipo, FIFO group = sku, dedup = <tipo>:<pedido>:<sku>, the
// stock queue.
func batchEntries(t *testing.T, calls []json.RawMessage, tipo eventsapi.TipoMovimiento) []eventsapi.MovimientoStock {
	t.Helper()
	var out []eventsapi.MovimientoStock
	for _, raw := range calls {
		var send struct {
			QueueURL string `json:"QueueUrl"`
			Entries  []eventsapi.BatchEntry
		}
		mustJSON(t, raw, &send)
		if len(send.Entries) > eventsapi.MaxBatchEntries || !strings.HasSuffix(send.QueueURL, "/mercadofresco-movimientos-stock.fifo") {
			t.Fatalf("batch of %d entries to %s", len(send.Entries), send.QueueURL)
		}
		for _, e := range send.Entries {
			schematest.Validate(t, eventsapi.TypeMovimientoStock, eventsapi.MovimientoStockVersion, []byte(e.Body))
			m, err := eventsapi.Parse[eventsapi.MovimientoStock]([]byte(e.Body))
			if err != nil || m.Tipo != tipo || e.GroupID != m.SKU || e.DeduplicationID != m.DeduplicationID() || m.EmitidoEn == "" ||
				m.Secuencia != map[eventsapi.TipoMovimiento]int64{eventsapi.Reserva: eventsapi.SecuenciaReserva, eventsapi.Liberacion: eventsapi.SecuenciaLiberacion}[tipo] {
				t.Fatalf("entry %+v: %+v %v", e, m, err)
			}
			out = append(out, m)
		}
	}
	return out
}

// TestDefinitionExecutes runs the order scenarios on the definition as
// synthesised.
func TestDefinitionExecutes(t *testing.T) {
	f := newFixture(t, orderflow.WorkflowProps{})
	results := run(t, f.definition(t), []scenario{
		{name: "happy", tasks: map[string][]localaws.TaskStep{
			orderflow.StateCobrar: {charged}, orderflow.StateEnviarReservas: {accepted}, orderflow.StateConfirmar: {sent},
		}},
		{name: "transient then success", tasks: map[string][]localaws.TaskStep{
			// More throttles than the transient retrier's MaxAttempts: the
			// throttle retrier counts them (docs/design.md#payment-throttle).
			orderflow.StateCobrar: append(append([]localaws.TaskStep{localaws.TaskFail(lambdaapi.ErrPasarelaNoDisponible, "503 from the gateway")},
				slices.Repeat([]localaws.TaskStep{localaws.TaskFail(lambdaapi.ErrLambdaThrottled, "Rate exceeded")}, 5)...), charged),
			orderflow.StateEnviarReservas: {accepted}, orderflow.StateConfirmar: {sent},
		}},
		{name: "transient forever", tasks: map[string][]localaws.TaskStep{
			orderflow.StateCobrar: {localaws.TaskFail(lambdaapi.ErrPasarelaNoDisponible, "503 from the gateway")},
		}},
		{name: "card declined", tasks: map[string][]localaws.TaskStep{
			orderflow.StateCobrar: {localaws.TaskFail(lambdaapi.ErrTarjetaRechazada, "402: insufficient funds")},
		}},
		{name: "circuit open", tasks: map[string][]localaws.TaskStep{
			orderflow.StateCobrar: {localaws.TaskFail(lambdaapi.ErrCircuitoAbierto, "gateway circuit open")},
		}},
		{name: "forged signature", tasks: map[string][]localaws.TaskStep{
			orderflow.StateCobrar: {localaws.TaskFail(lambdaapi.ErrFirmaInvalida, "charge refused: not what the outbox publisher signed")},
		}},
		{name: "reservation fails after the charge", tasks: map[string][]localaws.TaskStep{
			orderflow.StateCobrar:             {charged},
			orderflow.StateEnviarReservas:     {localaws.TaskFail("SQS.KmsAccessDeniedException", "key disabled")},
			orderflow.StateEnviarLiberaciones: {accepted},
			orderflow.StateReembolsar:         {refunded},
		}},
		{name: "confirmation fails after the charge", tasks: map[string][]localaws.TaskStep{
			orderflow.StateCobrar: {charged}, orderflow.StateEnviarReservas: {accepted},
			orderflow.StateConfirmar:          {localaws.TaskFail("SNS.AuthorizationErrorException", "not authorised")},
			orderflow.StateEnviarLiberaciones: {accepted},
			orderflow.StateReembolsar:         {localaws.TaskFail(lambdaapi.ErrPasarelaNoDisponible, "503"), refunded},
		}},
		{name: "refund fails", tasks: map[string][]localaws.TaskStep{
			orderflow.StateCobrar: {charged}, orderflow.StateEnviarReservas: {localaws.TaskFail("SQS.X", "down")},
			orderflow.StateEnviarLiberaciones: {accepted},
			orderflow.StateReembolsar:         {localaws.TaskFail(lambdaapi.ErrRegistroInconsistente, "different amount")},
		}},
	})
	get := func(name string) *localaws.ExecutionResult { return results[name] }

	t.Run("happy path", func(t *testing.T) {
		r := get("happy")
		if r.Status != "SUCCEEDED" || !r.Entered(orderflow.StatePedidoConfirmado) {
			t.Fatalf("status %s %s: %s (states %v)", r.Status, r.Error, r.Cause, r.States)
		}
		// The charge got the order's amount, currency and token.
		var in lambdaapi.CobroInput
		mustJSON(t, r.Calls[orderflow.StateCobrar][0], &in)
		if in != (lambdaapi.CobroInput{PedidoID: "P-4820", ImporteCentimos: 4820, Moneda: "EUR", TokenTarjeta: "tok_abc", IDEvento: "0190-evt", Firma: "v1.version.mac"}) {
			t.Fatalf("cobro input %+v", in)
		}
		// One batch of the two lines' reservations.
		if n := r.CallCount(orderflow.StateEnviarReservas); n != 1 || len(batchEntries(t, r.Calls[orderflow.StateEnviarReservas], eventsapi.Reserva)) != 2 {
			t.Fatalf("%d batches, want one of the 2 lines", n)
		}
		// Cobrar, the Map, its batch, the check and its end, Confirmar, the end.
		if len(r.States) != 7 {
			t.Fatalf("%d state transitions, want 7: %v", len(r.States), r.States)
		}
		if r.CallCount(orderflow.StateReembolsar) != 0 || r.CallCount(orderflow.StateEnviarLiberaciones) != 0 {
			t.Fatal("compensation ran on the happy path")
		}
		// The confirmation is a valid PedidoConfirmado with the charge reference.
		var pub struct {
			TopicArn          string
			Message           json.RawMessage
			MessageAttributes map[string]struct{ DataType, StringValue string }
		}
		mustJSON(t, r.Calls[orderflow.StateConfirmar][0], &pub)
		msg := []byte(localaws.PublishedMessage(pub.Message))
		schematest.Validate(t, eventsapi.TypePedidoConfirmado, eventsapi.PedidoConfirmadoVersion, msg)
		c, err := eventsapi.Parse[eventsapi.PedidoConfirmado](msg)
		if err != nil {
			t.Fatalf("confirmation: %v (%s)", err, msg)
		}
		if c.ReferenciaCobro != "ch_123" || c.Cliente.Email != "ana@example.com" || c.TotalCentimos != 4820 || len(c.Lineas) != 2 || c.Ejecucion == "" || c.ConfirmadoEn == "" || c.CreadoEn != "2026-12-01T09:59:58.2Z" {
			t.Fatalf("confirmation %+v", c)
		}
		if !strings.HasSuffix(pub.TopicArn, ":mercadofresco-pedido-confirmado") ||
			pub.MessageAttributes[eventsapi.AttrTipo].StringValue != eventsapi.TypePedidoConfirmado ||
			pub.MessageAttributes[eventsapi.AttrVersion].StringValue != "1" {
			t.Fatalf("publish %+v", pub)
		}
	})

	t.Run("transient failure retried then success", func(t *testing.T) {
		r := get("transient then success")
		if r.Status != "SUCCEEDED" || r.CallCount(orderflow.StateCobrar) != 7 || len(r.Retries) != 6 {
			t.Fatalf("status %s %s, %d charges, retries %+v", r.Status, r.Error, r.CallCount(orderflow.StateCobrar), r.Retries)
		}
		checkRetrier(t, r.Retries[0].Retrier, f.wf.Retry)
		for _, rt := range r.Retries[1:] {
			if errs := rt.Retrier["ErrorEquals"].([]any); len(errs) != 1 || errs[0] != lambdaapi.ErrLambdaThrottled {
				t.Fatalf("a throttle retried by %v", rt.Retrier)
			}
		}
	})

	t.Run("retries stop at MaxAttempts", func(t *testing.T) {
		r := get("transient forever")
		want := 1 + int(f.wf.Retry.MaxAttempts)
		if r.Status != "FAILED" || r.Error != lambdaapi.ErrPasarelaNoDisponible || r.CallCount(orderflow.StateCobrar) != want {
			t.Fatalf("status %s error %s, %d charges (want %d)", r.Status, r.Error, r.CallCount(orderflow.StateCobrar), want)
		}
		if r.CallCount(orderflow.StateReembolsar) != 0 || !r.Entered(orderflow.StatePedidoFallido) {
			t.Fatalf("states %v", r.States)
		}
	})

	for _, tc := range []struct{ scenario, err string }{{"card declined", lambdaapi.ErrTarjetaRechazada}, {"circuit open", lambdaapi.ErrCircuitoAbierto}, {"forged signature", lambdaapi.ErrFirmaInvalida}} {
		t.Run(tc.scenario+": no retry, no refund, order failed", func(t *testing.T) {
			r := get(tc.scenario)
			if r.Status != "FAILED" || r.Error != tc.err || r.CallCount(orderflow.StateCobrar) != 1 || len(r.Retries) != 0 {
				t.Fatalf("status %s error %s cause %q, %d charges, retries %v", r.Status, r.Error, r.Cause, r.CallCount(orderflow.StateCobrar), r.Retries)
			}
			if r.CallCount(orderflow.StateReembolsar) != 0 || r.CallCount(orderflow.StateEnviarReservas) != 0 || !r.Entered(orderflow.StatePedidoFallido) {
				t.Fatalf("states %v", r.States)
			}
		})
	}

	t.Run("failure after the charge: refund and release", func(t *testing.T) {
		for _, name := range []string{"reservation fails after the charge", "confirmation fails after the charge"} {
			r := get(name)
			if r.Status != "FAILED" || !r.Entered(orderflow.StatePedidoFallido) || r.CallCount(orderflow.StateReembolsar) == 0 {
				t.Fatalf("%s: status %s error %s, states %v", name, r.Status, r.Error, r.States)
			}
			var in lambdaapi.ReembolsoInput
			mustJSON(t, r.Calls[orderflow.StateReembolsar][0], &in)
			if in != (lambdaapi.ReembolsoInput{PedidoID: "P-4820", ReferenciaCobro: "ch_123", ImporteCentimos: 4820, Moneda: "EUR"}) {
				t.Fatalf("%s: refund input %+v", name, in)
			}
			// Every line released, in one batch.
			if n := r.CallCount(orderflow.StateEnviarLiberaciones); n != 1 || len(batchEntries(t, r.Calls[orderflow.StateEnviarLiberaciones], eventsapi.Liberacion)) != 2 {
				t.Fatalf("%s: %d release batches, want one of 2 lines", name, n)
			}
		}
		// The SDK integrations' failures are retried before compensating.
		r := get("reservation fails after the charge")
		if r.Error != "SQS.KmsAccessDeniedException" || r.Cause != "key disabled" {
			t.Fatalf("the failed order must carry the original error: %s %q", r.Error, r.Cause)
		}
		if c := get("confirmation fails after the charge"); c.CallCount(orderflow.StateConfirmar) != 1+int(f.wf.Retry.MaxAttempts) || c.CallCount(orderflow.StateReembolsar) != 2 {
			t.Fatalf("confirm calls %d, refund calls %d", c.CallCount(orderflow.StateConfirmar), c.CallCount(orderflow.StateReembolsar))
		}
	})

	t.Run("failed compensation is named", func(t *testing.T) {
		r := get("refund fails")
		if r.Status != "FAILED" || r.Error != orderflow.ErrCompensacionFallida || !strings.Contains(r.Cause, "different amount") {
			t.Fatalf("status %s error %s cause %q", r.Status, r.Error, r.Cause)
		}
		if r.CallCount(orderflow.StateReembolsar) != 1 {
			t.Fatalf("RegistroInconsistente must not be retried: %d refunds", r.CallCount(orderflow.StateReembolsar))
		}
	})
}

func checkRetrier(t *testing.T, got map[string]any, want orderflow.RetryPolicy) {
	t.Helper()
	if got["IntervalSeconds"] != *want.Interval.ToSeconds(nil) || got["BackoffRate"] != want.BackoffRate ||
		got["MaxAttempts"] != want.MaxAttempts || got["MaxDelaySeconds"] != *want.MaxDelay.ToSeconds(nil) || got["JitterStrategy"] != "FULL" {
		t.Fatalf("retrier %v, want %+v with FULL jitter", got, want)
	}
}

func mustJSON(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
}

// The retry counts follow the configuration (not the defaults the first
// test happens to use), and the backoff parameters reach the definition.
func TestRetryFollowsConfiguration(t *testing.T) {
	f := newFixture(t, orderflow.WorkflowProps{Retry: orderflow.RetryPolicy{
		Interval: awscdk.Duration_Seconds(jsii.Number(1)), BackoffRate: 3, MaxAttempts: 2, MaxDelay: awscdk.Duration_Seconds(jsii.Number(1)),
	}})
	def := f.definition(t)
	var asl struct {
		States map[string]struct {
			Retry []map[string]any
		}
	}
	raw, _ := json.Marshal(def)
	mustJSON(t, raw, &asl)
	retry := asl.States[orderflow.StateCobrar].Retry
	if len(retry) != 2 {
		t.Fatalf("Cobrar has %d retriers, want the throttle's and the transient errors': %v", len(retry), retry)
	}
	n, _ := orderflow.ThrottleRetries()
	checkRetrier(t, retry[0], orderflow.RetryPolicy{Interval: awscdk.Duration_Seconds(jsii.Number(1)), BackoffRate: 2, MaxAttempts: float64(n), MaxDelay: awscdk.Duration_Seconds(jsii.Number(30))})
	if errs := retry[0]["ErrorEquals"].([]any); len(errs) != 1 || errs[0] != lambdaapi.ErrLambdaThrottled {
		t.Fatalf("the first retrier is not the throttle's alone: %v", errs)
	}
	checkRetrier(t, retry[1], f.wf.Retry)
	errs := retry[1]["ErrorEquals"].([]any)
	for _, e := range errs {
		if e == lambdaapi.ErrLambdaThrottled || e == lambdaapi.ErrTarjetaRechazada || e == lambdaapi.ErrCircuitoAbierto || e == lambdaapi.ErrFirmaInvalida || e == "States.ALL" {
			t.Fatalf("Cobrar retries %v", e)
		}
	}
	down := map[string][]localaws.TaskStep{orderflow.StateCobrar: {localaws.TaskFail(lambdaapi.ErrOperacionEnCurso, "locked")}}
	results := run(t, def, []scenario{{name: "down", tasks: down},
		// The real parameters, once: the engine waits as configured. With
		// a 1 s cap, the second wait (1 s x 3 uncapped) stays within 1 s.
		{name: "real waits", tasks: down, realWaits: true}})
	if r := results["down"]; r.CallCount(orderflow.StateCobrar) != 3 || len(r.Retries) != 2 {
		t.Fatalf("MaxAttempts 2: %d charges, retries %v", r.CallCount(orderflow.StateCobrar), r.Retries)
	}
	r := results["real waits"]
	times := r.CallTimes[orderflow.StateCobrar]
	if len(times) != 3 {
		t.Fatalf("real waits: %d charges", len(times))
	}
	const slack = 400 * time.Millisecond // the engine's own scheduling on a loaded machine
	for i := 1; i < len(times); i++ {
		if gap := times[i] - times[i-1]; gap < 0 || gap > time.Second+slack {
			t.Fatalf("wait before retry %d was %s; MaxDelaySeconds 1 caps it at 1 s (calls at %v)", i, gap, times)
		}
	}
	t.Logf("real waits (FULL jitter under a 1 s cap): charges at %v", times)
}

func TestInvalidPropsAreReported(t *testing.T) {
	p := cdktest.NewPlatform("Mal")
	orderflow.NewWorkflow(p.Stack, "Procesar", &orderflow.WorkflowProps{
		StockMovements: awssqs.NewQueue(p.Stack, jsii.String("Std"), nil),
		Retry:          orderflow.RetryPolicy{BackoffRate: 0.5, MaxAttempts: 11},
	})
	errs := cdktest.Errors(p.Stack)
	for _, want := range []string{"Charge", "Refund", "must be a FIFO queue", "Confirmed", "DataKey", "Alerts", "BackoffRate", "MaxAttempts"} {
		cdktest.RequireContains(t, errs, want)
	}
}

// The state machine as synthesised: standard, logs ALL to an encrypted
// log group, X-Ray, the data key, and the three execution alarms.
func TestStateMachineResource(t *testing.T) {
	f := newFixture(t, orderflow.WorkflowProps{})
	tpl := assertions.Template_FromStack(f.p.Stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::StepFunctions::StateMachine"), map[string]any{
		"StateMachineName":     orderflow.StateMachineName,
		"StateMachineType":     "STANDARD",
		"TracingConfiguration": map[string]any{"Enabled": true},
		"LoggingConfiguration": map[string]any{
			"Level": "ALL", "IncludeExecutionData": false,
			"Destinations": []any{map[string]any{"CloudWatchLogsLogGroup": map[string]any{"LogGroupArn": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^ProcesarLogs")), "Arn"}}}}},
		},
		"EncryptionConfiguration": assertions.Match_ObjectLike(&map[string]any{"Type": "CUSTOMER_MANAGED_KMS_KEY"}),
	})
	tpl.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{
		"LogGroupName": "/aws/vendedlogs/states/" + orderflow.StateMachineName, "KmsKeyId": assertions.Match_AnyValue(),
	})
	for metric, threshold := range map[string]float64{"ExecutionsFailed": orderflow.FailedThreshold, "ExecutionsTimedOut": 0, "ExecutionThrottled": 0} {
		tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
			"MetricName": metric, "Namespace": "AWS/States", "Threshold": threshold, "Statistic": "Sum",
			"AlarmActions": assertions.Match_AnyValue(), "OKActions": assertions.Match_AnyValue(),
		})
	}
}

// TestWorkflowRoleIsAdmittedByTheQueueAndTopic: the state machine's role
// passes the producer guards of the stock queue and the confirmed topic:
// by reference in one stack, by its RoleName across stacks (a reference
// would be a cycle), and a queue of another stack without RoleName is a
// synthesis error.
func TestWorkflowRoleIsAdmittedByTheQueueAndTopic(t *testing.T) {
	guardRoles := func(stack awscdk.Stack) string {
		tpl := assertions.Template_FromStack(stack, nil)
		q, _ := json.Marshal(tpl.FindResources(jsii.String("AWS::SQS::QueuePolicy"), nil))
		tp, _ := json.Marshal(tpl.FindResources(jsii.String("AWS::SNS::TopicPolicy"), nil))
		return string(q) + string(tp)
	}
	t.Run("one stack", func(t *testing.T) {
		f := newFixture(t, orderflow.WorkflowProps{})
		if errs := cdktest.Errors(f.p.Stack); len(errs) > 0 {
			t.Fatalf("errors: %v", errs)
		}
		role := *f.p.Stack.GetLogicalId(f.wf.StateMachine.Role().Node().DefaultChild().(awscdk.CfnElement))
		if got := strings.Count(guardRoles(f.p.Stack), `"Fn::GetAtt":["`+role+`","Arn"]`); got != 2 {
			t.Errorf("the role is admitted by %d guards, want the queue's and the topic's", got)
		}
	})
	t.Run("another stack", func(t *testing.T) {
		p := cdktest.NewPlatform("Flujo")
		messaging := cdktest.NewStackIn(p.App, "Mensajeria")
		queue := awssqs.NewQueue(messaging, jsii.String("Stock"), &awssqs.QueueProps{QueueName: jsii.String("stock.fifo"), Fifo: jsii.Bool(true)})
		topic := awssns.NewTopic(messaging, jsii.String("Confirmado"), nil)
		newFixtureOn(t, p, orderflow.WorkflowProps{StockMovements: queue, Confirmed: topic, RoleName: jsii.String("procesar-pedido-eu-west-1")})
		if errs := cdktest.Errors(p.Stack); len(errs) > 0 {
			t.Fatalf("errors: %v", errs)
		}
		assertions.Template_FromStack(p.Stack, nil).HasResourceProperties(jsii.String("AWS::IAM::Role"), map[string]any{"RoleName": "procesar-pedido-eu-west-1"})
		if got := strings.Count(guardRoles(messaging), "role/procesar-pedido-eu-west-1"); got != 2 {
			t.Errorf("the role is admitted by name by %d guards, want 2", got)
		}
	})
	t.Run("another stack without a role name", func(t *testing.T) {
		p := cdktest.NewPlatform("Flujo")
		messaging := cdktest.NewStackIn(p.App, "Mensajeria")
		queue := awssqs.NewQueue(messaging, jsii.String("Stock"), &awssqs.QueueProps{QueueName: jsii.String("stock.fifo"), Fifo: jsii.Bool(true)})
		newFixtureOn(t, p, orderflow.WorkflowProps{StockMovements: queue})
		cdktest.RequireContains(t, cdktest.Errors(p.Stack), "RoleName is required", "StockMovements")
	})
}

// TestFailedBatchEntryIsResent: the stock batches go to the SQS emulator,
// which fails entry "3" (the fourth line) of the first batches it sees. A
// batch answered with a failed entry is sent again (the accepted entries
// are dropped as duplicates): once failed, the order completes with every
// line reserved exactly once; failed on every send, the Map gives up after
// its resends and the compensation releases every line once.
func TestFailedBatchEntryIsResent(t *testing.T) {
	f := newFixture(t, orderflow.WorkflowProps{})
	def := f.definition(t)
	sf := localaws.NewStepFunctions(t, 1, nil)
	p := order()
	p.Lineas = nil
	for i := range 12 { // two batches: 10 and 2
		p.Lineas = append(p.Lineas, eventsapi.Linea{SKU: fmt.Sprintf("SKU-%02d", i), Cantidad: int64(i + 1)})
	}
	for _, tc := range []struct {
		name                   string
		failures               int // sends of entry "3" that fail
		status                 string
		reservations, releases int
	}{
		{"one failed send", 1, "SUCCEEDED", 12, 0},
		{"failed on every send", 1 + orderflow.ResendMaxAttempts, "FAILED", 11, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := localaws.NewSQS(localaws.SQSConfig{Region: cdktest.Region, Account: cdktest.Account})
			url, err := q.CreateQueue("mercadofresco-movimientos-stock.fifo", localaws.QueueConfig{})
			if err != nil {
				t.Fatal(err)
			}
			var asked atomic.Int64
			q.SetFault(func(op, target string) error {
				if op == "SendMessageBatchEntry" && target == "3" && asked.Add(1) <= int64(tc.failures) {
					return &smithy.GenericAPIError{Code: "InternalError", Message: "injected", Fault: smithy.FaultServer}
				}
				return nil
			})
			script := localaws.Script(map[string][]localaws.TaskStep{orderflow.StateCobrar: {charged}, orderflow.StateConfirmar: {sent}, orderflow.StateReembolsar: {refunded}})
			task := func(ctx context.Context, c localaws.TaskCall) (json.RawMessage, *localaws.TaskFailure) {
				if c.Resource == localaws.ResourceSendMessageBatch {
					return q.SendMessageBatchTask(ctx, c)
				}
				return script(ctx, c)
			}
			e := localaws.Execution{ARN: "arn:aws:states:eu-west-1:111111111111:execution:mercadofresco-procesar-pedido:x", Name: "x", Input: input(t, p)}
			r, err := sf.Run(context.Background(), def, e, task, true)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tc.status || tc.status == "FAILED" && (r.Error != orderflow.ErrEntradasFallidas || !r.Entered(orderflow.StatePedidoFallido)) {
				t.Fatalf("status %s %s %s, states %v", r.Status, r.Error, r.Cause, r.States)
			}
			msgs, _ := q.Inspect(url)
			count := map[string]int{}
			for _, m := range msgs {
				count[m.DeduplicationID]++
			}
			got := map[eventsapi.TipoMovimiento]int{}
			for _, l := range p.Lineas {
				for _, tipo := range []eventsapi.TipoMovimiento{eventsapi.Reserva, eventsapi.Liberacion} {
					switch n := count[string(tipo)+":P-4820:"+l.SKU]; {
					case n > 1:
						t.Errorf("%s of %s sent %d times", tipo, l.SKU, n)
					case n == 1:
						got[tipo]++
					}
				}
			}
			if got[eventsapi.Reserva] != tc.reservations || got[eventsapi.Liberacion] != tc.releases || len(msgs) != tc.reservations+tc.releases {
				t.Errorf("%d reservations and %d releases in %d messages, want %d and %d", got[eventsapi.Reserva], got[eventsapi.Liberacion], len(msgs), tc.reservations, tc.releases)
			}
		})
	}
}

// TestStockGrantsAreLeastPrivilege: the role may send to the stock queue
// (sqs:SendMessage authorises SendMessageBatch) and use its key for it,
// and nothing more on either.
func TestStockGrantsAreLeastPrivilege(t *testing.T) {
	f := newFixture(t, orderflow.WorkflowProps{})
	tpl := assertions.Template_FromStack(f.p.Stack, nil)
	only := func(typ string) string {
		ids := slices.Collect(maps.Keys(*tpl.FindResources(jsii.String(typ), nil)))
		if len(ids) != 1 {
			t.Fatalf("%d %s", len(ids), typ)
		}
		return ids[0]
	}
	queue, key := only("AWS::SQS::Queue"), only("AWS::KMS::Key")
	granted := map[string][]string{}
	for _, pol := range *tpl.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		var doc struct {
			Properties struct {
				PolicyDocument struct{ Statement []map[string]any }
			}
		}
		raw, _ := json.Marshal(pol)
		mustJSON(t, raw, &doc)
		for _, st := range doc.Properties.PolicyDocument.Statement {
			res, _ := json.Marshal(st["Resource"])
			for _, target := range []string{queue, key} {
				if st["Effect"] == "Allow" && st["Condition"] == nil && strings.Contains(string(res), `"`+target+`"`) {
					actions, _ := st["Action"].([]any)
					if a, ok := st["Action"].(string); ok {
						actions = []any{a}
					}
					for _, a := range actions {
						granted[target] = append(granted[target], a.(string))
					}
				}
			}
		}
	}
	slices.Sort(granted[key])
	granted[key] = slices.Compact(granted[key])
	if want := map[string][]string{queue: {"sqs:SendMessage"}, key: {"kms:Decrypt", "kms:GenerateDataKey*"}}; !reflect.DeepEqual(granted, want) {
		t.Fatalf("granted %v, want %v", granted, want)
	}
}
