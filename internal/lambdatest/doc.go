// Package lambdatest runs the project's Lambda functions on the local AWS
// (internal/localaws): a consumer on a queue and its DLQ as the event
// source mapping feeds it (Queues: Pump, Drain, DeadLetters), a deployed
// function built as its main builds it from the environment the committed
// template gives it (DeployedEnv, StartConsumer), with its breaker cache,
// database and third parties (BreakerCache, NewDatabase, NewDependency,
// the payment Gateway).
package lambdatest
