package events

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/dependency"

	"github.com/mercadofresco/integration/lambdas/eventsapi"
)

// The destination's figures (docs/design.md#erp-destination).
const (
	// ERPRetryAttempts: 8 retries, 9 deliveries at most per event
	// (EventBridge's default is 185 over 24 h: a storm against an ERP that
	// is already down).
	ERPRetryAttempts = 8
	// ERPMaxEventAgeMinutes: an order event not delivered within 1 h
	// goes to the DLQ (runbook; the archive can replay the window).
	ERPMaxEventAgeMinutes = 60
	// APIKeyHeader carries the ERP API key.
	APIKeyHeader = "x-api-key"
	// SecretField is the JSON field of the secret with the key.
	SecretField = "api_key"
)

// ERPProps configures the ERP destination. Bus, Endpoint, RateLimitPerSecond
// and the Context's DataKey and Alerts are required.
type ERPProps struct {
	core.Context
	Bus awsevents.IEventBus
	// Endpoint is the ERP webhook (https), per environment.
	Endpoint string
	// RateLimitPerSecond is the API destination's
	// invocationRateLimitPerSecond (1..300), per environment.
	RateLimitPerSecond float64
	// Physical names; nil lets CloudFormation choose.
	ConnectionName, DestinationName, RuleName, DeadLetterQueueName, SecretName *string
}

// ERPDestination is the connection, API destination and rule.
type ERPDestination struct {
	constructs.Construct
	// Secret holds the ERP API key as {"api_key": "..."}; created with a
	// random placeholder that an operator replaces before enabling traffic.
	Secret         awssecretsmanager.Secret
	Connection     awsevents.Connection
	ApiDestination awsevents.ApiDestination
	// InvokeRole is the rule's role for the API destination: it trusts
	// EventBridge for this account's rules only.
	InvokeRole awsiam.Role
	Rule       *Rule
}

// WebhookEventType names the body the rule sends to the ERP webhook in
// the event contracts: the order event's fields and its "version".
const WebhookEventType = "AvisoPedidoERP"

// OrderEventsPattern matches the shop's order events (source
// mercadofresco.tienda, detail-type starting with "Pedido"), except the
// PedidoCreado the shop writes again for a payment retry (detail.intento
// set, lambdas/shop): the ERP hears of an order once, however many
// times the customer pays.
func OrderEventsPattern() *awsevents.EventPattern {
	return &awsevents.EventPattern{
		Source:     jsii.Strings(eventsapi.SourceTienda),
		DetailType: awsevents.Match_Prefix(jsii.String("Pedido")),
		Detail:     &map[string]interface{}{"intento": awsevents.Match_DoesNotExist()},
	}
}

// NewERPDestination sends the shop's order events to the ERP's webhook: a
// connection whose API key lives in Secrets Manager, an API destination
// with invocationRateLimitPerSecond (a burst of orders never exceeds what
// the ERP accepts), and a rule whose target has a retry policy and its own
// DLQ. The ERP receives a projection of the event (input transformer): the
// order, its customer id, lines and amounts, the event id (also the
// Idempotency-Key header); never the card token nor the customer's e-mail.
func NewERPDestination(scope constructs.Construct, id string, props *ERPProps) *ERPDestination {
	c, v, props := core.Begin(scope, id, "erp", props)
	d := &ERPDestination{Construct: c}
	v.If(!strings.HasPrefix(props.Endpoint, "https://"), "Endpoint %q must be an https URL", props.Endpoint)
	props.Require(v, core.DataKey|core.Alerts)
	rate := props.RateLimitPerSecond
	if v.If(rate < 1 || rate > 300, "RateLimitPerSecond must be in 1..300 (the ERP's capacity), got %v", props.RateLimitPerSecond) {
		rate = 1
	}
	endpoint := cmp.Or(props.Endpoint, "https://missing.invalid")

	d.Secret = dependency.NewAPIKey(c, "Credenciales", &dependency.APIKeyProps{
		Context:     props.Context,
		SecretName:  props.SecretName,
		Field:       SecretField,
		Description: "ERP webhook API key used by the EventBridge connection ({\"api_key\": ...}). Created with a random placeholder: put the real key, then redeploy so the connection reads it.",
		Rotation:    "The ERP issues this API key; it is rotated in the ERP and stored here, then the stack is redeployed so the EventBridge connection reads it. A rotation Lambda cannot mint ERP keys.",
	})
	// The connection's {{resolve:secretsmanager:...}} reference is resolved
	// by CloudFormation with the stack's service role: the key's one reader.
	if deployer, err := core.DeploymentRoleArn(awscdk.Stack_Of(c)); !v.If(err != nil, "the ERP key's reader: %v", err) {
		dependency.AdmitReaderArn(d.Secret, deployer)
	}
	d.Connection = awsevents.NewConnection(c, jsii.String("Conexion"), &awsevents.ConnectionProps{
		ConnectionName: props.ConnectionName,
		Description:    jsii.String("ERP webhook (API key from Secrets Manager)"),
		Authorization:  awsevents.Authorization_ApiKey(jsii.String(APIKeyHeader), d.Secret.SecretValueFromJson(jsii.String(SecretField))),
	})
	// The connection's own copy of the key is encrypted with the data key
	// (docs/design.md#erp-destination).
	if cfn, ok := d.Connection.Node().TryFindChild(jsii.String("Connection")).(awsevents.CfnConnection); !v.If(!ok, "the connection's CloudFormation resource was not found (a CDK upgrade renamed it?): its key cannot be set") && props.DataKey != nil {
		cfn.SetKmsKeyIdentifier(props.DataKey.KeyArn())
	}
	d.ApiDestination = awsevents.NewApiDestination(c, jsii.String("Destino"), &awsevents.ApiDestinationProps{
		ApiDestinationName: props.DestinationName,
		Description:        jsii.String(fmt.Sprintf("ERP webhook, at most %.0f invocations/s", rate)),
		Connection:         d.Connection,
		Endpoint:           jsii.String(endpoint),
		HttpMethod:         awsevents.HttpMethod_POST,
		RateLimitPerSecond: jsii.Number(rate),
	})
	// The rule's role trusts EventBridge for this account's rules only
	// (aws:SourceAccount, aws:SourceArn); the target grants it the invoke.
	stack := awscdk.Stack_Of(c)
	d.InvokeRole = awsiam.NewRole(c, jsii.String("RolInvocacion"), &awsiam.RoleProps{
		Description: jsii.String("EventBridge rules of this account: invoke the ERP API destination"),
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("events.amazonaws.com"), &awsiam.ServicePrincipalOpts{Conditions: &map[string]interface{}{
			"StringEquals": map[string]interface{}{"aws:SourceAccount": stack.Account()},
			"ArnLike": map[string]interface{}{"aws:SourceArn": stack.FormatArn(&awscdk.ArnComponents{
				Service: jsii.String("events"), Resource: jsii.String("rule"), ResourceName: jsii.String("*"),
			})},
		}}),
	})
	field := func(path string) *string { return awsevents.EventField_FromPath(jsii.String(path)) }
	d.Rule = NewRule(c, "Pedidos", &RuleProps{
		Bus:                 props.Bus,
		RuleName:            props.RuleName,
		Description:         "Order events of the shop -> ERP webhook (API destination, rate limited)",
		Pattern:             OrderEventsPattern(),
		TargetLabel:         "the ERP webhook API destination",
		RetryAttempts:       ERPRetryAttempts,
		MaxEventAge:         awscdk.Duration_Minutes(jsii.Number(ERPMaxEventAgeMinutes)),
		DeadLetterQueueName: props.DeadLetterQueueName,
		Context:             props.Context,
		Target: func(o TargetOptions) awsevents.IRuleTarget {
			return awseventstargets.NewApiDestination(d.ApiDestination, &awseventstargets.ApiDestinationProps{
				EventRole:       d.InvokeRole,
				DeadLetterQueue: o.DeadLetterQueue, MaxEventAge: o.MaxEventAge, RetryAttempts: jsii.Number(o.RetryAttempts),
				HeaderParameters: &map[string]*string{"Idempotency-Key": jsii.String("$.detail.id_evento")},
				Event: awsevents.RuleTargetInput_FromObject(map[string]any{
					"tipo":           field("$.detail-type"),
					"version":        field("$.detail.version"),
					"id_evento":      field("$.detail.id_evento"),
					"pedido_id":      field("$.detail.pedido_id"),
					"cliente_id":     field("$.detail.cliente_id"),
					"total_centimos": field("$.detail.total_centimos"),
					"moneda":         field("$.detail.moneda"),
					"lineas":         field("$.detail.lineas"),
					"creado_en":      field("$.detail.creado_en"),
				}),
			})
		},
	})
	// The rule reads PedidoCreado's fields and sends the webhook body,
	// whose "version" is the event's (docs/design.md#event-contracts).
	core.Accepts(d.Rule.Rule, eventsapi.TypePedidoCreado, eventsapi.AcceptedVersions(eventsapi.TypePedidoCreado))
	core.Produces(d.Rule.Rule, WebhookEventType, nil, nil)
	// The ERP reads version 1 of the webhook body.
	core.Accepts(d.ApiDestination, WebhookEventType, []int{eventsapi.Version1})
	return d
}
