// Package e2e runs the whole order flow on one machine, as synthesized,
// under chaos, and reports whether every order was charged, prepared,
// confirmed by e-mail and notified to the ERP exactly once (TestOrderFlow:
// 100 orders in `make test`, 1,000 with `make e2e`, report in
// docs/e2e-report.md).
//
// # What is real
//
//   - The project's code: the shop's order writer (lambdas/shop, one
//     transaction with the outbox row), the outbox publisher
//     (publisherfn.FromEnv, in child processes that are SIGKILLed), the
//     workflow starter, the cobro and reembolso tasks, and the four
//     consumers (preparation, e-mail, ERP notice, stock), each built the
//     way its main builds it (sqsconsumer.Start, payment.TasksFromEnv,
//     starter.ProcessorFromEnv) from its environment variables in the
//     template, with real AWS SDK clients pointed at local endpoints
//     (AWS_ENDPOINT_URL_<SERVICE>).
//   - PostgreSQL (a private database per run; the schema applied by the
//     migration custom resource's own code, and the publisher and the shop
//     connecting as their own roles), dynalite with the templates' tables,
//     a private Redis for the breakers (stopped and restarted).
//   - The configuration: resources, routing and orchestration are read from
//     the committed snapshots of the prod templates (which the CDK tests
//     prove equal to `cdk synth`): the queues with their visibility timeouts
//     and redrive policies; the event source mappings (batch size, maximum
//     concurrency, partial batch responses); the bus rules' event patterns
//     (internal/eventpattern, which fails on an operator it does not
//     evaluate), targets, input transformers, retry policies and DLQs; the
//     API destination with its connection's key and rate; the SNS
//     subscriptions (raw delivery, DLQs); the carts pipe's filter and input
//     template; the state machine definition, validated as written and run
//     in aws-local-stepfunctions.
//
// # What is played
//
// AWS's side is played by the harness: SQS by the project's fake
// (internal/sqsfake, served over the SQS protocol for the functions'
// SDK clients), EventBridge PutEvents, Step Functions StartExecution and
// Secrets Manager by internal/awsfake, EventBridge's rules, SNS's fan-out,
// the pipe and Lambda's SQS pollers by this package. Every event and every
// SNS message is delivered twice. The Step Functions engine runs in one Node
// process (sfnexec.mjs); its Task states are dispatched with the engine's
// task overrides (taskResourceLocalHandlers), over HTTP to this process:
// Lambda ARNs to the Go handlers in-process, sqs:sendMessage and sns:publish
// to the local queues and topics. The external services are fakes with a
// ledger (fakes.go): the payment gateway (internal/fakehttp/fakegateway),
// the warehouse, the ERP and its webhook, the secondary e-mail provider
// and SES v2.
//
// # Time
//
// Production's numbers are minutes (visibility timeouts of 120 to 540 s,
// retry waits, backoff), too slow for a test, and the Go code keeps the real
// clock. The run uses two scales:
//
//   - WaitScale (25) speeds up the harness's clock (Clock): SQS visibility
//     and delays, the state machine's Retry intervals and caps, EventBridge's
//     retry backoff, the customers' pauses, the API destination's rate.
//   - ExecScale (5) divides how long code may run: each invocation's
//     deadline is the function's Timeout ÷ 5 (lambdacontext, and the
//     idempotency lock that ends with it), Task TimeoutSeconds, the read
//     timeouts, the breaker's open period (at least its 5 s minimum) and the
//     consumers' deadline margin.
//
// Production's invariant that a message's visibility outlasts the
// invocation that received it holds after scaling (loadESMs checks it for
// every mapping), so a consumer killed with a claim in progress has its
// lock expire before the message comes back, as in production. The outbox
// publisher's invocations run at full length: its timing (lease, stop
// margin) is in its code, not its configuration.
//
// # Departures from the templates
//
// Besides the scaled durations, the run changes only what cannot be the
// same on one machine, and lists it in the report: the external services'
// URLs (to the fakes), TLS to Redis and PostgreSQL (off: local servers), the
// database name and the role names (per run, because roles are
// cluster-wide and two runs may share the server).
//
// Not played: the alarms, the DB secret's rotation, the daily outbox
// cleanup, the SES event destination (no SES events locally) and the
// carts table's stream itself (records are synthesized and fed to the
// pipe).
package e2e
