// Package retry is the project's one retry policy for outbound calls: waits
// uniform(0, min(Cap, Base·2^(n-1))) at every attempt ([FullJitter]; a 429's
// Retry-After plus jitter), a maximum of attempts, failure classes
// ([Classify]: 5xx, 429 and dial failures retried; timeouts, resets and
// unknown errors only for an [Idempotent] call; other 4xx and what
// lambdas/failure marks permanent or poison never), the dependency's retry
// [Budget] (lambdas/breaker keeps it for the fleet), and no wait that would
// end past ctx's deadline. Time and
// randomness are injectable ([WithClock], [WithRand]; [VirtualClock]).
//
// Written here because cenkalti/backoff, go-retryablehttp and the AWS SDK's
// retryer each miss at least one bar: full jitter at every attempt, an
// injectable clock, the idempotency distinction, a ratio budget. AWS SDK
// clients keep the SDK's retryer (lambdas/lambdaenv). Reasoning:
// docs/design.md#retry-policy and docs/retry-storm.md.
package retry
