// Package breakerapi names what the circuit breaker (lambdas/breaker)
// emits and reads, for the CDK constructs that build its alarms and set its
// environment. It depends on the standard library only, so constructs can
// import it without linking go-redis or any Lambda dependency.
package breakerapi

// Metrics, in namespace MercadoFresco/Tienda (metricsapi.Namespace),
// with the dimensions DimensionEnvironment ("Entorno", from
// lambdas/metrics) and DimensionDependency. All are Count metrics emitted
// in CloudWatch Embedded Metric Format.
const (
	// MetricOpened is 1 for every transition of a circuit to open (after
	// FailureThreshold consecutive failures, or a failed probe). It is
	// emitted once per transition across all Lambda instances: by the
	// instance whose recorded failure opened it. Alarm: Sum > 0 over 1
	// minute, to alertas-mercadofresco.
	MetricOpened = "CircuitoAbierto"
	// MetricClosed is 1 when a successful probe closes the circuit.
	MetricClosed = "CircuitoCerrado"
	// MetricStoreErrors counts calls to Valkey that failed (the breaker then
	// fails open: it behaves as closed). A sustained value means the
	// breaker is off.
	MetricStoreErrors = "CircuitoErroresAlmacen"

	// DimensionDependency names the protected dependency ("pasarela", ...).
	DimensionDependency = "Dependencia"
)

// Environment variables read by the Lambda mains that use a breaker.
const (
	// EnvRedisAddr is the Valkey endpoint host:port of mercadofresco-catalogo
	// (required).
	EnvRedisAddr = "BREAKER_REDIS_ADDR"
	// EnvRedisTLS is "true" (default) to connect with TLS, as ElastiCache
	// Serverless requires.
	EnvRedisTLS = "BREAKER_REDIS_TLS"
	// EnvFailureThreshold overrides the consecutive failures that open the
	// circuit (default 20).
	EnvFailureThreshold = "BREAKER_FAILURE_THRESHOLD"
	// EnvOpenPeriod overrides how long the circuit stays open before a probe
	// (Go duration, default 30s).
	EnvOpenPeriod = "BREAKER_OPEN_PERIOD"
)
