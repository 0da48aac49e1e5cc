// Package payment is the CDK construct of the payment path: the cobro and
// reembolso task functions of the order workflow (lambdas/cobro,
// lambdas/reembolso, logic in lambdas/payment), the Secrets Manager secret
// with the gateway's API key, their grants (the secret, the idempotency
// table), their environment (the names in lambdas/payment/paymentapi and
// lambdas/breaker/breakerapi), and the alarms: the gateway's circuit
// opened, the gateway's p99 latency, and the tasks' errors and throttles.
//
// The functions run in the VPC's private subnets with egress to the
// internet through NAT (the gateway is an internet service; Vpc, Subnets)
// and reach the circuit breaker's Valkey cache (mercadofresco-catalogo)
// inside the VPC: BreakerStore.Bind admits them and sets
// BREAKER_REDIS_ADDR (constructs/cache).
//
// Timeouts: one invocation makes at most GATEWAY_MAX_ATTEMPTS attempts of
// at most GATEWAY_READ_TIMEOUT each, separated by waits of at most the
// longest Retry-After the client honours plus its jitter cap; the function
// timeout covers that worst case plus a margin for the idempotency table,
// the secret and the cold start (FunctionTimeout).
package payment

import (
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/mercadofresco/integration/constructs/alarm"
	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/constructs/idempotencytable"
	"github.com/mercadofresco/integration/constructs/removal"
	"github.com/mercadofresco/integration/lambdas/breaker/breakerapi"
	"github.com/mercadofresco/integration/lambdas/metrics/metricsapi"
	"github.com/mercadofresco/integration/lambdas/payment/paymentapi"
	"github.com/mercadofresco/integration/lambdas/retry/retryapi"
)

// Defaults of Props (reasoning in docs/design.md#payment).
const (
	DefaultMaxAttempts        = retryapi.DefaultMaxAttempts // 3 gateway attempts per invocation
	DefaultReadTimeoutSeconds = 30                          // the lesson's fix (was 180 s)
	// DefaultLatencyThresholdMs is the gateway p99 latency alarm: the
	// lesson's gateway answers in ~240 ms and its storm began at 4 s.
	DefaultLatencyThresholdMs = 2000
	// DefaultDeclinedThreshold is the cobro Errors alarm threshold per 5
	// minutes: a declined card is a function error by design (the
	// workflow matches TarjetaRechazada), so the alarm sits above their
	// usual rate. The reembolso function alarms on any error.
	DefaultDeclinedThreshold = 10
	// marginSeconds covers the idempotency claim and record, the secret
	// read and the cold start around the gateway attempts.
	marginSeconds = 15
)

// FunctionTimeout is the worst case of one invocation: attempts × read
// timeout, plus a wait between attempts of at most the longest Retry-After
// honoured (retryapi.DefaultMaxRetryAfter) and its jitter (retryapi.DefaultCap),
// plus a margin.
func FunctionTimeout(attempts int, readTimeout time.Duration) time.Duration {
	waits := time.Duration(attempts-1) * (retryapi.DefaultMaxRetryAfter + retryapi.DefaultCap)
	return time.Duration(attempts)*readTimeout + waits + marginSeconds*time.Second
}

// BreakerStore is where the gateway's circuit breaker keeps its state:
// *cache.Cache (mercadofresco-catalogo). Bind admits fn's security groups
// and sets breakerapi.EnvRedisAddr and EnvRedisTLS on fn.
type BreakerStore interface {
	Bind(fn awslambda.Function)
}

// Props configures the payment construct. IdempotencyTable, GatewayURL,
// Environment, Vpc, SecretsEndpoint, BreakerStore, EncryptionKey and
// AlarmTopic are required.
type Props struct {
	// Builder compiles the functions (share the app's).
	Builder *golambda.Builder
	// IdempotencyTable is mercadofresco-idempotencia (keys cobro:<pedido_id>,
	// reembolso:<pedido_id>).
	IdempotencyTable *idempotencytable.Table
	// GatewayURL is the gateway's https base URL (config, per environment).
	GatewayURL string
	// MaxAttempts is the gateway attempts per invocation
	// (GATEWAY_MAX_ATTEMPTS). Zero means DefaultMaxAttempts.
	MaxAttempts float64
	// ReadTimeout of each gateway attempt (GATEWAY_READ_TIMEOUT). Nil means
	// 30 s.
	ReadTimeout awscdk.Duration
	// Environment is the environment name (ENTORNO, the metric dimension).
	Environment string
	// FunctionNamePrefix names the functions <prefix>-cobro and
	// <prefix>-reembolso. Nil lets CloudFormation name them.
	FunctionNamePrefix *string
	// SecretName of the gateway API key secret. Nil lets CloudFormation
	// name it.
	SecretName *string
	// ReservedConcurrency caps each function: the concurrency ceiling of the
	// retry-storm defences (a throttled invocation is retried by the
	// workflow, so keep MaxAttempts × workflow attempts within the budget).
	// Zero means unreserved.
	ReservedConcurrency float64
	// Vpc and Subnets place the functions: private subnets with a route to
	// the internet (the gateway) and to the cache
	// (network.Network.EgressSubnets()).
	Vpc     awsec2.IVpc
	Subnets *awsec2.SubnetSelection
	// SecretsEndpoint is the VPC's Secrets Manager interface endpoint
	// (network.Network.SecretsEndpoint): its private DNS takes the
	// functions' GetSecretValue, so it admits their security group.
	SecretsEndpoint awsec2.IInterfaceVpcEndpoint
	// BreakerStore is the Valkey cache of the circuit breaker.
	BreakerStore BreakerStore
	// EncryptionKey (the data key) encrypts the secret, the environment and
	// the logs.
	EncryptionKey awskms.IKey
	// LogRetention and RemovalPolicy of the log groups and the secret.
	LogRetention  awslogs.RetentionDays
	RemovalPolicy awscdk.RemovalPolicy
	// AlarmTopic receives every alarm.
	AlarmTopic awssns.ITopic
	// LatencyThresholdMs and DeclinedThreshold: see the defaults.
	LatencyThresholdMs float64
	DeclinedThreshold  float64
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
	// ThrottlesAlarms watch the path (reembolso's Errors > 0 alarm is its
	// golambda alarm).
	CircuitOpenedAlarm, LatencyAlarm, CobroErrorsAlarm awscloudwatch.Alarm
	ThrottlesAlarms                                    []awscloudwatch.Alarm

	environment string
}

// New creates the payment functions. Every problem is reported at synth
// and the construct is still built whole.
func New(scope constructs.Construct, id string, props *Props) *Payment {
	if props == nil {
		props = &Props{}
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	p := &Payment{Construct: c, environment: props.Environment}
	fail := func(format string, a ...any) {
		awscdk.Annotations_Of(c).AddError(jsii.String(fmt.Sprintf("payment %s: %s", *c.Node().Path(), fmt.Sprintf(format, a...))))
	}
	if p.environment == "" {
		fail("Environment is required (the ENTORNO metric dimension)")
		p.environment = "missing"
	}
	if props.IdempotencyTable == nil {
		fail("IdempotencyTable is required: both tasks record cobro:/reembolso:<pedido_id> there")
	}
	if len(props.GatewayURL) < 9 || props.GatewayURL[:8] != "https://" {
		fail("GatewayURL %q must be an https URL", props.GatewayURL)
	}
	if props.BreakerStore == nil {
		fail("BreakerStore (the Valkey cache mercadofresco-catalogo) is required: the gateway's circuit breaker is shared there")
	}
	if props.EncryptionKey == nil {
		fail("EncryptionKey (the data key) is required")
	}
	if props.AlarmTopic == nil {
		fail("AlarmTopic is required (alertas-mercadofresco)")
	}
	vpc := props.Vpc
	if vpc == nil {
		fail("Vpc is required: the breaker's cache is only reachable inside the VPC")
		vpc = awsec2.NewVpc(c, jsii.String("MissingVpc"), &awsec2.VpcProps{MaxAzs: jsii.Number(2), NatGateways: jsii.Number(0)})
	}
	p.MaxAttempts = props.MaxAttempts
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.MaxAttempts < 1 || p.MaxAttempts > retryapi.MaxAttemptsLimit || p.MaxAttempts != math.Trunc(p.MaxAttempts) {
		fail("MaxAttempts must be an integer in 1..%d, got %v", retryapi.MaxAttemptsLimit, props.MaxAttempts)
		p.MaxAttempts = DefaultMaxAttempts
	}
	read := props.ReadTimeout
	if read == nil {
		read = awscdk.Duration_Seconds(jsii.Number(DefaultReadTimeoutSeconds))
	}
	readSeconds := *read.ToSeconds(nil)
	if readSeconds < 1 || readSeconds > 120 {
		fail("ReadTimeout must be between 1 s and 2 min, got %v s", readSeconds)
		readSeconds = DefaultReadTimeoutSeconds
	}
	timeout := FunctionTimeout(int(p.MaxAttempts), time.Duration(readSeconds)*time.Second)
	p.Timeout = awscdk.Duration_Seconds(jsii.Number(timeout.Seconds()))

	p.Secret = awssecretsmanager.NewSecret(c, jsii.String("GatewayKey"), &awssecretsmanager.SecretProps{
		SecretName:    props.SecretName,
		Description:   jsii.String("Payment gateway API key of the cobro/reembolso tasks (plain string or {\"api_key\": ...}). Created with a random placeholder: put the real key before the first order."),
		EncryptionKey: props.EncryptionKey,
		RemovalPolicy: removal.For(props.RemovalPolicy, removal.Data),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			PasswordLength:     jsii.Number(40),
			ExcludePunctuation: jsii.Bool(true),
		},
	})
	cdknag.NagSuppressions_AddResourceSuppressions(p.Secret, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-SMG4"),
		Reason: jsii.String("The payment gateway issues this API key; it is rotated in the gateway's console and then stored here (put-secret-value). A rotation Lambda cannot mint gateway keys. The client re-reads the secret when the gateway answers 401."),
	}}, jsii.Bool(true))

	p.SecurityGroup = awsec2.NewSecurityGroup(c, jsii.String("SecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              vpc,
		Description:      jsii.String("Payment tasks: HTTPS to the gateway and AWS APIs; the cache admits this group"),
		AllowAllOutbound: jsii.Bool(false),
	})
	p.SecurityGroup.AddEgressRule(awsec2.Peer_AnyIpv4(), awsec2.Port_Tcp(jsii.Number(443)), jsii.String("HTTPS: payment gateway, DynamoDB, Secrets Manager"), nil)
	if props.SecretsEndpoint == nil {
		fail("SecretsEndpoint is required: the tasks read the gateway's API key from Secrets Manager, whose endpoint's private DNS takes the call in the VPC")
	} else {
		p.SecurityGroup.Connections().AllowTo(props.SecretsEndpoint, awsec2.Port_Tcp(jsii.Number(443)), jsii.String("payment tasks read the gateway's API key"))
	}

	env := map[string]*string{
		paymentapi.EnvGatewayURL:         jsii.String(props.GatewayURL),
		paymentapi.EnvGatewaySecretARN:   p.Secret.SecretArn(),
		paymentapi.EnvGatewayMaxAttempts: jsii.String(fmt.Sprint(p.MaxAttempts)),
		paymentapi.EnvGatewayReadTimeout: jsii.String(fmt.Sprintf("%ds", int(readSeconds))),
		paymentapi.EnvEnvironment:        jsii.String(p.environment),
	}
	var reserved *float64
	if props.ReservedConcurrency > 0 {
		reserved = jsii.Number(props.ReservedConcurrency)
	}
	name := func(suffix string) *string {
		if props.FunctionNamePrefix == nil {
			return nil
		}
		return jsii.String(*props.FunctionNamePrefix + "-" + suffix)
	}
	deps := []golambda.Dependency{
		{Name: "pasarela", AttemptsEnv: []string{paymentapi.EnvGatewayMaxAttempts}},
		{Name: "dynamodb:" + idempotencytable.SpecTableName, AttemptsEnv: []string{golambda.EnvSDKMaxAttempts}},
		{Name: "secretsmanager:gateway-key", AttemptsEnv: []string{golambda.EnvSDKMaxAttempts}},
	}
	newFn := func(id, entry, desc string, topic awssns.ITopic) *golambda.Function {
		return golambda.NewFunction(c, id, &golambda.Props{
			Entry:                        entry,
			Builder:                      props.Builder,
			FunctionName:                 name(entry[len("lambdas/"):]),
			Description:                  jsii.String(desc),
			Timeout:                      p.Timeout,
			MemorySize:                   256,
			Environment:                  env,
			EncryptionKey:                props.EncryptionKey,
			LogRetention:                 props.LogRetention,
			LogRemovalPolicy:             props.RemovalPolicy,
			AlarmTopic:                   topic,
			ReservedConcurrentExecutions: reserved,
			Vpc:                          vpc,
			VpcSubnets:                   props.Subnets,
			SecurityGroups:               &[]awsec2.ISecurityGroup{p.SecurityGroup},
			Dependencies:                 deps,
		})
	}
	// cobro's Errors alarm is made below with a threshold (declines are
	// errors); reembolso keeps golambda's Errors > 0 and Throttles > 0.
	p.Cobro = newFn("Cobro", "lambdas/cobro", "Charges an order's card once (Idempotency-Key cobro:<pedido_id>) for "+StateMachineLabel, nil)
	p.Reembolso = newFn("Reembolso", "lambdas/reembolso", "Refunds an order's charge once (Idempotency-Key reembolso:<pedido_id>) for "+StateMachineLabel, props.AlarmTopic)
	for _, fn := range []*golambda.Function{p.Cobro, p.Reembolso} {
		p.grantSecretRead(fn, props.EncryptionKey)
		if props.IdempotencyTable != nil {
			props.IdempotencyTable.BindTo(fn.Function)
		}
		if props.BreakerStore != nil {
			props.BreakerStore.Bind(fn.Function)
		}
	}

	five := awscdk.Duration_Minutes(jsii.Number(5))
	declined := props.DeclinedThreshold
	if declined == 0 {
		declined = DefaultDeclinedThreshold
	}
	p.CobroErrorsAlarm = alarm.New(p.Cobro.Construct, "ErrorsAlarm", &alarm.Props{
		Metric:      p.Cobro.MetricErrors(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}),
		Topic:       props.AlarmTopic,
		Threshold:   declined,
		MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
		Description: fmt.Sprintf("cobro: more than %.0f failed charges in 5 minutes (declined cards are errors too, this is above their usual rate). Check the errorType of the failures (PasarelaNoDisponible, CircuitoAbierto, IdempotenciaNoDisponible) and the gateway alarms.", declined),
	})
	p.ThrottlesAlarms = append(p.ThrottlesAlarms, alarm.New(p.Cobro.Construct, "ThrottlesAlarm", &alarm.Props{
		Metric:      p.Cobro.MetricThrottles(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}),
		Topic:       props.AlarmTopic,
		Threshold:   0,
		MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
		Description: "cobro: invocations throttled (reserved concurrency reached); the workflow retries them. Many orders arriving at once or a slow gateway.",
	}))
	p.CircuitOpenedAlarm = alarm.New(c, "CircuitoAbiertoAlarm", &alarm.Props{
		Metric:      p.metric(breakerapi.MetricOpened, "Sum", awscdk.Duration_Minutes(jsii.Number(1))),
		Topic:       props.AlarmTopic,
		Threshold:   0,
		MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING, // emitted only on a transition
		Description: fmt.Sprintf("Payment gateway circuit OPENED (%s): orders are not charged (CircuitoAbierto, customers are told to retry in a few minutes). Check the gateway's status and PasarelaErrores/PasarelaLatencia.", p.environment),
	})
	latency := props.LatencyThresholdMs
	if latency == 0 {
		latency = DefaultLatencyThresholdMs
	}
	p.LatencyAlarm = alarm.New(c, "LatenciaAlarm", &alarm.Props{
		Metric:            p.metric(paymentapi.MetricGatewayLatency, "p99", awscdk.Duration_Minutes(jsii.Number(1))),
		Topic:             props.AlarmTopic,
		Threshold:         latency,
		EvaluationPeriods: 5,
		DatapointsToAlarm: 3,
		MissingData:       awscloudwatch.TreatMissingData_NOT_BREACHING, // no orders, no attempts
		Description:       fmt.Sprintf("Payment gateway p99 latency above %.0f ms in 3 of 5 minutes (%s): the start of the lesson's retry storm (240 ms -> 4 s). The breaker opens if it turns into failures.", latency, p.environment),
	})
	return p
}

// grantSecretRead lets fn read the API key: the statements go to fn's role
// only (Secret.GrantRead would also write the key's policy when the key
// lives in another stack, making that stack depend on this one).
func (p *Payment) grantSecretRead(fn *golambda.Function, key awskms.IKey) {
	awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      fn.Function,
		Actions:      jsii.Strings("secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"),
		ResourceArns: jsii.Strings(*p.Secret.SecretArn()),
	})
	core.GrantKey(key, fn.Function, "secretsmanager", "kms:Decrypt")
}

// StateMachineLabel names the workflow the tasks serve, in descriptions.
const StateMachineLabel = "mercadofresco-procesar-pedido"

func (p *Payment) metric(name, stat string, period awscdk.Duration) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:  jsii.String(metricsapi.Namespace),
		MetricName: jsii.String(name),
		DimensionsMap: &map[string]*string{
			metricsapi.DimensionEnvironment: jsii.String(p.environment),
			breakerapi.DimensionDependency:  jsii.String(paymentapi.GatewayDependency),
		},
		Period:    period,
		Statistic: jsii.String(stat),
	})
}

// MetricGatewayLatency is the gateway attempt latency (ms) at stat.
func (p *Payment) MetricGatewayLatency(stat string) awscloudwatch.Metric {
	return p.metric(paymentapi.MetricGatewayLatency, stat, awscdk.Duration_Minutes(jsii.Number(1)))
}

// MetricCircuitOpened counts transitions of the gateway's circuit to open.
func (p *Payment) MetricCircuitOpened() awscloudwatch.Metric {
	return p.metric(breakerapi.MetricOpened, "Sum", awscdk.Duration_Minutes(jsii.Number(1)))
}

// GrantInvoke lets grantee invoke both tasks.
func (p *Payment) GrantInvoke(grantee awsiam.IGrantable) {
	p.Cobro.GrantInvoke(grantee)
	p.Reembolso.GrantInvoke(grantee)
}
