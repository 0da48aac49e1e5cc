// Package retryapi holds the defaults of the project's retry policy
// (lambdas/retry) that the CDK side sizes timeouts with
// (constructs/payment): attempts, waits and their bounds. It depends on the
// standard library only.
package retryapi

import "time"

// Policy defaults.
const (
	DefaultMaxAttempts   = 3
	DefaultBase          = 100 * time.Millisecond
	DefaultCap           = 5 * time.Second
	DefaultThrottleBase  = time.Second
	DefaultMaxRetryAfter = 20 * time.Second
	// MaxAttemptsLimit is the largest MaxAttempts accepted (the attempts
	// guardrail allows at most 15 gateway calls per order along a path).
	MaxAttemptsLimit = 10
)

// Environment variable suffixes of a policy (retry.PolicyFromEnv reads
// them, the CDK side writes them): for prefix "GATEWAY", GATEWAY_MAX_ATTEMPTS,
// GATEWAY_BACKOFF_BASE and GATEWAY_BACKOFF_CAP.
const (
	EnvSuffixMaxAttempts = "_MAX_ATTEMPTS"
	EnvSuffixBackoffBase = "_BACKOFF_BASE"
	EnvSuffixBackoffCap  = "_BACKOFF_CAP"
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
