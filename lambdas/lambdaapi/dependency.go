package lambdaapi

import "time"

// An HTTP dependency's environment (lambdas/httpdep): a function talking to
// the warehouse with prefix "ALMACEN" reads ALMACEN_URL (https, required),
// ALMACEN_SECRET_ARN (the Secrets Manager secret of its API key, required),
// ALMACEN_READ_TIMEOUT (each attempt's bound, a Go duration) and the retry
// policy's ALMACEN_MAX_ATTEMPTS, ALMACEN_BACKOFF_BASE and
// ALMACEN_BACKOFF_CAP (lambdas/retry).
const (
	EnvSuffixURL         = "_URL"
	EnvSuffixSecretARN   = "_SECRET_ARN"
	EnvSuffixReadTimeout = "_READ_TIMEOUT"
	EnvSuffixMaxAttempts = "_MAX_ATTEMPTS"
	EnvSuffixBackoffBase = "_BACKOFF_BASE"
	EnvSuffixBackoffCap  = "_BACKOFF_CAP"
)

// DefaultReadTimeout bounds each attempt of an HTTP dependency (payment
// gateway included): far below every caller's visibility or task timeout
// (docs/design.md#payment).
const DefaultReadTimeout = 30 * time.Second

// Metrics of every attempt on an HTTP dependency, with the dimensions
// Entorno and Dependencia (the breaker's dimension).
const (
	// MetricDependencyLatency is the duration of one attempt (Milliseconds).
	MetricDependencyLatency = "DependenciaLatencia"
	// MetricDependencyErrors counts attempts that got no answer, a 5xx or a
	// 429.
	MetricDependencyErrors = "DependenciaErrores"
)

// The retry policy's defaults (lambdas/retry), which the constructs size
// timeouts with.
const (
	DefaultMaxAttempts   = 3
	DefaultBackoffBase   = 100 * time.Millisecond
	DefaultBackoffCap    = 5 * time.Second
	DefaultThrottleBase  = time.Second
	DefaultMaxRetryAfter = 20 * time.Second
	// MaxAttemptsLimit is the largest MaxAttempts accepted (the attempts
	// guardrail allows at most 15 gateway calls per order along a path).
	MaxAttemptsLimit = 10
)

// The AWS SDK's own retries, the first layer of docs/design.md#retry-layers:
// every function gets EnvSDKMaxAttempts = SDKMaxAttempts.
const (
	// EnvSDKMaxAttempts is the variable the AWS SDK for Go v2 reads for its
	// attempts per call (lambdas/lambdaenv.LoadAWSConfig honours it too).
	EnvSDKMaxAttempts = "AWS_MAX_ATTEMPTS"
	// SDKMaxAttempts is every function's AWS SDK attempts per call.
	SDKMaxAttempts = 2
)
