package orderflow

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/datastore"
	"github.com/mercadofresco/integration/constructs/dependency"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// Defaults of Props and the alarms' thresholds (docs/design.md#payment).
const (
	// DefaultMaxAttempts is the gateway attempts per invocation.
	DefaultMaxAttempts = lambdaapi.DefaultMaxAttempts
	// LatencyThresholdMs is the gateway p99 latency alarm's threshold (2 s).
	LatencyThresholdMs = 2000
	// DeclinedThreshold is the cobro Errors alarm's threshold per 5
	// minutes: a declined card is a function error by design (the workflow
	// matches TarjetaRechazada), so the alarm sits above their usual rate.
	DeclinedThreshold = 10
	// margin covers the idempotency claim and record, the secret read and
	// the cold start around the gateway attempts.
	margin = 15 * time.Second
)

// FunctionTimeout is the worst case of one invocation: attempts × read
// timeout, plus a wait between attempts of at most the longest Retry-After
// honoured (lambdaapi.DefaultMaxRetryAfter) and its jitter
// (lambdaapi.DefaultBackoffCap), plus a margin.
func FunctionTimeout(attempts int, readTimeout time.Duration) time.Duration {
	waits := time.Duration(attempts-1) * (lambdaapi.DefaultMaxRetryAfter + lambdaapi.DefaultBackoffCap)
	return time.Duration(attempts)*readTimeout + waits + margin
}

// PaymentProps configures the payment construct. The Context's EnvironmentName,
// DataKey and Alerts, IdempotencyTable, GatewayURL, Vpc, SecretsEndpoint
// and BreakerStore are required.
type PaymentProps struct {
	core.Context
	// IdempotencyTable is mercadofresco-idempotencia (keys cobro:<pedido_id>,
	// reembolso:<pedido_id>).
	IdempotencyTable *datastore.Table
	// GatewayURL is the gateway's https base URL (config, per environment).
	GatewayURL string
	// MaxAttempts is the gateway attempts per invocation
	// (GATEWAY_MAX_ATTEMPTS). Zero means DefaultMaxAttempts.
	MaxAttempts float64
	// ReadTimeout of each gateway attempt (GATEWAY_READ_TIMEOUT, 1 s to
	// 2 min). Nil means lambdaapi.DefaultReadTimeout (30 s).
	ReadTimeout awscdk.Duration
	// CobroFunctionName and ReembolsoFunctionName are the functions'
	// physical names. Nil lets CloudFormation name them.
	CobroFunctionName, ReembolsoFunctionName *string
	// SecretName of the gateway API key secret. Nil lets CloudFormation
	// name it.
	SecretName *string
	// ReservedConcurrency caps each function: the concurrency ceiling in
	// front of the gateway (a throttled invocation is retried by the
	// workflow). Zero means unreserved.
	ReservedConcurrency float64
	// Vpc and Subnets place the functions: subnets with a route to the
	// internet and to the cache (network.Network.EgressSubnets()).
	Vpc     awsec2.IVpc
	Subnets *awsec2.SubnetSelection
	// SecretsEndpoint is the VPC's Secrets Manager interface endpoint
	// (network.Network.SecretsEndpoint): it admits the functions.
	SecretsEndpoint awsec2.IInterfaceVpcEndpoint
	// BreakerStore is the Valkey cache of the gateway's circuit breaker.
	BreakerStore dependency.BreakerStore
}

// Payment is the cobro and reembolso functions with their secret and alarms.
type Payment struct {
	constructs.Construct
	Cobro, Reembolso *golambda.Function
	// Secret holds the gateway API key: a plain string or {"api_key": "..."}.
	// It is created with a random placeholder; an operator puts the real
	// key (aws secretsmanager put-secret-value) before the first order.
	Secret awssecretsmanager.Secret
	// SecurityGroup of both functions (egress HTTPS only; the cache admits it).
	SecurityGroup awsec2.SecurityGroup
	// Timeout is each function's timeout.
	Timeout awscdk.Duration
	// MaxAttempts is the gateway attempts per invocation.
	MaxAttempts float64
	// CircuitOpenedAlarm, LatencyAlarm, CobroErrorsAlarm and
	// CobroThrottlesAlarm watch the path (reembolso's Errors > 0 alarm is its
	// golambda alarm).
	CircuitOpenedAlarm, LatencyAlarm, CobroErrorsAlarm, CobroThrottlesAlarm awscloudwatch.Alarm

	environment string
}

// NewPayment creates the payment functions: cobro and reembolso
// (lambdas/cobro, lambdas/reembolso), in the egress subnets with HTTPS out
// only, reaching the breaker's Valkey cache; the gateway's API-key secret,
// their grants and alarms (circuit opened, p99 latency, errors,
// throttles). One invocation makes at most MaxAttempts attempts of at most
// ReadTimeout each; the function's timeout is that worst case
// (FunctionTimeout). Every problem is reported at synth.
func NewPayment(scope constructs.Construct, id string, props *PaymentProps) *Payment {
	c, v, props := core.Begin(scope, id, "payment", props)
	p := &Payment{Construct: c, environment: props.Environment()}
	props.Require(v, core.EnvironmentName|core.DataKey|core.Alerts)
	v.If(props.IdempotencyTable == nil, "IdempotencyTable is required: both tasks record cobro:/reembolso:<pedido_id> there")
	v.If(len(props.GatewayURL) < 9 || props.GatewayURL[:8] != "https://", "GatewayURL %q must be an https URL", props.GatewayURL)
	v.If(props.BreakerStore == nil, "BreakerStore (the Valkey cache mercadofresco-catalogo) is required: the gateway's circuit breaker is shared there")
	vpc, subnets := core.RequireVpc(v, c, props.Vpc, props.Subnets, "the breaker's cache is only reachable inside the VPC")
	p.MaxAttempts = v.Count("MaxAttempts", props.MaxAttempts, DefaultMaxAttempts, 1, lambdaapi.MaxAttemptsLimit)
	read := v.Seconds("ReadTimeout", props.ReadTimeout, lambdaapi.DefaultReadTimeout.Seconds(), 1, 120)
	timeout := FunctionTimeout(int(p.MaxAttempts), time.Duration(read)*time.Second)
	p.Timeout = awscdk.Duration_Seconds(jsii.Number(timeout.Seconds()))

	p.Secret = dependency.NewAPIKey(c, "GatewayKey", &dependency.APIKeyProps{
		Context:     props.Context,
		SecretName:  props.SecretName,
		Description: "Payment gateway API key of the cobro/reembolso tasks (plain string or {\"api_key\": ...}). Created with a random placeholder: put the real key before the first order.",
		Rotation:    "The payment gateway issues this API key; it is rotated in the gateway's console and then stored here (put-secret-value). A rotation Lambda cannot mint gateway keys. The client re-reads the secret when the gateway answers 401.",
	})
	p.SecurityGroup = dependency.NewSecurityGroup(c, "SecurityGroup", vpc,
		"Payment tasks: HTTPS to the gateway and AWS APIs; the cache admits this group", "HTTPS: payment gateway, DynamoDB, Secrets Manager")
	dependency.ReadSecretsThrough(v, p.SecurityGroup, props.SecretsEndpoint, "payment tasks read the gateway's API key")
	p.addFunctions(props, vpc, subnets, read)
	p.addAlarms(props)
	p.contribute(props.Dashboard)
	return p
}

// addFunctions creates cobro and reembolso with their grants and bindings.
func (p *Payment) addFunctions(props *PaymentProps, vpc awsec2.IVpc, subnets *awsec2.SubnetSelection, read float64) {
	env := map[string]*string{
		lambdaapi.EnvGatewayURL:         jsii.String(props.GatewayURL),
		lambdaapi.EnvGatewaySecretARN:   p.Secret.SecretArn(),
		lambdaapi.EnvGatewayMaxAttempts: jsii.String(fmt.Sprint(p.MaxAttempts)),
		lambdaapi.EnvGatewayReadTimeout: jsii.String(fmt.Sprintf("%ds", int(read))),
		lambdaapi.EnvEnvironment:        jsii.String(p.environment),
	}
	var reserved *float64
	if props.ReservedConcurrency > 0 {
		reserved = jsii.Number(props.ReservedConcurrency)
	}
	deps := []golambda.Dependency{
		{Name: "pasarela", AttemptsEnv: []string{lambdaapi.EnvGatewayMaxAttempts}},
		{Name: "dynamodb:" + datastore.IdempotencyTableName, AttemptsEnv: []string{lambdaapi.EnvSDKMaxAttempts}},
		{Name: "secretsmanager:gateway-key", AttemptsEnv: []string{lambdaapi.EnvSDKMaxAttempts}},
	}
	newFn := func(id, name string, physical *string, desc string) *golambda.Function {
		fp := &golambda.Props{
			Context:                      props.Context,
			Entry:                        "lambdas/" + name,
			FunctionName:                 physical,
			Description:                  jsii.String(desc + " for " + StateMachineName),
			Timeout:                      p.Timeout,
			Environment:                  env,
			ReservedConcurrentExecutions: reserved,
			Vpc:                          vpc,
			VpcSubnets:                   subnets,
			SecurityGroups:               &[]awsec2.ISecurityGroup{p.SecurityGroup},
			Dependencies:                 deps,
		}
		if name == "cobro" {
			fp.Alerts = nil // its Errors alarm has a threshold (declines are errors): addAlarms
		}
		fn := golambda.NewFunction(p.Construct, id, fp)
		dependency.GrantRead(p.Secret, props.DataKey, fn.Function)
		if props.IdempotencyTable != nil {
			// Its own records only (cobro:<pedido_id>, reembolso:<pedido_id>
			// and their #llamadas budgets); the refund reads the charge's.
			props.IdempotencyTable.BindTo(fn.Function, name+":")
			if name == "reembolso" {
				props.IdempotencyTable.GrantReadKeys(fn.Function, "cobro:")
			}
		}
		if props.BreakerStore != nil {
			props.BreakerStore.Bind(fn.Function, lambdaapi.GatewayDependency)
		}
		return fn
	}
	p.Cobro = newFn("Cobro", "cobro", props.CobroFunctionName, "Charges an order's card once (Idempotency-Key cobro:<pedido_id>)")
	p.Reembolso = newFn("Reembolso", "reembolso", props.ReembolsoFunctionName, "Refunds an order's charge once (Idempotency-Key reembolso:<pedido_id>)")
}

// addAlarms creates cobro's Errors and Throttles alarms (reembolso keeps
// golambda's Errors > 0 and Throttles > 0), the circuit-opened and the
// gateway latency alarms.
func (p *Payment) addAlarms(props *PaymentProps) {
	p.CobroErrorsAlarm = observability.NewAlarm(p.Cobro.Construct, "ErrorsAlarm", &observability.AlarmProps{
		Metric:      p.Cobro.Function.MetricErrors(observability.Per5Min("Sum")),
		Topic:       props.Alerts,
		Threshold:   DeclinedThreshold,
		MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
		Description: fmt.Sprintf("cobro: more than %d failed charges in 5 minutes (declined cards are errors too, this is above their usual rate). Check the errorType of the failures (PasarelaNoDisponible, CircuitoAbierto, IdempotenciaNoDisponible) and the gateway alarms.", DeclinedThreshold),
	})
	p.CobroThrottlesAlarm = observability.NewAnyAlarm(p.Cobro.Construct, "ThrottlesAlarm", p.Cobro.Function.MetricThrottles(observability.Per5Min("Sum")), props.Alerts,
		"cobro: invocations throttled (reserved concurrency reached); the workflow retries them. Many orders arriving at once or a slow gateway.")
	p.CircuitOpenedAlarm = dependency.NewCircuitOpenedAlarm(p.Construct, "CircuitoAbiertoAlarm", props.Context, lambdaapi.GatewayDependency,
		fmt.Sprintf("Payment gateway circuit OPENED (%s): orders are not charged (CircuitoAbierto, customers are told to retry in a few minutes). Check the gateway's status and PasarelaErrores/PasarelaLatencia.", p.environment))
	p.LatencyAlarm = observability.NewAlarm(p.Construct, "LatenciaAlarm", &observability.AlarmProps{
		Metric:            p.MetricGatewayLatency("p99"),
		Topic:             props.Alerts,
		Threshold:         LatencyThresholdMs,
		EvaluationPeriods: 5,
		DatapointsToAlarm: 3,
		MissingData:       awscloudwatch.TreatMissingData_NOT_BREACHING, // no orders, no attempts
		Description:       fmt.Sprintf("Payment gateway p99 latency above %d ms in 3 of 5 minutes (%s): a retry storm starts as the gateway slows from ~240 ms to 4 s (docs/design.md#payment). The breaker opens if it turns into failures.", LatencyThresholdMs, p.environment),
	})
}

// MetricGatewayLatency is the gateway attempt latency (ms) at stat.
func (p *Payment) MetricGatewayLatency(stat string) awscloudwatch.Metric {
	return dependency.Metric(p.environment, lambdaapi.GatewayDependency, lambdaapi.MetricGatewayLatency, stat)
}
