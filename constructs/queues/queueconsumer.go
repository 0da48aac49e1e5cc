package queues

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/dependency"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// FanOutMaxDeliveryAge is how long SNS keeps retrying a delivery to an SQS
// subscription that fails with a server-side error: 100,015 attempts over
// 23 days, a delivery policy SNS does not let anyone change for SQS
// endpoints (Amazon SNS developer guide, "Amazon SNS message delivery
// retries"). A message can reach a subscribed queue that old; a queue
// consumer's replay window counts it (Props.UpstreamMaxAge,
// docs/design.md#replay-windows).
const FanOutMaxDeliveryAge = 23 * 24 * time.Hour

// DefaultHTTPAttempts are an HTTP dependency's attempts per call
// (<PREFIX>_MAX_ATTEMPTS): with 4 (5) receives, 8 (10) calls at most per
// message, within the 15 of docs/design.md#retry-layers.
const DefaultHTTPAttempts = 2

// NewConsumer is a queue (NewQueue) and the Go Lambda that drains it: the
// event source mapping with partial batch responses and a
// MaximumConcurrency ceiling, the function's reserved concurrency equal to
// that ceiling (MF-ESM-RESERVED), the variables every consumer reads and,
// in a VPC, a security group that lets HTTPS out. AddHTTPDependency adds an
// HTTP API with its key in Secrets Manager, AddBreaker a circuit breaker
// shared in the Valkey cache (constructs/dependency).
//
// ConsumerProps configures a Consumer. The Context's EnvironmentName, DataKey and
// Alerts, Function.Entry and MaximumConcurrency are required; every other
// zero value is the documented default.
type ConsumerProps struct {
	core.Context
	// Queue configures the queue (queues.QueueProps); its Context is the
	// consumer's.
	Queue QueueProps
	// Function configures the function (golambda.Props: Entry,
	// FunctionName, Description, Timeout, MemorySize, Environment, Vpc,
	// VpcSubnets). The consumer sets what the Context gives a function, the
	// reserved concurrency, the security group and the consumer variables.
	// Its Timeout is the real worst case: the queue's visibility timeout is
	// derived from it, or checked against it.
	Function golambda.Props
	// MaximumConcurrency is the event source's ceiling (2..1000) and the
	// function's reserved concurrency: size it against the consumer's
	// slowest dependency (Ceiling). Required.
	MaximumConcurrency float64
	// BatchSize per invocation (default 10).
	BatchSize float64
	// BatchConcurrency is how many records (FIFO: message groups) one
	// invocation handles at once (BATCH_CONCURRENCY). Zero means BatchSize.
	BatchConcurrency float64
	// DefersMessages sets MAX_RECEIVE_COUNT (the queue's maxReceiveCount),
	// which a consumer that returns messages for later (sqsconsumer.Plan)
	// needs to know its last receive, and lets it send the delayed copy of
	// the last receive to its own standard queue; the copies lengthen the
	// queue's longest pass.
	DefersMessages bool
	// OperatorRoleArn is the on-call's role (config Roles.Operator),
	// admitted as a producer of the queue for the DLQ runbook's redrive.
	// Empty admits nobody.
	OperatorRoleArn string
	// IdempotencyWindow, when set, is the consumer's replay window
	// (IDEMPOTENCY_WINDOW, whole hours): it refuses events older than this
	// and keeps its idempotency records as long (sqsbatch.Window).
	// Synthesis fails unless it covers the queue's longest legitimate pass
	// (LongestPass). Nil: no window, for a consumer whose duplicates are
	// recognised however late. docs/design.md#replay-windows.
	IdempotencyWindow awscdk.Duration
	// UpstreamMaxAge is how old a message can already be when it reaches
	// the queue (for a queue subscribed to an SNS topic,
	// queues.FanOutMaxDeliveryAge). Nil: 0.
	UpstreamMaxAge awscdk.Duration
	// EgressReason describes the HTTPS egress of its security group in a
	// VPC: what it calls outside the VPC's endpoints. Empty: its HTTP
	// dependencies and AWS APIs.
	EgressReason string
	// SecretsEndpoint is the VPC's Secrets Manager interface endpoint
	// (network.Network.SecretsEndpoint): required in a VPC for a consumer
	// that reads an API key (AddHTTPDependency).
	SecretsEndpoint awsec2.IInterfaceVpcEndpoint
}

// Consumer is a queue with its consumer function.
type Consumer struct {
	constructs.Construct
	// Queue is the source queue with its DLQ and alarms.
	Queue *Queue
	// Function drains it.
	Function *golambda.Function
	// Mapping is the event source mapping.
	Mapping awslambda.EventSourceMapping
	// SecurityGroup is the function's (nil outside a VPC).
	SecurityGroup awsec2.SecurityGroup
	// MaximumConcurrency is the ceiling and reserved concurrency;
	// BatchConcurrency the records handled at once per invocation.
	MaximumConcurrency, BatchConcurrency float64
	// LongestPass is the queue's longest legitimate pass (what
	// IdempotencyWindow must cover).
	LongestPass Pass
	// IdempotencyWindow is the window the function gets (0 without one).
	IdempotencyWindow time.Duration

	props       ConsumerProps
	breakerSeen map[string]bool
}

// NewConsumer creates the consumer. Every problem is reported at synth.
func NewConsumer(scope constructs.Construct, id string, props *ConsumerProps) *Consumer {
	c, v, props := core.Begin(scope, id, "queueconsumer", props)
	q := &Consumer{Construct: c, props: *props, breakerSeen: map[string]bool{}}
	v.If(props.Function.Entry == "", "Entry is required (the function's main package)")
	props.Require(v, core.EnvironmentName)
	mc := props.MaximumConcurrency
	if v.If(mc < MinMaximumConcurrency || mc > MaxMaximumConcurrency || mc != math.Trunc(mc),
		"MaximumConcurrency must be an integer in %d..%d (the ceiling sized against the slowest dependency, Ceiling), got %v",
		MinMaximumConcurrency, MaxMaximumConcurrency, mc) {
		mc = MinMaximumConcurrency
	}
	batch := cmp.Or(props.BatchSize, DefaultBatchSize)
	q.MaximumConcurrency = mc
	q.BatchConcurrency = v.Count("BatchConcurrency", props.BatchConcurrency, batch, 1, 100)

	qp := props.Queue
	qp.Context = props.Context
	q.Queue = NewQueue(c, "Cola", &qp)
	upstream := v.Seconds("UpstreamMaxAge", props.UpstreamMaxAge, 0, 0, math.MaxInt32)
	deferral := time.Duration(0)
	if props.DefersMessages {
		// Each deferral copy waits out its delay and the queue's receives.
		deferral = time.Duration(lambdaapi.MaxDeferrals*int(q.Queue.MaxReceiveCount)) * lambdaapi.DeferralDelay
	}
	q.LongestPass = q.Queue.LongestPass(time.Duration(upstream*float64(time.Second)), deferral)

	env := map[string]*string{
		lambdaapi.EnvEnvironment:      jsii.String(props.Environment()),
		lambdaapi.EnvBatchConcurrency: jsii.String(strconv.Itoa(int(q.BatchConcurrency))),
	}
	if props.DefersMessages {
		env[lambdaapi.EnvMaxReceiveCount] = jsii.String(strconv.Itoa(int(q.Queue.MaxReceiveCount)))
	}
	if props.IdempotencyWindow != nil {
		w := time.Duration(v.Seconds("IdempotencyWindow", props.IdempotencyWindow, 0, 0, math.MaxInt32) * float64(time.Second))
		switch {
		case w < lambdaapi.ReadmissionValidity:
			v.Addf("IdempotencyWindow %s is shorter than a re-admission's validity (%s)", w, lambdaapi.ReadmissionValidity)
		case w%time.Hour != 0:
			v.Addf("IdempotencyWindow %s must be whole hours", w)
		default:
			if err := q.LongestPass.Covers(w); err != nil {
				v.Addf("%v", err)
			}
		}
		q.IdempotencyWindow = w
		env[lambdaapi.EnvIdempotencyWindow] = jsii.String(lambdaapi.FormatWindow(w))
	}
	for k, val := range props.Function.Environment {
		env[k] = val
	}
	fp := props.Function
	fp.Context = props.Context
	fp.Environment = env
	fp.ReservedConcurrentExecutions = jsii.Number(mc)
	if fp.Vpc != nil {
		q.SecurityGroup = dependency.NewSecurityGroup(c, "GrupoSeguridad", fp.Vpc,
			fmt.Sprintf("%s: HTTPS to its dependencies and AWS APIs; the cache admits this group", fp.Entry), cmp.Or(props.EgressReason, "HTTPS: the consumer's HTTP dependencies and AWS APIs"))
		fp.SecurityGroups = &[]awsec2.ISecurityGroup{q.SecurityGroup}
	}
	q.Function = golambda.NewFunction(c, "Funcion", &fp)
	q.Mapping = q.Queue.AddConsumer(q.Function.Function, ConsumerOptions{
		MaximumConcurrency: mc,
		BatchSize:          batch,
		SendsCopies:        props.DefersMessages && !props.Queue.Fifo,
	})
	q.Function.Function.AddEnvironment(jsii.String(lambdaapi.EnvVisibilityTimeout), jsii.String(fmt.Sprintf("%.0fs", q.Queue.VisibilityTimeoutSeconds())), nil)
	q.Queue.AdmitRedriver(props.OperatorRoleArn)
	return q
}

// Ceiling sizes a consumer against a dependency that accepts maxInFlight
// requests from us at once: each invocation handles up to perInvocation
// records at once (fewer when maxInFlight is small), and the ceiling is how
// many invocations keep the product within maxInFlight, at least 2 (the
// event source minimum) and at most envCeiling (the environment's
// MaxConsumerConcurrency).
func Ceiling(maxInFlight, perInvocation, envCeiling float64) (maximumConcurrency, batchConcurrency float64) {
	batchConcurrency = math.Max(1, math.Min(perInvocation, math.Floor(maxInFlight/2)))
	maximumConcurrency = math.Floor(maxInFlight / batchConcurrency)
	maximumConcurrency = math.Max(MinMaximumConcurrency, math.Min(maximumConcurrency, envCeiling))
	return maximumConcurrency, batchConcurrency
}

// HTTPDependency describes an HTTP API the consumer calls (lambdas/httpdep).
type HTTPDependency struct {
	// Name is the breaker's name and the Dependencia dimension ("almacen").
	Name string
	// Prefix of the variables ("ALMACEN": ALMACEN_URL, ...).
	Prefix string
	// URL is the https base URL (per environment, from config).
	URL string
	// SecretName of its API key. Nil lets CloudFormation name it.
	SecretName *string
	// MaxAttempts per call (<PREFIX>_MAX_ATTEMPTS). Zero means
	// DefaultHTTPAttempts.
	MaxAttempts float64
	// ReadTimeout per attempt (<PREFIX>_READ_TIMEOUT, 1 s to 2 min). Nil
	// means lambdaapi.DefaultReadTimeout (30 s).
	ReadTimeout awscdk.Duration
	// Issuer says who issues the key, for the secret's description and the
	// rotation acknowledgement ("the warehouse").
	Issuer string
}

// AddHTTPDependency creates the dependency's API-key secret
// (dependency.NewAPIKey), lets the function read it (its role only,
// through Secrets Manager, and the endpoint in a VPC), and sets the
// lambdas/httpdep variables.
func (c *Consumer) AddHTTPDependency(id string, d HTTPDependency) awssecretsmanager.Secret {
	scope := constructs.NewConstruct(c.Construct, jsii.String(id))
	v := core.Check(scope, "queueconsumer")
	v.If(!strings.HasPrefix(d.URL, "https://") || len(d.URL) <= len("https://"), "URL %q of %s must be an https URL", d.URL, d.Name)
	v.If(d.Name == "" || d.Prefix == "" || strings.ToUpper(d.Prefix) != d.Prefix, "Name and an upper-case Prefix are required (got %q, %q)", d.Name, d.Prefix)
	attempts := v.Count("MaxAttempts", d.MaxAttempts, DefaultHTTPAttempts, 1, 10)
	read := v.Seconds("ReadTimeout", d.ReadTimeout, lambdaapi.DefaultReadTimeout.Seconds(), 1, 120)
	entry := c.props.Function.Entry
	secret := dependency.NewAPIKey(scope, "ClaveAPI", &dependency.APIKeyProps{
		Context:     c.props.Context,
		SecretName:  d.SecretName,
		Description: fmt.Sprintf("API key of %s for %s (plain string or {\"api_key\": ...}). Created with a random placeholder: put the real key before the first message.", d.Issuer, entry),
		Rotation:    fmt.Sprintf("%s issues this API key; it is rotated on their side and then stored here (put-secret-value). A rotation Lambda cannot mint their keys. The client reads the secret again when the API answers 401 (lambdas/apikey).", d.Issuer),
	})
	dependency.GrantRead(secret, c.props.DataKey, c.Function.Function)
	if c.SecurityGroup != nil {
		dependency.ReadSecretsThrough(v, c.SecurityGroup, c.props.SecretsEndpoint, entry+" reads its API key")
	}
	fn := c.Function.Function
	set := func(suffix string, value *string) { fn.AddEnvironment(jsii.String(d.Prefix+suffix), value, nil) }
	set(lambdaapi.EnvSuffixURL, jsii.String(d.URL))
	set(lambdaapi.EnvSuffixSecretARN, secret.SecretArn())
	set(lambdaapi.EnvSuffixReadTimeout, jsii.String(fmt.Sprintf("%ds", int(read))))
	set(lambdaapi.EnvSuffixMaxAttempts, jsii.String(strconv.Itoa(int(attempts))))
	return secret
}

// AddBreaker binds the function to the breaker store (once) and alarms
// when the circuit of dependency opens (dependency.NewCircuitOpenedAlarm).
// effect says what an open circuit means for this consumer, for the
// alarm's description. The function must be in the VPC.
func (c *Consumer) AddBreaker(store dependency.BreakerStore, name, effect string) awscloudwatch.Alarm {
	v := core.Check(c.Construct, "queueconsumer")
	if !v.If(store == nil, "AddBreaker(%s): the breaker store (the Valkey cache) is required", name) && name != "" {
		store.Bind(c.Function.Function, name)
	}
	v.If(name == "", "AddBreaker: the dependency's name is required")
	v.If(c.breakerSeen[name], "AddBreaker(%s) called twice", name)
	c.breakerSeen[name] = true
	return dependency.NewCircuitOpenedAlarm(c.Construct, "CircuitoAbierto-"+name, c.props.Context, cmp.Or(name, "missing"),
		fmt.Sprintf("Circuit of %s OPENED (%s, %s): %s Check the dependency's status and DependenciaErrores/DependenciaLatencia.",
			name, c.props.Environment(), c.props.Function.Entry, effect))
}
