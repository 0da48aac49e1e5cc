package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/constructs/events"
	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/constructs/slo"
)

// PedidoConfirmadoTopicName is the fan-out topic's SPEC name (environments
// add their suffix); the queues' are in config/catalog.
const PedidoConfirmadoTopicName = "mercadofresco-pedido-confirmado"

// MessagingStack holds the fan-out topic and the queue consumers.
type MessagingStack struct {
	awscdk.Stack
	// PedidoConfirmado is the fan-out topic mercadofresco-pedido-confirmado.
	// The order workflow publishes confirmed orders to it; its guard admits
	// the workflow's role by name (constructs/queues).
	PedidoConfirmado *events.Topic
	// The consumers, each with the queue it drains (with its DLQ). A
	// producer of stock movements gets MovimientosStock.Queue's
	// GrantSendMessages, and one in another stack (the workflow) is
	// admitted to the queue's guard by its role's name.
	Preparacion      *queues.HTTPConsumer
	Correo           *queues.Correo
	AvisoERP         *queues.HTTPConsumer
	MovimientosStock *queues.Consumer
	// QueueWaitSLO is SLO 2's burn-rate alarms (docs/design.md#slo).
	QueueWaitSLO *slo.Objective
}

// NewMessagingStack creates the messaging stack of shared.Env: the fan-out
// topic and the four consumers (constructs/queues), the three that call
// services on the internet in the network's egress subnets with their
// breakers in the Valkey cache.
func NewMessagingStack(scope constructs.Construct, shared *Shared, data *DataStack, network *NetworkStack) *MessagingStack {
	stack := newStack(scope, shared.Env, "Messaging", "fan-out and queue consumers")
	s := &MessagingStack{Stack: stack}
	env := shared.Env
	name := func(base string) *string { return jsii.String(env.PhysicalName(base)) }
	// The queue, its DLQ and its consumer as config/catalog names them.
	names := func(logical string) queues.Names {
		q, _, _ := catalog.Find(logical)
		return queues.Names{Queue: name(q.Name), DeadLetterQueue: name(q.DLQName), Function: name(q.Function)}
	}
	platform := queues.Platform{
		Context:                shared.Context,
		MaxConsumerConcurrency: env.MaxConsumerConcurrency,
		// mf-dlq redrive runs as the on-call's role and sends to these queues.
		OperatorRoleArn: env.RoleArn(env.Roles.Operator),
	}
	egress := queues.Egress{Vpc: network.Network.Vpc, Subnets: network.Network.EgressSubnets(), SecretsEndpoint: network.Network.SecretsEndpoint, Breakers: network.Cache}

	// Ceilings against each consumer's slowest dependency:
	// docs/design.md#consumer-ceilings.
	// A consumer of one HTTP dependency: its catalogue names, the
	// dependency's URL and in-flight limit, its API key's secret.
	http := func(logical, url string, maxInFlight float64, dependency string) *queues.HTTPConsumerProps {
		return &queues.HTTPConsumerProps{Platform: platform, Egress: egress, Names: names(logical), IdempotencyTable: data.Table,
			URL: url, MaxInFlight: maxInFlight, SecretName: name("mercadofresco/" + dependency + "/api-key")}
	}
	s.Preparacion = queues.NewPreparacion(stack, "Preparacion", http("Pedidos", env.Consumers.AlmacenURL, env.Consumers.AlmacenMaxInFlight, "almacen"))
	s.Correo = queues.NewCorreo(stack, "Correo", &queues.CorreoProps{
		HTTPConsumerProps:    *http("Correo", env.Consumers.CorreoSecundarioURL, env.Consumers.CorreoMaxInFlight, "correo-secundario"),
		Remitente:            env.Consumers.CorreoRemitente,
		ConfigurationSetName: name("mercadofresco-correo-confirmacion"),
		EventLogGroupName:    jsii.String("/aws/events/" + env.PhysicalName("mercadofresco-correo-ses")),
	})
	s.AvisoERP = queues.NewAvisoERP(stack, "AvisoERP", http("AvisoERP", env.Consumers.ERPURL, env.Consumers.ERPMaxInFlight, "erp"))
	s.MovimientosStock = queues.NewMovimientosStock(stack, "MovimientosStock", &queues.MovimientosStockProps{
		Platform:   platform,
		Names:      names("StockMovements"),
		StockTable: data.Stock,
		Vpc:        network.Network.Vpc,
		Subnets:    network.Network.EgressSubnets(),
	})

	// The fan-out: confirmed orders to the three queues, SQS only, raw
	// delivery, a DLQ per subscription, no filter (docs/design.md#fanout).
	s.PedidoConfirmado = events.NewTopic(stack, "PedidoConfirmado", &events.TopicProps{
		Context:     shared.Context,
		TopicName:   name(PedidoConfirmadoTopicName),
		DisplayName: jsii.String("MercadoFresco pedido confirmado"),
	})
	s.PedidoConfirmado.AddQueue("Pedidos", s.Preparacion.Queue, events.SubscriptionOptions{})
	s.PedidoConfirmado.AddQueue("Correo", s.Correo.Queue, events.SubscriptionOptions{})
	s.PedidoConfirmado.AddQueue("AvisoERP", s.AvisoERP.Queue, events.SubscriptionOptions{})
	s.QueueWaitSLO = newQueueWaitObjective(stack, shared)
	return s
}
