// Package orderflow is the order workflow and its payment path: the Step
// Functions state machine mercadofresco-procesar-pedido (NewWorkflow:
// Cobrar, ReservarStock on the stock-movements FIFO queue, Confirmar on
// mercadofresco-pedido-confirmado, and in Catch the compensation,
// LiberarStock and Reembolsar, ending in PedidoFallido or
// CompensacionFallida), its starter (NewStarter: order-created events → an
// SQS buffer → one execution per order), the cobro and reembolso task
// functions with the gateway's secret and alarms (NewPayment) and the
// charge-signing key (NewSigningKey). Retry covers transient errors only;
// MF-ATTEMPTS counts it. docs/design.md#order-workflow, #workflow-retry,
// #payment.
package orderflow

import (
	"cmp"
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	sfn "github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	tasks "github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctionstasks"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// SPEC name of the state machine.
const StateMachineName = "mercadofresco-procesar-pedido"

// State names (stable: the tests, the runbook and the logs use them).
const (
	StateCobrar              = "Cobrar"
	StateReservarStock       = "ReservarStock"
	StateEnviarReservas      = "EnviarReservas"
	StateConfirmar           = "Confirmar"
	StatePedidoConfirmado    = "PedidoConfirmado"
	StateLiberarStock        = "LiberarStock"
	StateEnviarLiberaciones  = "EnviarLiberaciones"
	StateReembolsar          = "Reembolsar"
	StatePedidoFallido       = "PedidoFallido"
	StateCompensacionFallida = "CompensacionFallida"
	// ErrCompensacionFallida is the error of the CompensacionFallida state.
	ErrCompensacionFallida = "CompensacionFallida"
	// ErrEntradasFallidas fails a stock batch with a failed entry.
	ErrEntradasFallidas = "EntradasFallidas"
)

// Defaults of Props, and the workflow's figures: the stock batches sent
// at once, the resends of a stock movement with a failed entry, the bound of a whole execution and the
// ExecutionsFailed alarm threshold per 5 minutes (declined cards end as
// FAILED executions too, so the alarm sits above their usual rate; a failed
// refund pages through the reembolso function's own Errors alarm).
// Reasoning in docs/design.md#workflow-retry.
const (
	DefaultRetryIntervalSeconds = 2
	DefaultRetryBackoffRate     = 2.0
	DefaultRetryMaxAttempts     = 3
	DefaultRetryMaxDelaySeconds = 30
	DefaultTaskTimeoutSeconds   = 120
	MapMaxConcurrency           = 10
	ResendMaxAttempts           = 2
	ExecutionTimeoutMin         = 60
	FailedThreshold             = 10
)

// LambdaServiceErrors are Lambda's own transient failures of an Invoke
// (the function may not have run); retried like the transient task errors.
var LambdaServiceErrors = []string{"Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException"}

// The throttle retrier of the payment tasks: Lambda refused the invocation
// (reserved concurrency reached, the function did not run), so the task
// waits its turn with full jitter, doubling from 1 s to 30 s, for as many
// waits as fit in half the order's objective (lambdaapi.SLOConfirmation);
// the other half is the payment's own retries. MF-ATTEMPTS does not count
// it. docs/design.md#payment-throttle.
const (
	ErrThrottled      = lambdaapi.ErrLambdaThrottled
	ThrottleInterval  = time.Second
	ThrottleMaxDelay  = 30 * time.Second
	ThrottleWaitLimit = lambdaapi.SLOConfirmation / 2
)

// ThrottleRetries is the throttle retrier's MaxAttempts: the waits, at
// their caps, that fit in ThrottleWaitLimit (18: 1+2+4+8+16+13×30 = 421 s).
func ThrottleRetries() (n int, total time.Duration) {
	for d := ThrottleInterval; total+d <= ThrottleWaitLimit; d = min(2*d, ThrottleMaxDelay) {
		n, total = n+1, total+d
	}
	return n, total
}

// RetryPolicy is the workflow's Retry for transient errors. Zero fields
// take the defaults; JitterStrategy is always FULL.
type RetryPolicy struct {
	// Interval before the first retry. Default 2 s.
	Interval awscdk.Duration
	// BackoffRate multiplies the interval at each retry. Default 2.
	BackoffRate float64
	// MaxAttempts is the number of retries (Step Functions' MaxAttempts;
	// the task runs at most 1 + MaxAttempts times). Default 3.
	MaxAttempts float64
	// MaxDelay caps every wait. Default 30 s.
	MaxDelay awscdk.Duration
}

// WorkflowProps configures the workflow. Charge, Refund, StockMovements,
// Confirmed and the Context's DataKey (executions carry customer data) and
// Alerts are required.
type WorkflowProps struct {
	core.Context
	// StateMachineName is the physical name. Nil means StateMachineName.
	StateMachineName *string
	// RoleName is the physical name of the state machine's role, by which
	// the producer guards of StockMovements and Confirmed in another stack
	// admit it (a reference back would be a cycle: docs/design.md#producers).
	// Required when either is in another stack; nil lets
	// CloudFormation name the role (the guards then reference it).
	RoleName *string
	// Charge is the cobro function (lambdaapi.CobroInput → CobroOutput).
	Charge awslambda.IFunction
	// Refund is the reembolso function (lambdaapi.ReembolsoInput → ...).
	Refund awslambda.IFunction
	// PaymentTaskTimeout bounds one invocation of Charge or Refund as the
	// workflow sees it: set it a little above the functions' timeout, so the
	// Lambda timeout (not the state's) ends a stuck attempt. Default 120 s.
	PaymentTaskTimeout awscdk.Duration
	// StockMovements is the FIFO queue mercadofresco-movimientos-stock.fifo.
	StockMovements awssqs.IQueue
	// Confirmed is the fan-out topic mercadofresco-pedido-confirmado.
	Confirmed awssns.ITopic
	// Retry is the policy for transient errors.
	Retry RetryPolicy
}

// Workflow is the state machine with its log group and alarms.
type Workflow struct {
	constructs.Construct
	StateMachine sfn.StateMachine
	LogGroup     awslogs.LogGroup
	// Retry is the effective policy (defaults applied).
	Retry RetryPolicy
	// FailedAlarm, TimedOutAlarm and ThrottledAlarm watch the executions.
	FailedAlarm, TimedOutAlarm, ThrottledAlarm awscloudwatch.Alarm
	// CompensationFailedAlarm fires on the first execution that enters
	// CompensacionFallida (compensation.go).
	CompensationFailedAlarm awscloudwatch.Alarm
}

// NewWorkflow creates the workflow. Every problem of props is reported at synth;
// the workflow is still whole (missing functions, queue and topic are
// imported placeholders that add nothing to the template).
func NewWorkflow(scope constructs.Construct, id string, props *WorkflowProps) *Workflow {
	c, v, props := core.Begin(scope, id, "orderworkflow", props)
	w := &Workflow{Construct: c}
	p := *props
	p.Require(v, core.DataKey|core.Alerts)
	w.Retry = p.Retry.withDefaults(v)
	taskTimeout := cmp.Or(p.PaymentTaskTimeout, awscdk.Duration_Seconds(jsii.Number(DefaultTaskTimeoutSeconds)))
	stub := constructs.NewConstruct(c, jsii.String("Missing"))
	if v.If(p.Charge == nil, "Charge (the cobro function) is required") {
		p.Charge = awslambda.Function_FromFunctionName(stub, jsii.String("Charge"), jsii.String("missing-cobro"))
	}
	if v.If(p.Refund == nil, "Refund (the reembolso function) is required") {
		p.Refund = awslambda.Function_FromFunctionName(stub, jsii.String("Refund"), jsii.String("missing-reembolso"))
	}
	if v.If(p.StockMovements == nil, "StockMovements (the FIFO queue mercadofresco-movimientos-stock.fifo) is required") {
		p.StockMovements = awssqs.Queue_FromQueueArn(stub, jsii.String("Stock"), jsii.String("arn:aws:sqs:eu-west-1:111111111111:missing.fifo"))
	} else if f := p.StockMovements.Fifo(); f != nil {
		v.If(!*f, "StockMovements must be a FIFO queue (MessageGroupId = sku keeps each SKU's movements in order)")
	}
	if v.If(p.Confirmed == nil, "Confirmed (the topic mercadofresco-pedido-confirmado) is required") {
		p.Confirmed = awssns.Topic_FromTopicArn(stub, jsii.String("Confirmed"), jsii.String("arn:aws:sns:eu-west-1:111111111111:missing"))
	}
	name := cmp.Or(p.StateMachineName, jsii.String(StateMachineName))

	def := w.definition(c, &p, taskTimeout)

	// The /aws/vendedlogs/ prefix keeps the log group's resource policy
	// (which Step Functions needs to deliver) within CloudWatch Logs' size
	// limit however many state machines an account has.
	w.LogGroup = p.LogGroup(c, "Logs", jsii.String("/aws/vendedlogs/states/"+*name))
	var encryption sfn.EncryptionConfiguration
	if p.DataKey != nil {
		encryption = sfn.NewCustomerManagedEncryptionConfiguration(p.DataKey, awscdk.Duration_Minutes(jsii.Number(5)))
	}
	w.StateMachine = sfn.NewStateMachine(c, jsii.String("StateMachine"), &sfn.StateMachineProps{
		StateMachineName:        name,
		StateMachineType:        sfn.StateMachineType_STANDARD,
		DefinitionBody:          sfn.DefinitionBody_FromChainable(def),
		Timeout:                 awscdk.Duration_Minutes(jsii.Number(ExecutionTimeoutMin)),
		TracingEnabled:          jsii.Bool(true),
		EncryptionConfiguration: encryption,
		Logs: &sfn.LogOptions{
			Destination: w.LogGroup,
			Level:       sfn.LogLevel_ALL,
			// Every state transition is logged, without the execution data:
			// inputs carry customer e-mails and card tokens, which the
			// execution history keeps (encrypted with the data key, IAM
			// protected, 90 days) for debugging; the logs do not copy them.
			IncludeExecutionData: jsii.Bool(false),
		},
	})
	w.admitAsProducer(c, &p, v)
	// The stock queue's key, for SQS to encrypt what the batches send.
	if k := p.StockMovements.EncryptionMasterKey(); k != nil {
		k.Grant(w.StateMachine, jsii.String("kms:Decrypt"), jsii.String("kms:GenerateDataKey*"))
	}
	w.keyThroughServicesOnly(&p)
	// Confirmar publishes PedidoConfirmado; the stock Maps send MovimientoStock.
	if p.Confirmed != nil {
		core.Produces(w.StateMachine, eventsapi.TypePedidoConfirmado, []int{eventsapi.PedidoConfirmadoVersion}, p.Confirmed)
	}
	if p.StockMovements != nil {
		core.Produces(w.StateMachine, eventsapi.TypeMovimientoStock, []int{eventsapi.MovimientoStockVersion}, p.StockMovements)
	}
	w.pinTrust(name)
	core.AcknowledgeNag(w.StateMachine, true, "AwsSolutions-IAM5", "The CDK's own grants of this state machine: X-Ray and log delivery (no resource-level permissions exist), cobro and reembolso with ':*' (their versions), kms:GenerateDataKey* on the data key only (SNS publish to the encrypted topic).", "Resource::*", "Action::kms:GenerateDataKey*", "Resource::<"+core.LogicalID(p.Charge)+".Arn>:*", "Resource::<"+core.LogicalID(p.Refund)+".Arn>:*")

	w.FailedAlarm = observability.NewAlarm(c, "FailedAlarm", &observability.AlarmProps{
		Metric:      w.StateMachine.MetricFailed(observability.Per5Min("Sum")),
		Topic:       p.Alerts,
		Threshold:   FailedThreshold,
		MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING, // no executions, no failures
		Description: fmt.Sprintf("%s: more than %d orders failed in 5 minutes, above the usual rate of declined cards. Check the failed executions' errors (TarjetaRechazada, CircuitoAbierto, PasarelaNoDisponible; CompensacionFallida needs a person).", *name, FailedThreshold),
	})
	w.TimedOutAlarm = observability.NewAnyAlarm(c, "TimedOutAlarm", w.StateMachine.MetricTimedOut(observability.Per5Min("Sum")), p.Alerts,
		fmt.Sprintf("%s: an execution ran past its timeout. The order may be charged without confirmation: check the execution history and the idempotency record cobro:<pedido_id>.", *name))
	w.ThrottledAlarm = observability.NewAnyAlarm(c, "ThrottledAlarm", w.StateMachine.Metric(jsii.String("ExecutionThrottled"), observability.Per5Min("Sum")), p.Alerts,
		fmt.Sprintf("%s: Step Functions throttled state transitions. Executions slow down; check the account's state-transition quota and the starter's MaximumConcurrency.", *name))
	w.CompensationFailedAlarm = w.compensationFailedAlarm(c, &p, *name)
	w.contribute(p.Dashboard, *name)
	return w
}

func (r RetryPolicy) withDefaults(v *core.Problems) RetryPolicy {
	r.Interval = cmp.Or(r.Interval, awscdk.Duration_Seconds(jsii.Number(DefaultRetryIntervalSeconds)))
	r.BackoffRate = cmp.Or(r.BackoffRate, DefaultRetryBackoffRate)
	r.MaxDelay = cmp.Or(r.MaxDelay, awscdk.Duration_Seconds(jsii.Number(DefaultRetryMaxDelaySeconds)))
	if v.If(r.BackoffRate < 1, "Retry.BackoffRate must be >= 1, got %v", r.BackoffRate) {
		r.BackoffRate = DefaultRetryBackoffRate
	}
	r.MaxAttempts = v.Count("Retry.MaxAttempts", r.MaxAttempts, DefaultRetryMaxAttempts, 1, 10)
	return r
}

func (r RetryPolicy) props(errors []string) *sfn.RetryProps {
	return &sfn.RetryProps{
		Errors:         jsii.Strings(errors...),
		Interval:       r.Interval,
		BackoffRate:    jsii.Number(r.BackoffRate),
		MaxAttempts:    jsii.Number(r.MaxAttempts),
		MaxDelay:       r.MaxDelay,
		JitterStrategy: sfn.JitterType_FULL,
	}
}

// TransientPaymentErrors are the errors the workflow retries on the
// payment tasks: lambdaapi's payment errors marked Retry, and Lambda's own service
// errors.
func TransientPaymentErrors() []string {
	var out []string
	for _, e := range lambdaapi.PaymentErrors {
		if e.Retry {
			out = append(out, e.Name)
		}
	}
	return append(out, LambdaServiceErrors...)
}

// Paths of the execution state.
const (
	pathFallo             = "$.fallo"
	pathFalloCompensacion = "$.fallo_compensacion"
)

func (w *Workflow) definition(c constructs.Construct, p *WorkflowProps, taskTimeout awscdk.Duration) sfn.IChainable {
	str := func(path string) *string { return sfn.JsonPath_StringAt(jsii.String(path)) }
	num := func(path string) *float64 { return sfn.JsonPath_NumberAt(jsii.String(path)) }
	transient := w.Retry.props(TransientPaymentErrors())
	retries, _ := ThrottleRetries()
	throttled := &sfn.RetryProps{Errors: jsii.Strings(ErrThrottled), Interval: core.Duration(ThrottleInterval), BackoffRate: jsii.Number(2),
		MaxAttempts: jsii.Number(float64(retries)), MaxDelay: core.Duration(ThrottleMaxDelay), JitterStrategy: sfn.JitterType_FULL}
	// SDK integrations: any failure of the send is retried (a repeated send
	// is deduplicated by the FIFO queue, and the topic's consumers are
	// idempotent).
	sdkRetry := w.Retry.props([]string{"States.TaskFailed"})
	timeout := sfn.Timeout_Duration(taskTimeout)

	pedidoFallido := sfn.NewFail(c, jsii.String(StatePedidoFallido), &sfn.FailProps{
		Comment:   jsii.String("The order failed; Error and Cause are those of the step that failed."),
		ErrorPath: jsii.String(pathFallo + ".Error"),
		CausePath: jsii.String(pathFallo + ".Cause"),
	})
	compensacionFallida := sfn.NewFail(c, jsii.String(StateCompensacionFallida), &sfn.FailProps{
		Comment:   jsii.String("Releasing the stock or refunding failed after its retries: a person must finish the compensation."),
		Error:     jsii.String(ErrCompensacionFallida),
		CausePath: jsii.String(pathFalloCompensacion + ".Cause"),
	})

	// A payment task: the function's answer only, retried by our own
	// retrier (not the CDK's on Lambda's service errors).
	payment := func(state string, fn awslambda.IFunction, payload map[string]any, result, path string) tasks.LambdaInvoke {
		task := tasks.NewLambdaInvoke(c, jsii.String(state), &tasks.LambdaInvokeProps{
			LambdaFunction:           fn,
			Payload:                  sfn.TaskInput_FromObject(&payload),
			PayloadResponseOnly:      jsii.Bool(true),
			RetryOnServiceExceptions: jsii.Bool(false),
			ResultSelector:           &map[string]interface{}{result: str("$." + result)},
			ResultPath:               jsii.String(path),
			TaskTimeout:              timeout,
		})
		task.AddRetry(throttled)
		task.AddRetry(transient)
		return task
	}
	cobrar := payment(StateCobrar, p.Charge, map[string]any{
		"pedido_id":        str("$.pedido_id"),
		"importe_centimos": num("$.total_centimos"),
		"moneda":           str("$.moneda"),
		"token_tarjeta":    str("$.token_tarjeta"),
		// The outbox publisher's signature of this charge, which cobro
		// verifies (FirmaInvalida, not retried: the order fails).
		"id_evento": str("$.id_evento"),
		"firma":     str("$.firma"),
	}, "referencia_cobro", "$.cobro")
	cobrar.AddCatch(pedidoFallido, &sfn.CatchProps{Errors: jsii.Strings("States.ALL"), ResultPath: jsii.String(pathFallo)})

	// A stock movement: one SendMessageBatch per batch of entries the
	// starter built, then a check of its Failed[] (SQS answers a batch with
	// failed entries with success): the default, every entry accepted, ends
	// the iteration; a failed entry fails it, and the Map's Retry sends the
	// order's batches again, at most ResendMaxAttempts times (the accepted
	// entries are dropped as duplicates: docs/design.md#stock-batches).
	var queueURL, queueARN *string = p.StockMovements.QueueUrl(), p.StockMovements.QueueArn()
	movement := func(stateName, sendName, items, kind string) sfn.Map {
		m := sfn.NewMap(c, jsii.String(stateName), &sfn.MapProps{
			ItemsPath:      jsii.String("$." + items),
			MaxConcurrency: jsii.Number(MapMaxConcurrency),
			ResultPath:     sfn.JsonPath_DISCARD(),
		})
		send := tasks.NewCallAwsService(c, jsii.String(sendName), &tasks.CallAwsServiceProps{
			Service:    jsii.String("sqs"),
			Action:     jsii.String("sendMessageBatch"),
			Parameters: &map[string]interface{}{"QueueUrl": queueURL, "Entries": sfn.JsonPath_EntirePayload()},
			// SendMessageBatch is authorised as sqs:SendMessage.
			IamAction:    jsii.String("sqs:SendMessage"),
			IamResources: jsii.Strings(*queueARN),
		})
		send.AddRetry(sdkRetry)
		rejected := sfn.NewFail(c, jsii.String(kind+"Rechazadas"), &sfn.FailProps{
			Error: jsii.String(ErrEntradasFallidas),
			Cause: jsii.String("SQS did not accept every entry of the batch (Failed[] in its answer)."),
		})
		m.ItemProcessor(send.Next(sfn.NewChoice(c, jsii.String("Comprobar"+kind), nil).
			When(sfn.Condition_IsPresent(jsii.String("$.Failed[0]")), rejected, nil).
			Otherwise(sfn.NewSucceed(c, jsii.String(kind+"Enviadas"), nil))), nil)
		m.AddRetry(&sfn.RetryProps{Errors: jsii.Strings(ErrEntradasFallidas), Interval: w.Retry.Interval, BackoffRate: jsii.Number(w.Retry.BackoffRate),
			MaxAttempts: jsii.Number(ResendMaxAttempts), MaxDelay: w.Retry.MaxDelay, JitterStrategy: sfn.JitterType_FULL})
		return m
	}
	reservar := movement(StateReservarStock, StateEnviarReservas, eventsapi.InputReservas, "Reservas")
	liberar := movement(StateLiberarStock, StateEnviarLiberaciones, eventsapi.InputLiberaciones, "Liberaciones")

	confirmar := tasks.NewSnsPublish(c, jsii.String(StateConfirmar), &tasks.SnsPublishProps{
		Topic: p.Confirmed,
		// An object: Step Functions publishes it serialised as JSON.
		Message: sfn.TaskInput_FromObject(&map[string]interface{}{
			"version":          eventsapi.PedidoConfirmadoVersion,
			"pedido_id":        str("$.pedido_id"),
			"cliente":          sfn.JsonPath_ObjectAt(jsii.String("$.cliente")),
			"lineas":           sfn.JsonPath_ObjectAt(jsii.String("$.lineas")),
			"total_centimos":   num("$.total_centimos"),
			"moneda":           str("$.moneda"),
			"referencia_cobro": str("$.cobro.referencia_cobro"),
			"confirmado_en":    str("$$.State.EnteredTime"),
			"ejecucion":        str("$$.Execution.Id"),
			// The commit time the outbox publisher stamps on every
			// PedidoCreado (the starter's replay window refuses an order
			// without it): the commit-to-confirmation objective.
			"creado_en": str("$.creado_en"),
		}),
		MessageAttributes: &map[string]*tasks.MessageAttribute{
			eventsapi.AttrTipo:    {Value: jsii.String(eventsapi.TypePedidoConfirmado), DataType: tasks.MessageAttributeDataType_STRING},
			eventsapi.AttrVersion: {Value: jsii.String(fmt.Sprint(eventsapi.PedidoConfirmadoVersion)), DataType: tasks.MessageAttributeDataType_STRING},
		},
		ResultPath: sfn.JsonPath_DISCARD(),
	})
	confirmar.AddRetry(sdkRetry)
	confirmado := sfn.NewSucceed(c, jsii.String(StatePedidoConfirmado), &sfn.SucceedProps{
		Comment: jsii.String("Charged, stock reserved, confirmation published."),
	})

	reembolsar := payment(StateReembolsar, p.Refund, map[string]any{
		"pedido_id":        str("$.pedido_id"),
		"referencia_cobro": str("$.cobro.referencia_cobro"),
		"importe_centimos": num("$.total_centimos"),
		"moneda":           str("$.moneda"),
	}, "referencia_reembolso", "$.reembolso")

	compensationCatch := &sfn.CatchProps{Errors: jsii.Strings("States.ALL"), ResultPath: jsii.String(pathFalloCompensacion)}
	liberar.AddCatch(compensacionFallida, compensationCatch)
	reembolsar.AddCatch(compensacionFallida, compensationCatch)
	liberar.Next(reembolsar).Next(pedidoFallido)

	afterCharge := &sfn.CatchProps{Errors: jsii.Strings("States.ALL"), ResultPath: jsii.String(pathFallo)}
	reservar.AddCatch(liberar, afterCharge)
	confirmar.AddCatch(liberar, afterCharge)

	return cobrar.Next(reservar).Next(confirmar).Next(confirmado)
}

// SidKeyThroughServices is the Sid of the workflow role's Deny of the data
// key outside the services it calls.
const SidKeyThroughServices = "ClaveSoloPorServicios"

// KeyServices are the services through which the workflow's role uses the
// data key: SNS and SQS (the tasks that publish and send) and Step
// Functions (the state machine's own encryption).
func KeyServices(region string) []string {
	return []string{"sns." + region + ".amazonaws.com", "sqs." + region + ".amazonaws.com", "states." + region + ".amazonaws.com"}
}

// keyThroughServicesOnly confines the role's kms:Decrypt and
// kms:GenerateDataKey* on the data key to KeyServices (kms:ViaService):
// the CDK's SNS and SQS task integrations grant both on the key without a
// condition, so an explicit Deny bounds them.
func (w *Workflow) keyThroughServicesOnly(p *WorkflowProps) {
	if p.DataKey == nil {
		return
	}
	w.StateMachine.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String(SidKeyThroughServices),
		Effect:     awsiam.Effect_DENY,
		Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey*"),
		Resources:  jsii.Strings(*p.DataKey.KeyArn()),
		Conditions: &map[string]interface{}{"StringNotEquals": map[string]interface{}{"kms:ViaService": KeyServices(*awscdk.Stack_Of(w.StateMachine).Region())}},
	}))
}

// admitAsProducer names the state machine's role (p.RoleName) and admits
// it to the producer guards of the stock queue and the confirmed topic: by
// name when a guard lives in another stack, else by reference.
func (w *Workflow) admitAsProducer(c constructs.Construct, p *WorkflowProps, v *core.Problems) {
	role := w.StateMachine.Role()
	if p.RoleName != nil {
		role.Node().DefaultChild().(awsiam.CfnRole).SetRoleName(p.RoleName)
	}
	here := *awscdk.Stack_Of(c).Node().Path()
	for _, g := range []struct {
		what  string
		scope constructs.IConstruct
		guard *queues.Guard
	}{
		{"StockMovements", p.StockMovements, queues.ForQueue(p.StockMovements)},
		{"Confirmed", p.Confirmed, queues.ForTopic(p.Confirmed)},
	} {
		switch {
		case g.guard == nil: // imported: its policy is not this app's
		case p.RoleName != nil:
			g.guard.AdmitRoleName(*p.RoleName)
		case *awscdk.Stack_Of(g.scope).Node().Path() != here:
			v.Addf("RoleName is required: %s is in another stack, whose producer guard admits the workflow's role by name", g.what)
		default:
			g.guard.AdmitRole(role)
		}
	}
}
