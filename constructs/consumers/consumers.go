// Package consumers holds MercadoFresco's four queue consumers, each a
// constructs/queueconsumer (its queue, DLQ, alarms, event source mapping
// with a ceiling, reserved concurrency) with the dependencies and grants of
// its own:
//
//   - Preparacion: cola-mercadofresco-pedidos → the warehouse API
//     (lambdas/preparation), in the VPC's egress subnets with the
//     warehouse's circuit breaker in the Valkey cache.
//   - Correo: the confirmation e-mail queue → SES v2 (a configuration set
//     made here) or the secondary e-mail API (lambdas/confirmationmail), in the
//     egress subnets with both providers' breakers.
//   - AvisoERP: the ERP notice queue → the ERP API (lambdas/erpnotice), in
//     the egress subnets with the ERP's breaker.
//   - MovimientosStock: the stock-movements FIFO queue → the stock table
//     (lambdas/stock); no VPC (DynamoDB and SQS only).
//
// Every ceiling is sized against the consumer's slowest dependency
// (queueconsumer.Ceiling); the numbers and the reasoning are in
// docs/design.md#consumer-ceilings. The three consumers of the fan-out
// get their replay windows (consumerapi.Window*, 45 days), which synthesis
// checks against their queues' longest passes counting SNS's 23 days of
// delivery retries; the stock consumer has none, its line items never
// expire (docs/design.md#replay-windows).
package consumers

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/fanout"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/constructs/idempotencytable"
	"github.com/mercadofresco/integration/constructs/queueconsumer"
	"github.com/mercadofresco/integration/constructs/stocktable"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer/consumerapi"
)

// Platform is what every consumer shares. EnvironmentName, EncryptionKey,
// AlarmTopic and MaxConsumerConcurrency are required.
type Platform struct {
	// EnvironmentName is dev, staging or prod (ENTORNO).
	EnvironmentName string
	// Builder compiles the functions (share the app's).
	Builder *golambda.Builder
	// EncryptionKey is the data key; AlarmTopic alertas-mercadofresco.
	EncryptionKey awskms.IKey
	AlarmTopic    awssns.ITopic
	// LogRetention and RemovalPolicy: the environment's.
	LogRetention  awslogs.RetentionDays
	RemovalPolicy awscdk.RemovalPolicy
	// MaxConsumerConcurrency is the environment's ceiling of any event
	// source (config.Environment.MaxConsumerConcurrency).
	MaxConsumerConcurrency float64
	// OperatorRoleArn is the on-call's role, admitted as a producer of every
	// consumer's queue for the DLQ runbook's redrive
	// (queueconsumer.Props.OperatorRoleArn). Empty admits nobody.
	OperatorRoleArn string
}

// Egress places a consumer that calls services on the internet: the VPC,
// its egress subnets (through NAT), the Secrets Manager endpoint its API
// keys are read through and the breakers' cache. All four are required.
type Egress struct {
	Vpc             awsec2.IVpc
	Subnets         *awsec2.SubnetSelection
	SecretsEndpoint awsec2.IInterfaceVpcEndpoint
	Breakers        queueconsumer.BreakerStore
}

// Names are a consumer's physical names; nil lets CloudFormation name a
// resource (queues get a name derived from the construct path).
type Names struct {
	Queue, DeadLetterQueue, Function *string
}

func (p Platform) check(scope constructs.Construct, what string) {
	var problems []string
	if p.EnvironmentName == "" {
		problems = append(problems, "EnvironmentName")
	}
	if p.EncryptionKey == nil {
		problems = append(problems, "EncryptionKey")
	}
	if p.AlarmTopic == nil {
		problems = append(problems, "AlarmTopic")
	}
	if p.MaxConsumerConcurrency < 2 {
		problems = append(problems, "MaxConsumerConcurrency (>= 2)")
	}
	for _, pr := range problems {
		awscdk.Annotations_Of(scope).AddError(jsii.String(fmt.Sprintf("consumers %s: %s: Platform.%s is required", *scope.Node().Path(), what, pr)))
	}
}

func (e Egress) check(scope constructs.Construct, what string) {
	if e.Vpc == nil || e.Subnets == nil || e.SecretsEndpoint == nil || e.Breakers == nil {
		awscdk.Annotations_Of(scope).AddError(jsii.String(fmt.Sprintf(
			"consumers %s: %s calls services on the internet behind circuit breakers: Egress.Vpc, Egress.Subnets (the egress subnets), Egress.SecretsEndpoint and Egress.Breakers (the Valkey cache) are required", *scope.Node().Path(), what)))
	}
}

func (p Platform) queueProps(n Names, entry, description string) queueconsumer.Props {
	return queueconsumer.Props{
		Entry:               entry,
		Builder:             p.Builder,
		FunctionName:        n.Function,
		Description:         jsii.String(description),
		EnvironmentName:     p.EnvironmentName,
		QueueName:           n.Queue,
		DeadLetterQueueName: n.DeadLetterQueue,
		EncryptionKey:       p.EncryptionKey,
		AlarmTopic:          p.AlarmTopic,
		LogRetention:        p.LogRetention,
		RemovalPolicy:       p.RemovalPolicy,
		OperatorRoleArn:     p.OperatorRoleArn,
	}
}

// HTTPConsumer is a consumer of an HTTP dependency behind a breaker.
type HTTPConsumer struct {
	*queueconsumer.Consumer
	// Secret holds the dependency's API key.
	Secret awssecretsmanager.Secret
	// CircuitOpenedAlarm fires when the dependency's circuit opens.
	CircuitOpenedAlarm awscloudwatch.Alarm
}

// Numbers of the HTTP consumers (docs/design.md#consumer-ceilings).
const (
	// httpPerInvocation is how many records one invocation of an HTTP
	// consumer sends at once (fewer when the dependency takes fewer).
	httpPerInvocation = 5
	// httpAttempts per call, and the read timeout of each (SPEC: 30 s).
	// With maxReceiveCount 4 (5) that is 8 (10) calls at most per
	// message, within the 15 of docs/design.md#retry-layers.
	httpAttempts           = 2
	httpReadTimeoutSeconds = 30
)

// PreparacionProps configures NewPreparacion.
type PreparacionProps struct {
	Platform
	Egress
	Names
	// IdempotencyTable records preparacion:<pedido_id>. Required.
	IdempotencyTable *idempotencytable.Table
	// AlmacenURL is the warehouse API's https base URL.
	AlmacenURL string
	// AlmacenMaxInFlight is how many requests at once the warehouse takes
	// (>= 2).
	AlmacenMaxInFlight float64
	// SecretName of the warehouse API key. Nil lets CloudFormation name it.
	SecretName *string
}

// Order preparation's numbers.
const (
	// PreparacionTimeoutSeconds bounds one invocation: one 30 s warehouse
	// attempt, its retry wait and most of a second attempt (the handler's
	// context ends at the deadline and the Idempotency-Key makes a cut
	// attempt safe to repeat).
	PreparacionTimeoutSeconds = 60
	// PreparacionVisibilitySeconds is the lesson's fix (400 s against the
	// 30 s read timeout, where 120 s against 180 s charged twice), above
	// 6 × 60 s.
	PreparacionVisibilitySeconds = 400
)

// httpSpec is what distinguishes the consumers of one HTTP dependency.
type httpSpec struct {
	what, entry, description string
	timeoutSeconds           float64
	visibility               awscdk.Duration // nil: derived from the timeout
	maxReceiveCount          float64
	table                    *idempotencytable.Table
	key                      string // the idempotency key, for the error
	dependency               queueconsumer.HTTPDependency
	maxInFlight              float64
	openEffect               string
	window                   time.Duration // the consumer's replay window
}

// fanOutWindow is what every consumer of the fan-out topic gets: its
// replay window (IDEMPOTENCY_WINDOW, checked at synth against the queue's
// longest pass) and SNS's delivery retries as the age a message can have
// on arrival (docs/design.md#replay-windows).
func fanOutWindow(qp *queueconsumer.Props, window time.Duration) {
	qp.IdempotencyWindow = awscdk.Duration_Hours(jsii.Number(window.Hours()))
	qp.UpstreamMaxAge = awscdk.Duration_Hours(jsii.Number(fanout.MaxDeliveryAge.Hours()))
}

// newHTTPConsumer builds a consumer of one HTTP dependency behind its
// breaker, in the egress subnets, recording its key in the idempotency
// table and deferring messages while the circuit is open.
func newHTTPConsumer(scope constructs.Construct, id string, p Platform, e Egress, n Names, spec httpSpec) *HTTPConsumer {
	c := constructs.NewConstruct(scope, jsii.String(id))
	p.check(c, spec.what)
	e.check(c, spec.what)
	qp := p.queueProps(n, spec.entry, spec.description)
	qp.Timeout = awscdk.Duration_Seconds(jsii.Number(spec.timeoutSeconds))
	qp.VisibilityTimeout = spec.visibility
	qp.MaxReceiveCount = spec.maxReceiveCount
	qp.MaximumConcurrency, qp.BatchConcurrency = queueconsumer.Ceiling(spec.maxInFlight, httpPerInvocation, p.MaxConsumerConcurrency)
	qp.DefersMessages = true
	fanOutWindow(&qp, spec.window)
	qp.Vpc, qp.VpcSubnets, qp.SecretsEndpoint = e.Vpc, e.Subnets, e.SecretsEndpoint
	h := &HTTPConsumer{Consumer: queueconsumer.New(c, "Consumidor", &qp)}
	if spec.table == nil {
		awscdk.Annotations_Of(c).AddError(jsii.String(fmt.Sprintf("consumers %s: IdempotencyTable is required (%s)", *c.Node().Path(), spec.key)))
	} else {
		spec.table.BindTo(h.Function.Function)
	}
	spec.dependency.MaxAttempts = httpAttempts
	if spec.dependency.ReadTimeout == nil {
		spec.dependency.ReadTimeout = awscdk.Duration_Seconds(jsii.Number(httpReadTimeoutSeconds))
	}
	h.Secret = h.AddHTTPDependency("Dependencia", spec.dependency)
	h.CircuitOpenedAlarm = h.AddBreaker(e.Breakers, spec.dependency.Name, spec.openEffect)
	return h
}

// NewPreparacion creates the order-preparation consumer of
// cola-mercadofresco-pedidos.
func NewPreparacion(scope constructs.Construct, id string, props *PreparacionProps) *HTTPConsumer {
	if props == nil {
		props = &PreparacionProps{}
	}
	return newHTTPConsumer(scope, id, props.Platform, props.Egress, props.Names, httpSpec{
		what: "Preparacion", entry: "lambdas/preparar-pedido",
		description:    "Sends confirmed orders to the warehouse once (preparacion:<pedido_id>)",
		timeoutSeconds: PreparacionTimeoutSeconds,
		visibility:     awscdk.Duration_Seconds(jsii.Number(PreparacionVisibilitySeconds)),
		// maxReceiveCount 4 (the lesson's): the ceiling equals the reserved
		// concurrency, so Lambda does not throttle a batch and a receive is
		// only spent on a real failure.
		maxReceiveCount: 4,
		table:           props.IdempotencyTable, key: "preparacion:<pedido_id>",
		dependency: queueconsumer.HTTPDependency{
			Name: consumerapi.NameAlmacen, Prefix: consumerapi.PrefixAlmacen, URL: props.AlmacenURL, SecretName: props.SecretName, Issuer: "the warehouse",
		},
		maxInFlight: props.AlmacenMaxInFlight,
		window:      consumerapi.WindowPreparacion,
		openEffect:  "confirmed orders wait in their queue (ChangeMessageVisibility 300 s, a delayed copy on the last receive) and are prepared when the warehouse is back; nothing is dead-lettered for the outage.",
	})
}

// AvisoERPProps configures NewAvisoERP.
type AvisoERPProps struct {
	Platform
	Egress
	Names
	// IdempotencyTable records aviso-erp:<pedido_id>. Required.
	IdempotencyTable *idempotencytable.Table
	// ERPURL is the ERP API's https base URL; ERPMaxInFlight how many
	// notices at once it takes (>= 2).
	ERPURL         string
	ERPMaxInFlight float64
	// SecretName of the ERP API key. Nil lets CloudFormation name it.
	SecretName *string
}

// AvisoERPTimeoutSeconds bounds one invocation of the ERP notice consumer:
// two 30 s attempts, the wait between them (at most the 20 s Retry-After
// honoured, plus jitter) and the idempotency record.
const AvisoERPTimeoutSeconds = 90

// NewAvisoERP creates the ERP notice consumer.
func NewAvisoERP(scope constructs.Construct, id string, props *AvisoERPProps) *HTTPConsumer {
	if props == nil {
		props = &AvisoERPProps{}
	}
	return newHTTPConsumer(scope, id, props.Platform, props.Egress, props.Names, httpSpec{
		what: "AvisoERP", entry: "lambdas/aviso-erp",
		description:    "Notifies the ERP of confirmed orders once (aviso-erp:<pedido_id>); waits while the ERP's circuit is open",
		timeoutSeconds: AvisoERPTimeoutSeconds,
		// 5 receives (AWS advice where throttling can occur; the ERP
		// rate-limits, docs/design.md#queue-receives). The notice may wait:
		// the age alarm keeps the 3 h default.
		maxReceiveCount: 5,
		table:           props.IdempotencyTable, key: "aviso-erp:<pedido_id>",
		dependency: queueconsumer.HTTPDependency{
			Name: consumerapi.NameERP, Prefix: consumerapi.PrefixERP, URL: props.ERPURL, SecretName: props.SecretName, Issuer: "the ERP",
		},
		maxInFlight: props.ERPMaxInFlight,
		window:      consumerapi.WindowAvisoERP,
		openEffect:  "ERP notices wait in their queue (ChangeMessageVisibility 300 s, a delayed copy on the last receive, up to a day) and are sent when the ERP is back.",
	})
}

// MovimientosStockProps configures NewMovimientosStock.
type MovimientosStockProps struct {
	Platform
	Names
	// StockTable is mercadofresco-stock. Required.
	StockTable *stocktable.Table
}

// MovimientosStockTimeoutSeconds bounds one invocation: ten movements, each
// a read and three writes to DynamoDB (milliseconds each) with the SDK's 2
// attempts, one group after the other in the worst case.
const MovimientosStockTimeoutSeconds = 30

// NewMovimientosStock creates the stock-movements consumer of the FIFO
// queue (MessageGroupId = sku).
func NewMovimientosStock(scope constructs.Construct, id string, props *MovimientosStockProps) *queueconsumer.Consumer {
	if props == nil {
		props = &MovimientosStockProps{}
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	props.Platform.check(c, "MovimientosStock")
	qp := props.queueProps(props.Names, "lambdas/movimientos-stock", "Applies stock movements to mercadofresco-stock once each, in any order")
	qp.Timeout = awscdk.Duration_Seconds(jsii.Number(MovimientosStockTimeoutSeconds))
	// FIFO with MessageGroupId = sku: order kept per SKU, ~3,400 groups of
	// parallelism, never one global group; high-throughput FIFO scales per
	// group. maxReceiveCount 4: a failing message blocks its SKU's group
	// until it is dead-lettered, so the safety net is short.
	qp.Fifo, qp.HighThroughputFifo, qp.MaxReceiveCount = true, true, 4
	// DynamoDB on demand is not the limit: the environment's ceiling, and
	// every group of a batch at once.
	qp.MaximumConcurrency = props.MaxConsumerConcurrency
	qp.BatchConcurrency = 10
	q := queueconsumer.New(c, "Consumidor", &qp)
	if props.StockTable == nil {
		awscdk.Annotations_Of(c).AddError(jsii.String(fmt.Sprintf("consumers %s: StockTable is required", *c.Node().Path())))
	} else {
		props.StockTable.BindTo(q.Function.Function)
	}
	return q
}
