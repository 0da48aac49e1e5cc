// Package queueconsumer is a queue and the Go Lambda that drains it, as one
// construct: the queue with its DLQ and alarms (constructs/reliablequeue),
// the function (constructs/golambda), the event source mapping with partial
// batch responses and a MaximumConcurrency ceiling, the function's reserved
// concurrency equal to that ceiling (so Lambda never throttles a batch,
// which would spend a receive: MF-ESM-RESERVED), the environment every
// consumer reads (lambdas/sqsconsumer/consumerapi), and, when the consumer calls
// services on the internet, its place in the VPC's egress subnets with a
// security group of its own.
//
// Dependencies are added with methods: AddHTTPDependency (an HTTP API with
// its API key in Secrets Manager, lambdas/httpdep) and AddBreaker (a
// circuit breaker shared in the Valkey cache, with its CircuitoAbierto
// alarm). The consumers themselves (constructs/consumers) say which.
package queueconsumer

import (
	"fmt"
	"math"
	"strconv"
	"strings"
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
	"github.com/mercadofresco/integration/constructs/reliablequeue"
	"github.com/mercadofresco/integration/constructs/removal"
	"github.com/mercadofresco/integration/lambdas/breaker/breakerapi"
	"github.com/mercadofresco/integration/lambdas/httpdep/httpdepapi"
	"github.com/mercadofresco/integration/lambdas/metrics/metricsapi"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer/consumerapi"
)

// SDKMaxAttempts is the AWS SDK's attempts per call of every consumer
// (AWS_MAX_ATTEMPTS; docs/design.md#retry-layers).
const SDKMaxAttempts = 2

// Props configures a Consumer. Entry, EnvironmentName, MaximumConcurrency,
// EncryptionKey and AlarmTopic are required; every other zero value is the
// documented default.
type Props struct {
	// Entry is the function's main package ("lambdas/preparar-pedido").
	Entry string
	// Builder compiles it (share the app's).
	Builder *golambda.Builder
	// FunctionName is the physical name. Nil lets CloudFormation name it.
	FunctionName *string
	// Description of the function.
	Description *string
	// Timeout is the real worst case of one invocation (the queue's
	// visibility timeout is derived from it, or checked against it).
	// Nil means golambda's default (30 s).
	Timeout awscdk.Duration
	// MemorySize in MB. Zero means golambda's default.
	MemorySize float64
	// Environment adds variables of the consumer's own.
	Environment map[string]*string
	// EnvironmentName is dev, staging or prod (ENTORNO: the Entorno metric
	// dimension).
	EnvironmentName string

	// QueueName and DeadLetterQueueName are the physical names.
	QueueName, DeadLetterQueueName *string
	// Fifo, HighThroughputFifo, MaxReceiveCount, VisibilityTimeout and
	// OldestMessageAgeThreshold: as in reliablequeue.Props.
	Fifo, HighThroughputFifo  bool
	MaxReceiveCount           float64
	VisibilityTimeout         awscdk.Duration
	OldestMessageAgeThreshold awscdk.Duration

	// MaximumConcurrency is the event source's ceiling (2..1000) and the
	// function's reserved concurrency: size it against the consumer's
	// slowest dependency (see Ceiling). Required.
	MaximumConcurrency float64
	// BatchSize per invocation (default 10).
	BatchSize float64
	// BatchConcurrency is how many records (FIFO: message groups) one
	// invocation handles at once (BATCH_CONCURRENCY). Zero means BatchSize.
	BatchConcurrency float64
	// DefersMessages sets MAX_RECEIVE_COUNT (the queue's maxReceiveCount),
	// which a consumer that returns messages for later (lambdas/degrade)
	// needs to know its last receive, and lets it send the delayed copy of
	// the last receive to its own queue (reliablequeue.ConsumerOptions
	// SendsCopies; standard queues only). Its deferral copies lengthen the
	// queue's longest pass (see IdempotencyWindow).
	DefersMessages bool
	// OperatorRoleArn is the on-call's role (config.Environment.RoleArn of
	// Roles.Operator), admitted as a producer of the queue for the DLQ
	// runbook's redrive (reliablequeue.Queue.AdmitRedriver). Empty admits
	// nobody: a redrive is then refused by the queue's guard.
	OperatorRoleArn string

	// IdempotencyWindow, when set, is the consumer's replay window
	// (IDEMPOTENCY_WINDOW): it refuses events older than this (from their
	// creation time in the body) and keeps its idempotency records as long
	// (lambdas/replaywindow). Synthesis fails unless it covers the queue's
	// longest legitimate pass (LongestPass, from the synthesised
	// retentions). Nil: the consumer has no window, which only a consumer
	// whose duplicates are recognised however late may do (the stock
	// movements' line items). docs/design.md#replay-windows.
	IdempotencyWindow awscdk.Duration
	// UpstreamMaxAge is how old a message can already be when it reaches
	// the queue: for a queue subscribed to an SNS topic, SNS's delivery
	// retries (fanout.MaxDeliveryAge, 23 days). Nil: 0 (sent straight to
	// the queue).
	UpstreamMaxAge awscdk.Duration

	// Vpc and VpcSubnets place the function (the network's egress subnets
	// for a consumer that calls services on the internet). The function
	// gets a security group of its own that allows HTTPS out.
	Vpc        awsec2.IVpc
	VpcSubnets *awsec2.SubnetSelection
	// SecretsEndpoint is the VPC's Secrets Manager interface endpoint
	// (network.Network.SecretsEndpoint). Its private DNS takes every
	// Secrets Manager call of the VPC, so a function in the VPC that reads
	// an API key (AddHTTPDependency) must be admitted to it: required then.
	SecretsEndpoint awsec2.IInterfaceVpcEndpoint

	// EncryptionKey (the data key) encrypts the queues, the function's
	// environment and logs, and the secrets.
	EncryptionKey awskms.IKey
	// AlarmTopic receives every alarm (alertas-mercadofresco).
	AlarmTopic awssns.ITopic
	// LogRetention of the function's log group.
	LogRetention awslogs.RetentionDays
	// RemovalPolicy of the queues, the log group and the secrets (the
	// environment's; mapped by constructs/removal).
	RemovalPolicy awscdk.RemovalPolicy
}

// Consumer is a queue with its consumer function.
type Consumer struct {
	constructs.Construct
	// Queue is the source queue with its DLQ and alarms.
	Queue *reliablequeue.Queue
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
	LongestPass reliablequeue.Pass
	// IdempotencyWindow is the window the function gets (0 without one).
	IdempotencyWindow time.Duration

	props       Props
	breakerSet  bool
	breakerSeen map[string]bool
}

// New creates the consumer. Every problem is an annotation error and the
// construct is still built whole.
func New(scope constructs.Construct, id string, props *Props) *Consumer {
	if props == nil {
		props = &Props{}
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	q := &Consumer{Construct: c, props: *props, breakerSeen: map[string]bool{}}
	fail := func(format string, a ...any) {
		awscdk.Annotations_Of(c).AddError(jsii.String(fmt.Sprintf("queueconsumer %s: %s", *c.Node().Path(), fmt.Sprintf(format, a...))))
	}
	if props.Entry == "" {
		fail("Entry is required (the function's main package)")
	}
	if props.EnvironmentName == "" {
		fail("EnvironmentName is required (ENTORNO, the metric dimension)")
		q.props.EnvironmentName = "missing" // a stand-in: synthesis fails on the error
	}
	mc := props.MaximumConcurrency
	if mc < reliablequeue.MinMaximumConcurrency || mc > reliablequeue.MaxMaximumConcurrency || mc != math.Trunc(mc) {
		fail("MaximumConcurrency must be an integer in %d..%d (the ceiling sized against the slowest dependency), got %v",
			reliablequeue.MinMaximumConcurrency, reliablequeue.MaxMaximumConcurrency, mc)
		mc = reliablequeue.MinMaximumConcurrency
	}
	batch := props.BatchSize
	if batch == 0 {
		batch = reliablequeue.DefaultBatchSize
	}
	conc := props.BatchConcurrency
	if conc == 0 {
		conc = batch
	}
	if conc < 1 || conc > 100 || conc != math.Trunc(conc) {
		fail("BatchConcurrency must be an integer in 1..100, got %v", conc)
		conc = 1
	}
	q.MaximumConcurrency, q.BatchConcurrency = mc, conc

	q.Queue = reliablequeue.New(c, "Cola", &reliablequeue.Props{
		QueueName:                 props.QueueName,
		DeadLetterQueueName:       props.DeadLetterQueueName,
		Fifo:                      props.Fifo,
		HighThroughputFifo:        props.HighThroughputFifo,
		MaxReceiveCount:           props.MaxReceiveCount,
		VisibilityTimeout:         props.VisibilityTimeout,
		OldestMessageAgeThreshold: props.OldestMessageAgeThreshold,
		Context:                   core.Context{DataKey: props.EncryptionKey, Alerts: props.AlarmTopic, RemovalPolicy: props.RemovalPolicy},
	})

	upstream := durationOf(props.UpstreamMaxAge, "UpstreamMaxAge", fail)
	deferral := time.Duration(0)
	if props.DefersMessages {
		// Each deferral copy waits out its delay and the queue's receives.
		deferral = time.Duration(consumerapi.MaxDeferrals*int(q.Queue.MaxReceiveCount)) * consumerapi.DeferralDelay
	}
	q.LongestPass = q.Queue.LongestPass(upstream, deferral)

	env := map[string]*string{
		consumerapi.EnvEnvironment:      jsii.String(q.props.EnvironmentName),
		consumerapi.EnvBatchConcurrency: jsii.String(strconv.Itoa(int(conc))),
		"AWS_MAX_ATTEMPTS":              jsii.String(strconv.Itoa(SDKMaxAttempts)),
	}
	if props.DefersMessages {
		env[consumerapi.EnvMaxReceiveCount] = jsii.String(strconv.Itoa(int(q.Queue.MaxReceiveCount)))
	}
	if props.IdempotencyWindow != nil {
		w := durationOf(props.IdempotencyWindow, "IdempotencyWindow", fail)
		switch {
		case w < consumerapi.ReadmissionValidity:
			fail("IdempotencyWindow %s is shorter than a re-admission's validity (%s)", w, consumerapi.ReadmissionValidity)
		case w%time.Hour != 0:
			fail("IdempotencyWindow %s must be whole hours", w)
		default:
			if err := q.LongestPass.Covers(w); err != nil {
				fail("%v", err)
			}
		}
		q.IdempotencyWindow = w
		env[consumerapi.EnvIdempotencyWindow] = jsii.String(consumerapi.FormatWindow(w))
	}
	for k, v := range props.Environment {
		env[k] = v
	}
	fp := &golambda.Props{
		Entry:                        props.Entry,
		Builder:                      props.Builder,
		FunctionName:                 props.FunctionName,
		Description:                  props.Description,
		Timeout:                      props.Timeout,
		MemorySize:                   props.MemorySize,
		Environment:                  env,
		EncryptionKey:                props.EncryptionKey,
		LogRetention:                 props.LogRetention,
		LogRemovalPolicy:             props.RemovalPolicy,
		AlarmTopic:                   props.AlarmTopic,
		ReservedConcurrentExecutions: jsii.Number(mc),
	}
	if props.Vpc != nil {
		q.SecurityGroup = awsec2.NewSecurityGroup(c, jsii.String("GrupoSeguridad"), &awsec2.SecurityGroupProps{
			Vpc:              props.Vpc,
			Description:      jsii.String(fmt.Sprintf("%s: HTTPS to its dependencies and AWS APIs; the cache admits this group", props.Entry)),
			AllowAllOutbound: jsii.Bool(false),
		})
		q.SecurityGroup.AddEgressRule(awsec2.Peer_AnyIpv4(), awsec2.Port_Tcp(jsii.Number(443)),
			jsii.String("HTTPS: the consumer's HTTP dependencies and AWS APIs"), nil)
		fp.Vpc, fp.VpcSubnets = props.Vpc, props.VpcSubnets
		fp.SecurityGroups = &[]awsec2.ISecurityGroup{q.SecurityGroup}
	}
	q.Function = golambda.NewFunction(c, "Funcion", fp)
	q.Mapping = q.Queue.AddConsumer(q.Function.Function, reliablequeue.ConsumerOptions{
		MaximumConcurrency: mc,
		BatchSize:          batch,
		SendsCopies:        props.DefersMessages && !props.Fifo,
	})
	q.Queue.AdmitRedriver(props.OperatorRoleArn)
	return q
}

// durationOf converts a literal Duration (nil is 0), reporting a token or
// a negative value through fail.
func durationOf(d awscdk.Duration, field string, fail func(string, ...any)) time.Duration {
	if d == nil {
		return 0
	}
	s, err := core.Seconds(d)
	if err != nil || s < 0 {
		fail("%s must be a literal, non-negative duration (%v)", field, err)
		return 0
	}
	return time.Duration(s * float64(time.Second))
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
	maximumConcurrency = math.Max(reliablequeue.MinMaximumConcurrency, math.Min(maximumConcurrency, envCeiling))
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
	// MaxAttempts per call (<PREFIX>_MAX_ATTEMPTS). Zero means 2.
	MaxAttempts float64
	// ReadTimeout per attempt (<PREFIX>_READ_TIMEOUT). Nil means 30 s.
	ReadTimeout awscdk.Duration
	// Issuer says who issues the key, for the secret's description and the
	// rotation acknowledgement ("the warehouse").
	Issuer string
}

// AddHTTPDependency creates the dependency's API-key secret (encrypted
// with the data key, a random placeholder until an operator puts the real
// key), lets the function read it (its role only, through Secrets
// Manager), and sets the lambdas/httpdep variables.
func (c *Consumer) AddHTTPDependency(id string, d HTTPDependency) awssecretsmanager.Secret {
	scope := constructs.NewConstruct(c.Construct, jsii.String(id))
	fail := func(format string, a ...any) {
		awscdk.Annotations_Of(scope).AddError(jsii.String(fmt.Sprintf("queueconsumer %s: %s", *scope.Node().Path(), fmt.Sprintf(format, a...))))
	}
	if !strings.HasPrefix(d.URL, "https://") || len(d.URL) <= len("https://") {
		fail("URL %q of %s must be an https URL", d.URL, d.Name)
	}
	if d.Name == "" || d.Prefix == "" || strings.ToUpper(d.Prefix) != d.Prefix {
		fail("Name and an upper-case Prefix are required (got %q, %q)", d.Name, d.Prefix)
	}
	attempts := d.MaxAttempts
	if attempts == 0 {
		attempts = 2
	}
	if attempts < 1 || attempts > 10 || attempts != math.Trunc(attempts) {
		fail("MaxAttempts must be an integer in 1..10, got %v", d.MaxAttempts)
		attempts = 2
	}
	read := 30.0
	if d.ReadTimeout != nil {
		if s, err := core.Seconds(d.ReadTimeout); err != nil || s < 1 || s > 120 {
			fail("ReadTimeout must be between 1 s and 2 min")
		} else {
			read = s
		}
	}
	secret := awssecretsmanager.NewSecret(scope, jsii.String("ClaveAPI"), &awssecretsmanager.SecretProps{
		SecretName: d.SecretName,
		Description: jsii.String(fmt.Sprintf("API key of %s for %s (plain string or {\"api_key\": ...}). Created with a random placeholder: put the real key before the first message.",
			d.Issuer, c.props.Entry)),
		EncryptionKey: c.props.EncryptionKey,
		RemovalPolicy: removal.For(c.props.RemovalPolicy, removal.Data),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			PasswordLength:     jsii.Number(40),
			ExcludePunctuation: jsii.Bool(true),
		},
	})
	cdknag.NagSuppressions_AddResourceSuppressions(secret, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-SMG4"),
		Reason: jsii.String(fmt.Sprintf("%s issues this API key; it is rotated on their side and then stored here (put-secret-value). A rotation Lambda cannot mint their keys. The client reads the secret again when the API answers 401 (lambdas/apikey).",
			d.Issuer)),
	}}, jsii.Bool(true))
	c.grantSecretRead(secret)
	if c.SecurityGroup != nil {
		if c.props.SecretsEndpoint == nil {
			fail("SecretsEndpoint is required in a VPC: %s reads its API key from Secrets Manager, whose endpoint's private DNS takes the call", c.props.Entry)
		} else {
			c.SecurityGroup.Connections().AllowTo(c.props.SecretsEndpoint, awsec2.Port_Tcp(jsii.Number(443)), jsii.String(c.props.Entry+" reads its API key"))
		}
	}
	fn := c.Function.Function
	set := func(suffix, v string) { fn.AddEnvironment(jsii.String(d.Prefix+suffix), jsii.String(v), nil) }
	set(httpdepapi.EnvSuffixURL, d.URL)
	fn.AddEnvironment(jsii.String(d.Prefix+httpdepapi.EnvSuffixSecretARN), secret.SecretArn(), nil)
	set(httpdepapi.EnvSuffixReadTimeout, fmt.Sprintf("%ds", int(read)))
	set(httpdepapi.EnvSuffixMaxAttempts, strconv.Itoa(int(attempts)))
	return secret
}

// grantSecretRead lets the function read secret through its role only
// (Secret.GrantRead would write the key's policy when the key lives in
// another stack).
func (c *Consumer) grantSecretRead(secret awssecretsmanager.Secret) {
	awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      c.Function.Function,
		Actions:      jsii.Strings("secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"),
		ResourceArns: jsii.Strings(*secret.SecretArn()),
	})
	core.GrantKey(c.props.EncryptionKey, c.Function.Function, "secretsmanager", "kms:Decrypt")
}

// BreakerStore is where circuit breakers keep their shared state:
// *cache.Cache (mercadofresco-catalogo). Bind admits the function to it and
// sets the breakerapi variables.
type BreakerStore interface {
	Bind(fn awslambda.Function)
}

// AddBreaker binds the function to the breaker store (once) and alarms
// when the circuit of dependency opens (CircuitoAbierto, Sum > 0 in a
// minute). effect says what an open circuit means for this consumer, for
// the alarm's description. The function must be in the VPC.
func (c *Consumer) AddBreaker(store BreakerStore, dependency, effect string) awscloudwatch.Alarm {
	if store == nil {
		awscdk.Annotations_Of(c.Construct).AddError(jsii.String(fmt.Sprintf("queueconsumer %s: AddBreaker(%s): the breaker store (the Valkey cache) is required", *c.Node().Path(), dependency)))
	} else if !c.breakerSet {
		c.breakerSet = true
		store.Bind(c.Function.Function)
	}
	if dependency == "" {
		awscdk.Annotations_Of(c.Construct).AddError(jsii.String(fmt.Sprintf("queueconsumer %s: AddBreaker: the dependency's name is required", *c.Node().Path())))
	}
	if c.breakerSeen[dependency] {
		awscdk.Annotations_Of(c.Construct).AddError(jsii.String(fmt.Sprintf("queueconsumer %s: AddBreaker(%s) called twice", *c.Node().Path(), dependency)))
	}
	c.breakerSeen[dependency] = true
	return alarm.New(c.Construct, "CircuitoAbierto-"+dependency, &alarm.Props{
		Metric:      c.MetricCircuitOpened(dependency),
		Topic:       c.props.AlarmTopic,
		Threshold:   0,
		MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING, // emitted only on a transition
		Description: fmt.Sprintf("Circuit of %s OPENED (%s, %s): %s Check the dependency's status and DependenciaErrores/DependenciaLatencia.",
			dependency, c.props.EnvironmentName, c.props.Entry, effect),
	})
}

// MetricCircuitOpened counts the transitions to open of dependency's
// circuit (Sum per minute).
func (c *Consumer) MetricCircuitOpened(dependency string) awscloudwatch.Metric {
	return c.dependencyMetric(breakerapi.MetricOpened, dependency, "Sum")
}

// MetricDependencyLatency is the latency of one attempt to dependency
// (milliseconds) at stat ("p99").
func (c *Consumer) MetricDependencyLatency(dependency, stat string) awscloudwatch.Metric {
	return c.dependencyMetric(httpdepapi.MetricLatency, dependency, stat)
}

func (c *Consumer) dependencyMetric(name, dependency, stat string) awscloudwatch.Metric {
	if dependency == "" {
		dependency = "missing" // reported by the caller's validation
	}
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:  jsii.String(metricsapi.Namespace),
		MetricName: jsii.String(name),
		DimensionsMap: &map[string]*string{
			metricsapi.DimensionEnvironment: jsii.String(c.props.EnvironmentName),
			breakerapi.DimensionDependency:  jsii.String(dependency),
		},
		Period:    awscdk.Duration_Minutes(jsii.Number(1)),
		Statistic: jsii.String(stat),
	})
}

// GrantPrincipal makes the consumer an awsiam.IGrantable (its function).
func (c *Consumer) GrantPrincipal() awsiam.IPrincipal { return c.Function.GrantPrincipal() }

// MetricDeadLetterMessagesVisible is the DLQ depth.
func (c *Consumer) MetricDeadLetterMessagesVisible(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return c.Queue.MetricDeadLetterMessagesVisible(opts)
}

// MetricApproximateAgeOfOldestMessage is the age of the queue's oldest message.
func (c *Consumer) MetricApproximateAgeOfOldestMessage(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return c.Queue.MetricApproximateAgeOfOldestMessage(opts)
}
