package stacks

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/constructs/orderflow"
	"github.com/mercadofresco/integration/constructs/slo"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// objectiveMetric is a measurement of the objectives (namespace
// MercadoFresco/Tienda, Entorno of shared).
func objectiveMetric(shared *Shared, name string) awscloudwatch.Metric {
	dims := map[string]*string{lambdaapi.DimensionEnvironment: jsii.String(shared.Environment())}
	return observability.Metric(lambdaapi.Namespace, name, dims, "Sum", "", nil)
}

// newConfirmationObjective is SLO 1: an order committed in Aurora is
// confirmed, or refused with a reason, within lambdaapi.SLOConfirmation
// for lambdaapi.SLOObjective of orders. Bad: confirmed late
// (PedidosConfirmadosTarde, measured by order preparation from the
// confirmation's creado_en and confirmado_en) and executions that ended
// without a reason (timed out, aborted). Total: every order that ended
// (confirmed, refused, timed out, aborted). docs/design.md#slo.
func newConfirmationObjective(scope constructs.Construct, shared *Shared, wf *orderflow.Workflow) *slo.Objective {
	sm := wf.StateMachine
	return slo.New(scope, "SLOConfirmacion", &slo.Props{
		Context:   shared.Context,
		Name:      fmt.Sprintf("SLO 1: order confirmed or refused within %.0f min", lambdaapi.SLOConfirmation.Minutes()),
		Objective: lambdaapi.SLOObjective,
		Description: "Orders are confirmed late or end without a reason (timed out, aborted): look at the outbox age, the starter buffer's age, " +
			"the workflow's ExecutionTime and the payment gateway's latency on the mercadofresco-operaciones dashboard.",
		Bad: []awscloudwatch.Metric{
			objectiveMetric(shared, lambdaapi.MetricOrdersConfirmedLate),
			sm.MetricTimedOut(nil), sm.MetricAborted(nil),
		},
		Total: []awscloudwatch.Metric{
			objectiveMetric(shared, lambdaapi.MetricOrdersConfirmed),
			sm.MetricFailed(nil), sm.MetricTimedOut(nil), sm.MetricAborted(nil),
		},
	})
}

// newQueueWaitObjective is SLO 2: no message waits in a consumer queue
// longer than lambdaapi.SLOQueueWait before its first receive
// (MensajesEsperaExcedida of MensajesRecibidos, measured by every queue
// consumer from SentTimestamp and ApproximateFirstReceiveTimestamp).
func newQueueWaitObjective(scope constructs.Construct, shared *Shared) *slo.Objective {
	return slo.New(scope, "SLOEsperaColas", &slo.Props{
		Context:   shared.Context,
		Name:      fmt.Sprintf("SLO 2: no message waits in a consumer queue over %.0f min", lambdaapi.SLOQueueWait.Minutes()),
		Objective: lambdaapi.SLOObjective,
		Description: "Messages wait in the consumer queues: a consumer is stopped, throttled or held by an open circuit. " +
			"Look at the queues' age of the oldest message, the breakers and the functions' throttles on the mercadofresco-operaciones dashboard.",
		Bad:   []awscloudwatch.Metric{objectiveMetric(shared, lambdaapi.MetricMessagesLate)},
		Total: []awscloudwatch.Metric{objectiveMetric(shared, lambdaapi.MetricMessagesReceived)},
	})
}
