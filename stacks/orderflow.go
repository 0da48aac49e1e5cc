package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/events"
	"github.com/mercadofresco/integration/constructs/orderflow"
	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/constructs/slo"
)

// OrderFlowStack holds the order flow: the payment tasks, the workflow
// mercadofresco-procesar-pedido and its starter, the carts pipe and the ERP
// API destination, all wired to bus-mercadofresco.
type OrderFlowStack struct {
	awscdk.Stack
	Payment  *orderflow.Payment
	Workflow *orderflow.Workflow
	Starter  *orderflow.Starter
	Carts    *events.Carts
	ERP      *events.ERPDestination
	// ConfirmationSLO is SLO 1's burn-rate alarms (docs/design.md#slo).
	ConfirmationSLO *slo.Objective
	// SigningKey is the charge-signing key: the outbox publisher (Outbox
	// stack, admitted by its role's name) signs, the starter and cobro
	// verify (docs/design.md#charge-signature).
	SigningKey *orderflow.SigningKey
}

// NewOrderFlowStack creates the order flow stack of shared.Env.
func NewOrderFlowStack(scope constructs.Construct, shared *Shared, network *NetworkStack, data *DataStack, messaging *MessagingStack) *OrderFlowStack {
	env := shared.Env
	stack := newStack(scope, env, "OrderFlow", "order workflow, payment tasks, carts pipe and ERP destination")
	s := &OrderFlowStack{Stack: stack}
	name := func(base string) *string { return jsii.String(env.PhysicalName(base)) }

	core.Check(stack, "stacks.OrderFlow").If(!network.Network.HasEgress(), "the payment tasks call the gateway on the internet, but the environment's VPC has no NAT gateway (config NatGateways)")
	s.Payment = orderflow.NewPayment(stack, "Pago", &orderflow.PaymentProps{
		Context:               shared.Context,
		IdempotencyTable:      data.Table,
		GatewayURL:            env.GatewayURL,
		ReadTimeout:           awscdk.Duration_Seconds(jsii.Number(env.GatewayReadTimeout.Seconds())),
		CobroFunctionName:     name("mf-cobro"),
		ReembolsoFunctionName: name("mf-reembolso"),
		SecretName:            name("mercadofresco/pasarela/api-key"),
		ReservedConcurrency:   env.PaymentConcurrency,
		Vpc:                   network.Network.Vpc,
		Subnets:               network.Network.EgressSubnets(),
		SecretsEndpoint:       network.Network.SecretsEndpoint,
		BreakerStore:          network.Cache,
	})
	s.Workflow = orderflow.NewWorkflow(stack, "ProcesarPedido", &orderflow.WorkflowProps{
		Context:          shared.Context,
		StateMachineName: name(orderflow.StateMachineName),
		// Named so that the Messaging stack's queue and topic admit it
		// without referencing this stack (which references Messaging). Role
		// names are global to the account: the region keeps two regions'
		// roles apart.
		RoleName: name(orderflow.StateMachineName + "-" + env.Region),
		Charge:   s.Payment.Cobro.Function,
		Refund:   s.Payment.Reembolso.Function,
		// A little above the functions' own timeout: the Lambda timeout
		// ends a stuck attempt, not the state's.
		PaymentTaskTimeout: s.Payment.Timeout.Plus(awscdk.Duration_Seconds(jsii.Number(10))),
		StockMovements:     messaging.MovimientosStock.Queue.Queue,
		Confirmed:          messaging.PedidoConfirmado.Topic,
	})
	s.Starter = orderflow.NewStarter(stack, "Inicio", &orderflow.StarterProps{
		Context:                 shared.Context,
		Bus:                     shared.Bus,
		Workflow:                s.Workflow,
		MaximumConcurrency:      env.MaxConsumerConcurrency,
		QueueName:               name(catalog.InicioQueueName),
		DeadLetterQueueName:     name(catalog.InicioDLQName),
		RuleName:                name("mf-pedido-creado-a-inicio"),
		RuleDeadLetterQueueName: name("mercadofresco-regla-pedido-creado-fallidos"),
		FunctionName:            name("mf-iniciar-pedido"),
		OperatorRoleArn:         env.RoleArn(env.Roles.Operator),
		ArchiveRetention:        awscdk.Duration_Days(jsii.Number(env.ArchiveRetentionDays)),
		Vpc:                     network.Network.Vpc,
		Subnets:                 network.Network.EgressSubnets(),
	})
	s.SigningKey = orderflow.NewSigningKey(stack, "FirmaPedidos", &orderflow.SigningKeyProps{
		Context:    shared.Context,
		SecretName: name(orderflow.SigningKeyName),
	})
	s.SigningKey.GrantRead(s.Payment.Cobro.Function, network.Network.SecretsEndpoint)
	s.SigningKey.GrantRead(s.Starter.Function.Function, network.Network.SecretsEndpoint)
	s.SigningKey.AdmitRoleName(publisherRoleName(env))             // it reads in the Outbox stack (stacks.Build)
	queues.NameRole(s.Starter.Function.Role, starterRoleName(env)) // the SCP admits it by name
	s.Carts = events.NewCarts(stack, "Carritos", &events.CartsProps{
		Context:                 shared.Context,
		Bus:                     shared.Bus,
		Import:                  env.Carritos,
		TableName:               name(events.TableName),
		PipeName:                name(events.PipeName),
		QueueName:               name(events.QueueName),
		DeadLetterQueueName:     name("cola-mercadofresco-carritos-abandonados-fallidos"),
		PipeDeadLetterQueueName: name("mercadofresco-pipe-carritos-fallidos"),
		RuleName:                name("mf-carrito-abandonado"),
		RuleDeadLetterQueueName: name("mercadofresco-regla-carrito-abandonado-fallidos"),
	})
	queues.NameRole(s.Carts.PipeRole, cartsPipeRoleName(env)) // the bus admits it by name
	s.ERP = events.NewERPDestination(stack, "ERP", &events.ERPProps{
		Context:             shared.Context,
		Bus:                 shared.Bus,
		Endpoint:            env.ERPWebhookURL,
		RateLimitPerSecond:  env.ERPRateLimitPerSecond,
		ConnectionName:      name("mf-erp"),
		DestinationName:     name("mf-erp-webhook"),
		RuleName:            name("mf-pedidos-a-erp"),
		DeadLetterQueueName: name("mercadofresco-erp-webhook-fallidos"),
		SecretName:          name("mercadofresco/erp/webhook-api-key"),
	})
	s.ConfirmationSLO = newConfirmationObjective(stack, shared, s.Workflow)
	output(stack, "StateMachineArn", "", s.Workflow.StateMachine.StateMachineArn())
	output(stack, "GatewaySecretArn", "Put the payment gateway API key here before the first order", s.Payment.Secret.SecretArn())
	output(stack, "ERPSecretArn", "Put the ERP API key here ({\"api_key\": ...}) and redeploy", s.ERP.Secret.SecretArn())
	return s
}
