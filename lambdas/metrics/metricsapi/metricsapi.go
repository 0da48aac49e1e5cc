// Package metricsapi names what every custom metric of the project shares,
// so that the functions that emit them (lambdas/metrics) and the alarms
// that watch them (constructs/...) cannot disagree. It depends on the
// standard library only.
package metricsapi

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
