package queues

import (
	"cmp"
	"strings"

	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/datastore"
	"github.com/mercadofresco/integration/constructs/dependency"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// The four queue consumers of the order flow: Preparacion (the warehouse
// API), Correo (SES v2 or the secondary e-mail API), AvisoERP (the ERP API),
// all three in the egress subnets behind circuit breakers, and
// MovimientosStock (the stock table; no VPC). Ceilings are sized against
// each one's slowest dependency. docs/design.md#consumer-ceilings.

// Platform is what every consumer shares: the platform context (its
// EnvironmentName, DataKey and Alerts are required) and the environment's
// ceilings.
type Platform struct {
	core.Context
	// MaxConsumerConcurrency is the environment's ceiling of any event
	// source (config.Environment.MaxConsumerConcurrency, >= 2).
	MaxConsumerConcurrency float64
	// OperatorRoleArn is the on-call's role, admitted as a producer of every
	// consumer's queue for the DLQ runbook's redrive. Empty admits nobody.
	OperatorRoleArn string
}

// Egress places a consumer that calls services on the internet: the VPC,
// its egress subnets (through NAT), the Secrets Manager endpoint its API
// keys are read through and the breakers' cache. All four are required.
type Egress struct {
	Vpc             awsec2.IVpc
	Subnets         *awsec2.SubnetSelection
	SecretsEndpoint awsec2.IInterfaceVpcEndpoint
	Breakers        dependency.BreakerStore
}

// Names are a consumer's physical names; nil lets CloudFormation name a
// resource (queues get a name derived from the construct path).
type Names struct {
	Queue, DeadLetterQueue, Function *string
}

func (p Platform) check(scope constructs.Construct, what string) {
	v := core.Check(scope, "consumers "+what)
	p.Require(v, core.EnvironmentName|core.DataKey|core.Alerts)
	v.If(p.MaxConsumerConcurrency < 2, "MaxConsumerConcurrency (>= 2) is required")
}

func (e Egress) check(scope constructs.Construct, what string) {
	core.Check(scope, "consumers "+what).If(e.Vpc == nil || e.Subnets == nil || e.SecretsEndpoint == nil || e.Breakers == nil,
		"it calls services on the internet behind circuit breakers: Egress.Vpc, Egress.Subnets (the egress subnets), Egress.SecretsEndpoint and Egress.Breakers (the Valkey cache) are required")
}

// queueProps are the consumer's props as the platform, its names and its
// entry give them.
func (p Platform) queueProps(n Names, entry, description string) ConsumerProps {
	return ConsumerProps{
		Context:         p.Context,
		Queue:           QueueProps{QueueName: n.Queue, DeadLetterQueueName: n.DeadLetterQueue},
		Function:        golambda.Props{Entry: entry, FunctionName: n.Function, Description: jsii.String(description)},
		OperatorRoleArn: p.OperatorRoleArn,
	}
}

// bindTable binds the consumer's function to table, or reports it missing.
func bindTable(scope constructs.Construct, what string, table *datastore.Table, fn *golambda.Function, key string) {
	if !core.Check(scope, "consumers").If(table == nil, "%s is required (%s)", what, key) {
		// A shared table's consumer gets its own records only: the prefix of
		// key ("preparacion:<pedido_id>"). The stock table is the stock
		// consumer's alone.
		var prefixes []string
		if prefix, _, shared := strings.Cut(key, ":"); shared {
			prefixes = []string{prefix + ":"}
		}
		table.BindTo(fn.Function, prefixes...)
	}
}

// HTTPConsumer is a consumer of an HTTP dependency behind a breaker.
type HTTPConsumer struct {
	*Consumer
	// Secret holds the dependency's API key.
	Secret awssecretsmanager.Secret
	// CircuitOpenedAlarm fires when the dependency's circuit opens.
	CircuitOpenedAlarm awscloudwatch.Alarm
}

// httpPerInvocation is how many records one invocation of an HTTP
// consumer sends at once, fewer when the dependency takes fewer
// (docs/design.md#consumer-ceilings).
const httpPerInvocation = 5

// HTTPConsumerProps configures a consumer of one HTTP dependency:
// NewPreparacion (the warehouse), NewAvisoERP (the ERP) and, in
// CorreoProps, NewCorreo (the secondary e-mail provider).
type HTTPConsumerProps struct {
	Platform
	Egress
	Names
	// IdempotencyTable records <consumer>:<pedido_id> (preparacion:,
	// aviso-erp:, correo-confirmacion: and the send records). Required.
	IdempotencyTable *datastore.Table
	// URL is the dependency's https base URL (config.Consumers).
	URL string
	// MaxInFlight is how many requests at once the dependency takes (>= 2).
	MaxInFlight float64
	// SecretName of the dependency's API key. Nil lets CloudFormation name it.
	SecretName *string
}

// Order preparation's numbers (docs/design.md#visibility-timeout).
const (
	// PreparacionTimeout bounds one invocation: one 30 s warehouse attempt,
	// its retry wait and most of a second attempt (the handler's context
	// ends at the deadline and the Idempotency-Key makes a cut attempt safe
	// to repeat).
	PreparacionTimeout = 60 * time.Second
	// PreparacionVisibility is 400 s against the 30 s read timeout, above
	// 6 × 60 s.
	PreparacionVisibility = 400 * time.Second
)

// httpSpec is what distinguishes the consumers of one HTTP dependency.
type httpSpec struct {
	what, entry, description string
	timeout, visibility      time.Duration // visibility 0: derived from the timeout
	oldestAge                time.Duration // 0: the queue's default age alarm
	maxReceiveCount          float64
	environment              map[string]*string
	key                      string         // the idempotency key, for the error
	dependencyID             string         // "" means "Dependencia"
	dependency               HTTPDependency // URL and SecretName come from the props
	openEffect               string
	window                   time.Duration // the consumer's replay window
	// grant adds the consumer's own grants, before its dependency's.
	grant func(fn awslambda.Function)
}

// newHTTPConsumer builds, in c, a consumer of one HTTP dependency behind
// its breaker, in the egress subnets, recording its key in the idempotency
// table and deferring messages while the circuit is open. Its replay window
// (IDEMPOTENCY_WINDOW, checked at synth against the queue's longest pass)
// counts SNS's delivery retries as the age a message can have on arrival
// (docs/design.md#replay-windows).
func newHTTPConsumer(c constructs.Construct, props HTTPConsumerProps, spec httpSpec) *HTTPConsumer {
	props.Platform.check(c, spec.what)
	props.Egress.check(c, spec.what)
	qp := props.queueProps(props.Names, spec.entry, spec.description)
	qp.Function.Timeout = core.Duration(spec.timeout)
	qp.Function.Environment = spec.environment
	if spec.visibility > 0 {
		qp.Queue.VisibilityTimeout = core.Duration(spec.visibility)
	}
	if spec.oldestAge > 0 {
		qp.Queue.OldestMessageAgeThreshold = core.Duration(spec.oldestAge)
	}
	qp.Queue.MaxReceiveCount = spec.maxReceiveCount
	qp.MaximumConcurrency, qp.BatchConcurrency = Ceiling(props.MaxInFlight, httpPerInvocation, props.MaxConsumerConcurrency)
	qp.DefersMessages = true
	qp.IdempotencyWindow, qp.UpstreamMaxAge = core.Duration(spec.window), core.Duration(FanOutMaxDeliveryAge)
	qp.Function.Vpc, qp.Function.VpcSubnets, qp.SecretsEndpoint = props.Vpc, props.Subnets, props.SecretsEndpoint
	h := &HTTPConsumer{Consumer: NewConsumer(c, "Consumidor", &qp)}
	// The checks name the constants to change (MF-SQS-VISIBILITY).
	core.SetBy(c, "Timeout", spec.what+"Timeout in constructs/queues")
	if spec.visibility > 0 {
		core.SetBy(c, "VisibilityTimeout", spec.what+"Visibility in constructs/queues")
	}
	// Every HTTP consumer reads the fan-out's PedidoConfirmado.
	core.Accepts(h.Function.Function, eventsapi.TypePedidoConfirmado, eventsapi.AcceptedVersions(eventsapi.TypePedidoConfirmado))
	bindTable(c, "IdempotencyTable", props.IdempotencyTable, h.Function, spec.key)
	if spec.grant != nil {
		spec.grant(h.Function.Function)
	}
	id := cmp.Or(spec.dependencyID, "Dependencia")
	spec.dependency.URL, spec.dependency.SecretName = props.URL, props.SecretName
	h.Secret = h.AddHTTPDependency(id, spec.dependency)
	h.CircuitOpenedAlarm = h.AddBreaker(props.Breakers, spec.dependency.Name, spec.openEffect)
	return h
}

// NewPreparacion creates the order-preparation consumer of
// cola-mercadofresco-pedidos.
func NewPreparacion(scope constructs.Construct, id string, props *HTTPConsumerProps) *HTTPConsumer {
	c, _, props := core.Begin(scope, id, "consumers", props)
	return newHTTPConsumer(c, *props, httpSpec{
		what: "Preparacion", entry: "lambdas/preparar-pedido",
		description: "Sends confirmed orders to the warehouse once (preparacion:<pedido_id>)",
		timeout:     PreparacionTimeout,
		visibility:  PreparacionVisibility,
		// maxReceiveCount 4: the ceiling equals the reserved concurrency, so
		// Lambda does not throttle a batch and a receive is only spent on a
		// real failure (docs/design.md#queue-receives).
		maxReceiveCount: 4,
		key:             "preparacion:<pedido_id>",
		dependency:      HTTPDependency{Name: lambdaapi.NameAlmacen, Prefix: lambdaapi.PrefixAlmacen, Issuer: "the warehouse"},
		window:          lambdaapi.WindowPreparacion,
		openEffect:      "confirmed orders wait in their queue (ChangeMessageVisibility 300 s, a delayed copy on the last receive) and are prepared when the warehouse is back; nothing is dead-lettered for the outage.",
	})
}

// AvisoERPTimeout bounds one invocation of the ERP notice consumer: two
// 30 s attempts, the wait between them (at most the 20 s Retry-After
// honoured, plus jitter) and the idempotency record.
const AvisoERPTimeout = 90 * time.Second

// NewAvisoERP creates the ERP notice consumer.
func NewAvisoERP(scope constructs.Construct, id string, props *HTTPConsumerProps) *HTTPConsumer {
	c, _, props := core.Begin(scope, id, "consumers", props)
	return newHTTPConsumer(c, *props, httpSpec{
		what: "AvisoERP", entry: "lambdas/aviso-erp",
		description: "Notifies the ERP of confirmed orders once (aviso-erp:<pedido_id>); waits while the ERP's circuit is open",
		timeout:     AvisoERPTimeout,
		// 5 receives (AWS advice where throttling can occur; the ERP
		// rate-limits, docs/design.md#queue-receives). The notice may wait:
		// the age alarm keeps the 3 h default.
		maxReceiveCount: 5,
		key:             "aviso-erp:<pedido_id>",
		dependency:      HTTPDependency{Name: lambdaapi.NameERP, Prefix: lambdaapi.PrefixERP, Issuer: "the ERP"},
		window:          lambdaapi.WindowAvisoERP,
		openEffect:      "ERP notices wait in their queue (ChangeMessageVisibility 300 s, a delayed copy on the last receive, up to a day) and are sent when the ERP is back.",
	})
}

// MovimientosStockProps configures NewMovimientosStock.
type MovimientosStockProps struct {
	Platform
	Names
	// StockTable is mercadofresco-stock. Required.
	StockTable *datastore.Table
	// Vpc and Subnets place the function (nil: outside a VPC). It calls
	// DynamoDB (the VPC's gateway endpoint) and SQS (its DLQ), so the
	// subnets must reach SQS: the egress subnets (docs/design.md#control-tower).
	Vpc     awsec2.IVpc
	Subnets *awsec2.SubnetSelection
}

// MovimientosStockTimeout bounds one invocation: ten movements, each a
// read and three writes to DynamoDB (milliseconds each) with the SDK's 2
// attempts, one group after the other in the worst case.
const MovimientosStockTimeout = 30 * time.Second

// NewMovimientosStock creates the stock-movements consumer of the FIFO
// queue (MessageGroupId = sku).
func NewMovimientosStock(scope constructs.Construct, id string, props *MovimientosStockProps) *Consumer {
	c, _, props := core.Begin(scope, id, "consumers", props)
	props.Platform.check(c, "MovimientosStock")
	qp := props.queueProps(props.Names, "lambdas/movimientos-stock", "Applies stock movements to mercadofresco-stock once each, in any order")
	qp.Function.Timeout = core.Duration(MovimientosStockTimeout)
	qp.Function.Vpc, qp.Function.VpcSubnets = props.Vpc, props.Subnets
	qp.EgressReason = "HTTPS: SQS (its DLQ) through the NAT, which has no endpoint in the VPC"
	// FIFO with MessageGroupId = sku: order kept per SKU, ~3,400 groups of
	// parallelism, never one global group; high-throughput FIFO scales per
	// group. maxReceiveCount 4: a failing message blocks its SKU's group
	// until it is dead-lettered, so the safety net is short.
	qp.Queue.Fifo, qp.Queue.HighThroughputFifo, qp.Queue.MaxReceiveCount = true, true, 4
	// DynamoDB on demand is not the limit: the environment's ceiling, and
	// every group of a batch at once.
	qp.MaximumConcurrency = props.MaxConsumerConcurrency
	qp.BatchConcurrency = 10
	q := NewConsumer(c, "Consumidor", &qp)
	core.SetBy(c, "Timeout", "MovimientosStockTimeout in constructs/queues")
	core.Accepts(q.Function.Function, eventsapi.TypeMovimientoStock, eventsapi.AcceptedVersions(eventsapi.TypeMovimientoStock))
	bindTable(c, "StockTable", props.StockTable, q.Function, "its line items and totals")
	return q
}
