package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/fanout"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/constructs/reliablequeue"
)

// SPEC names of the messaging resources (environments add their suffix).
const (
	PedidoConfirmadoTopicName = "mercadofresco-pedido-confirmado"
	PedidosQueueName          = "cola-mercadofresco-pedidos"
	PedidosDLQName            = "mercadofresco-pedidos-fallidos"
	CorreoQueueName           = "cola-mercadofresco-correo-confirmacion"
	CorreoDLQName             = "mercadofresco-correo-confirmacion-fallidos"
	AvisoERPQueueName         = "cola-mercadofresco-aviso-erp"
	AvisoERPDLQName           = "mercadofresco-aviso-erp-fallidos"
	StockMovementsQueueName   = "mercadofresco-movimientos-stock.fifo"
	StockMovementsDLQName     = "mercadofresco-movimientos-stock-fallidos.fifo"
	// StockMovementsGroupKey is the MessageGroupId producers must use on the
	// stock-movements FIFO queue: the SKU (see NewMessagingStack).
	StockMovementsGroupKey = "sku"
)

// MessagingStack holds the queues, the fan-out topic and the consumers.
type MessagingStack struct {
	awscdk.Stack
	// PedidoConfirmado is the fan-out topic mercadofresco-pedido-confirmado.
	// The order workflow publishes confirmed orders to it (GrantPublish).
	PedidoConfirmado *fanout.Topic
	// Pedidos is cola-mercadofresco-pedidos (order preparation) with its DLQ
	// mercadofresco-pedidos-fallidos.
	Pedidos *reliablequeue.Queue
	// Correo is the confirmation e-mail queue.
	Correo *reliablequeue.Queue
	// AvisoERP is the ERP notice queue.
	AvisoERP *reliablequeue.Queue
	// StockMovements is the FIFO queue of stock movements, grouped by SKU.
	// Producers (the order workflow's stock reservation) get GrantSendMessages.
	StockMovements *reliablequeue.Queue
	// PrepararPedido is the consumer of Pedidos (lambdas/preparar-pedido).
	PrepararPedido *golambda.Function
}

// Timeouts of the consumers. They are the real worst case of one invocation,
// because the queues' visibility timeouts are derived from them.
const (
	// prepararPedidoTimeoutSeconds bounds one invocation of the order
	// preparation consumer; the batch library stops taking records 2 s
	// before the deadline.
	prepararPedidoTimeoutSeconds = 60
	// pedidosVisibilitySeconds is the lesson's fixed value (400 s; the
	// double charge came from 120 s against a 180 s read timeout). It is
	// above 6 x 60 s = 360 s, which synth checks.
	pedidosVisibilitySeconds = 400
)

// NewMessagingStack creates the messaging stack of shared.Env: the fan-out
// topic, the three fan-out queues, the stock-movements FIFO queue, and the
// order-preparation consumer. Every queue comes from reliablequeue (DLQ,
// alarms, encryption, TLS) and the guardrails check the whole stack at synth.
func NewMessagingStack(scope constructs.Construct, shared *Shared, data *DataStack) *MessagingStack {
	stack := newStack(scope, shared.Env, "Messaging", "queues, fan-out and consumers")
	s := &MessagingStack{Stack: stack}
	env := shared.Env
	// Queues hold messages in flight: keep them where the environment keeps
	// state (the constructs map the policy per resource kind).
	removal := env.RemovalPolicy

	// Every queue here carries order data (order id with customer, address,
	// lines or amounts), so all use the data key (reliablequeue's default,
	// EncryptionDataKey); none qualifies for SQS-managed SSE.
	newQueue := func(id, name, dlq string, p reliablequeue.Props) *reliablequeue.Queue {
		p.QueueName = jsii.String(env.PhysicalName(name))
		p.DeadLetterQueueName = jsii.String(env.PhysicalName(dlq))
		p.EncryptionKey = shared.DataKey
		p.AlarmTopic = shared.Alerts
		p.RemovalPolicy = removal
		return reliablequeue.New(stack, id, &p)
	}

	// Order preparation. maxReceiveCount stays at the lesson's 4: the
	// consumer's concurrency is capped by MaximumConcurrency (below), so
	// Lambda does not throttle its invocations and a receive is only spent
	// on a real failure; 4 receives x 2 SDK attempts = 8 calls to the
	// warehouse in the worst case, under the 15-attempt budget.
	s.Pedidos = newQueue("Pedidos", PedidosQueueName, PedidosDLQName, reliablequeue.Props{
		MaxReceiveCount:   4,
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(pedidosVisibilitySeconds)),
	})

	// Confirmation e-mail. maxReceiveCount 5 (AWS advice where throttling
	// can occur): the e-mail provider rate-limits sending (429 / SES
	// throttling), and a throttled batch burns a receive without the message
	// being wrong. 5 x 2 SDK attempts = 10 calls, under the budget. Age alarm
	// at 30 min: a confirmation e-mail later than that is a customer-visible
	// failure even though nothing is lost.
	s.Correo = newQueue("Correo", CorreoQueueName, CorreoDLQName, reliablequeue.Props{
		MaxReceiveCount:           5,
		OldestMessageAgeThreshold: awscdk.Duration_Minutes(jsii.Number(30)),
	})

	// ERP notice. maxReceiveCount 5 (AWS advice where throttling can occur,
	// docs/design.md#queue-receives): the ERP rate-limits its callers. The
	// age alarm keeps the 3 h default: the ERP notice may wait, the order is
	// already paid.
	s.AvisoERP = newQueue("AvisoERP", AvisoERPQueueName, AvisoERPDLQName, reliablequeue.Props{
		MaxReceiveCount: 5,
	})

	// Stock movements: FIFO with MessageGroupId = sku (StockMovementsGroupKey).
	// Order matters between movements of the same SKU (reserve, release,
	// adjust are relative operations: applied out of order, a release could
	// run before its reservation) but not between SKUs, so the SKU is as
	// granular as ordering allows: ~3,400 groups give ~3,400-way parallelism,
	// never one global group (which would process strictly one message at a
	// time). High-throughput FIFO makes throughput scale per group.
	// Deduplication is explicit: producers send MessageDeduplicationId =
	// the movement's idempotency key (e.g. reserva:<pedido_id>:<sku>), not a
	// body hash, so a retried send is dropped within the 5-minute window.
	// maxReceiveCount 4: a failing message blocks its SKU's group until it
	// is dead-lettered, so the safety net must be short.
	s.StockMovements = newQueue("StockMovements", StockMovementsQueueName, StockMovementsDLQName, reliablequeue.Props{
		Fifo:               true,
		HighThroughputFifo: true,
		MaxReceiveCount:    4,
	})

	// The fan-out: confirmed orders to the three queues, SQS only, raw
	// delivery, a DLQ per subscription. No filter policies: every consumer
	// needs every confirmed order, and filtering on "version" would drop
	// unknown versions silently instead of letting the consumer dead-letter
	// them with a reason (lesson, exercise 2: poison must be visible).
	s.PedidoConfirmado = fanout.New(stack, "PedidoConfirmado", &fanout.Props{
		TopicName:     jsii.String(env.PhysicalName(PedidoConfirmadoTopicName)),
		DisplayName:   jsii.String("MercadoFresco pedido confirmado"),
		EncryptionKey: shared.DataKey,
		AlarmTopic:    shared.Alerts,
		RemovalPolicy: removal,
	})
	s.PedidoConfirmado.AddQueue("Pedidos", s.Pedidos, fanout.SubscriptionOptions{})
	s.PedidoConfirmado.AddQueue("Correo", s.Correo, fanout.SubscriptionOptions{})
	s.PedidoConfirmado.AddQueue("AvisoERP", s.AvisoERP, fanout.SubscriptionOptions{})

	// Consumer of cola-mercadofresco-pedidos.
	s.PrepararPedido = golambda.NewFunction(stack, "PrepararPedido", &golambda.Props{
		Entry:            "lambdas/preparar-pedido",
		Builder:          shared.Builder,
		FunctionName:     jsii.String(env.PhysicalName("mf-preparar-pedido")),
		Description:      jsii.String("Prepares confirmed orders from " + env.PhysicalName(PedidosQueueName)),
		Timeout:          awscdk.Duration_Seconds(jsii.Number(prepararPedidoTimeoutSeconds)),
		MemorySize:       256,
		EncryptionKey:    shared.DataKey,
		LogRetention:     env.LogRetention,
		LogRemovalPolicy: removal,
		AlarmTopic:       shared.Alerts,
		Environment: map[string]*string{
			// One goroutine per record of a full batch (BatchSize 10): a
			// second round inside one invocation would risk the deadline.
			"BATCH_CONCURRENCY": jsii.String("10"),
		},
	})
	// Exactly-once in effect: the consumer records preparacion:<pedido_id>
	// in mercadofresco-idempotencia (GetItem/PutItem/UpdateItem/DeleteItem
	// on that table only) and refuses to start without it.
	data.Table.BindTo(s.PrepararPedido.Function)
	// MaximumConcurrency is the environment's consumer ceiling: the
	// backpressure valve (the queue grows, the pressure on the warehouse and
	// on Aurora's ~200 connections does not). Batch of 10, no batching
	// window: preparation is latency sensitive. The DLQ URL reaches the
	// function as DLQ_URL (the batch library dead-letters poison itself).
	s.Pedidos.AddConsumer(s.PrepararPedido.Function, reliablequeue.ConsumerOptions{
		MaximumConcurrency: env.MaxConsumerConcurrency,
		BatchSize:          10,
	})

	return s
}
