package lambdaapi

import "time"

const (
	// Namespace is the CloudWatch namespace of every custom metric of the
	// project (MercadoFresco/Tienda).
	Namespace = "MercadoFresco/Tienda"
	// DimensionEnvironment is the dimension every metric of the project
	// carries: dev, staging or prod (the functions read it from ENTORNO).
	DimensionEnvironment = "Entorno"
	// EnvEnvironment is the variable every function reads its environment
	// name from (the DimensionEnvironment value).
	EnvEnvironment = "ENTORNO"
)

// The service-level objectives' measurements (docs/design.md#slo). Every
// one carries the Entorno dimension only: an objective is the
// environment's, whatever queue or function served it.
const (
	// SLOObjective is the share of good events both objectives promise.
	SLOObjective = 0.999
	// SLOConfirmation is N of the first objective: an order committed in
	// Aurora (creado_en) is confirmed (confirmado_en) within it.
	SLOConfirmation = 15 * time.Minute
	// SLOQueueWait is M of the second objective: no message waits in a
	// consumer queue longer than it before its first receive (the queues'
	// age alarm: a Friday burst is designed to wait up to 2 h).
	SLOQueueWait = 180 * time.Minute

	// MetricOrdersConfirmed counts confirmed orders, once each (their
	// first delivery to the order-preparation consumer).
	MetricOrdersConfirmed = "PedidosConfirmados"
	// MetricOrdersConfirmedLate counts those confirmed later than
	// SLOConfirmation after their commit.
	MetricOrdersConfirmedLate = "PedidosConfirmadosTarde"
	// MetricConfirmationSeconds is each one's commit-to-confirmation time.
	MetricConfirmationSeconds = "PedidoConfirmacionSegundos"
	// MetricMessagesReceived counts consumer-queue messages on their first
	// receive.
	MetricMessagesReceived = "MensajesRecibidos"
	// MetricMessagesLate counts those that waited longer than SLOQueueWait.
	MetricMessagesLate = "MensajesEsperaExcedida"
	// MetricQueueWaitSeconds is a batch's longest wait before the first
	// receive.
	MetricQueueWaitSeconds = "EsperaColaSegundos"
)
