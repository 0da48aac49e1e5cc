// Package httpdepapi names what lambdas/httpdep reads and emits: the
// environment variables of one HTTP dependency and the metrics of its calls.
// It depends on the standard library only, so the CDK constructs set the
// variables and build the alarms without linking the Lambda code.
package httpdepapi

import "time"

// DefaultReadTimeout bounds each attempt of an HTTP dependency (payment
// gateway included): far below every caller's visibility or task timeout
// (docs/design.md#payment).
const DefaultReadTimeout = 30 * time.Second

// Environment variable suffixes of one dependency. A function talking to
// the warehouse with prefix "ALMACEN" reads ALMACEN_URL, ALMACEN_SECRET_ARN,
// ALMACEN_READ_TIMEOUT and, through lambdas/retry (retryapi.EnvSuffix*), ALMACEN_MAX_ATTEMPTS,
// ALMACEN_BACKOFF_BASE and ALMACEN_BACKOFF_CAP.
const (
	// EnvSuffixURL is the dependency's base URL (https, required).
	EnvSuffixURL = "_URL"
	// EnvSuffixSecretARN is the Secrets Manager secret holding its API key
	// (required).
	EnvSuffixSecretARN = "_SECRET_ARN"
	// EnvSuffixReadTimeout bounds each attempt (Go duration, default
	// DefaultReadTimeout).
	EnvSuffixReadTimeout = "_READ_TIMEOUT"
)

// Metrics of every attempt, in namespace MercadoFresco/Tienda with the
// dimensions Entorno and Dependencia (the breaker's dimension).
const (
	// MetricLatency is the duration of one attempt (Milliseconds).
	MetricLatency = "DependenciaLatencia"
	// MetricErrors counts attempts that got no answer, a 5xx or a 429.
	MetricErrors = "DependenciaErrores"
)
