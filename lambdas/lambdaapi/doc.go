// Package lambdaapi is the contract between the Lambda functions and the
// CDK app that deploys them: the environment variables a function reads,
// the metrics it emits, the defaults the constructs size timeouts and
// alarms with, the payment tasks' input, output and error names, the
// outbox's schema migrations and database roles, and the breaker's cache
// access. The events have their own contract (lambdas/eventsapi).
//
// It depends on the standard library only, so the CDK app imports it
// without linking any Lambda dependency (stdlib_test.go and
// test/layout_test.go check it).
package lambdaapi
