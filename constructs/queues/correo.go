package queues

import (
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsses"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// CorreoProps configures NewCorreo: its HTTPConsumerProps are the
// secondary provider's (URL, MaxInFlight: e-mails sent at once, SecretName).
type CorreoProps struct {
	HTTPConsumerProps
	// Remitente is the From address; its domain is the environment's SES
	// identity (verified outside this app). Required.
	Remitente string
	// ConfigurationSetName of SES. Nil lets CloudFormation name it.
	ConfigurationSetName *string
	// EventLogGroupName receives the configuration set's sending events.
	// EventBridge logs only to groups named /aws/events/...; nil means
	// /aws/events/<a name derived from the construct path>.
	EventLogGroupName *string
}

// Correo is the confirmation e-mail consumer. Its HTTPConsumer's Secret
// and CircuitOpenedAlarm are the secondary provider's.
type Correo struct {
	*HTTPConsumer
	// ConfigurationSet every e-mail is sent with.
	ConfigurationSet awsses.ConfigurationSet
	// Events holds the configuration set's sending events (send, delivery,
	// bounce, reject...) with the e-mail's tags: where the runbook checks
	// whether an uncertain SES send left (tag pedido_id).
	Events awslogs.LogGroup
	// EventsDeadLetterQueue receives events that could not be logged.
	EventsDeadLetterQueue *DeadLetterQueue
	// SESCircuitOpenedAlarm watches SES's breaker.
	SESCircuitOpenedAlarm awscloudwatch.Alarm
}

// Confirmation e-mail numbers.
const (
	// CorreoTimeout bounds one invocation: SES (10 s at most, no SDK
	// retry), then the secondary's two 10 s attempts and the wait between
	// them (at most the 20 s Retry-After honoured).
	CorreoTimeout = 60 * time.Second
	// correoSecondaryReadTimeout: an e-mail API answers in milliseconds;
	// 10 s per attempt keeps the invocation short.
	correoSecondaryReadTimeout = 10 * time.Second
	// correoAgeAlarm: a confirmation later than this is a customer-visible
	// failure, though nothing is lost (docs/design.md#age-alarm).
	correoAgeAlarm = 30 * time.Minute
)

// NewCorreo creates the confirmation e-mail consumer with its SES
// configuration set.
func NewCorreo(scope constructs.Construct, id string, props *CorreoProps) *Correo {
	c, v, props := core.Begin(scope, id, "consumers", props)
	at := strings.LastIndex(props.Remitente, "@")
	v.If(at < 1 || at == len(props.Remitente)-1, "Remitente %q is not an e-mail address of the SES identity", props.Remitente)
	r := &Correo{}
	r.ConfigurationSet = awsses.NewConfigurationSet(c, jsii.String("ConjuntoConfiguracion"), &awsses.ConfigurationSetProps{
		ConfigurationSetName: props.ConfigurationSetName,
		SendingEnabled:       jsii.Bool(true),
		ReputationMetrics:    jsii.Bool(true),
		TlsPolicy:            awsses.ConfigurationSetTlsPolicy_REQUIRE,
		SuppressionReasons:   awsses.SuppressionReasons_BOUNCES_AND_COMPLAINTS,
	})
	r.addEventTrail(c, props)
	r.HTTPConsumer = newHTTPConsumer(c, props.HTTPConsumerProps, httpSpec{
		what: "Correo", entry: "lambdas/correo-confirmacion",
		description: "Sends each confirmed order's e-mail once, through SES or the secondary provider",
		timeout:     CorreoTimeout,
		oldestAge:   correoAgeAlarm,
		// 5 receives: the providers throttle, and a throttled batch spends a
		// receive (docs/design.md#queue-receives).
		maxReceiveCount: 5,
		environment: map[string]*string{
			lambdaapi.EnvCorreoRemitente:     jsii.String(props.Remitente),
			lambdaapi.EnvSESConfigurationSet: r.ConfigurationSet.ConfigurationSetName(),
		},
		key:          "correo-confirmacion:<pedido_id>",
		grant:        func(fn awslambda.Function) { r.grantSendEmail(fn, props.Remitente, props.Remitente[at+1:]) },
		dependencyID: "Secundario",
		dependency: HTTPDependency{
			Name: lambdaapi.NameCorreoSecundario, Prefix: lambdaapi.PrefixCorreoSecundario,
			ReadTimeout: core.Duration(correoSecondaryReadTimeout), Issuer: "the secondary e-mail provider",
		},
		window:     lambdaapi.WindowCorreo,
		openEffect: "the secondary e-mail provider is down: e-mails SES cannot take wait in their queue.",
	})
	r.SESCircuitOpenedAlarm = r.AddBreaker(props.Breakers, lambdaapi.NameSES,
		"confirmation e-mails go through the secondary provider (or wait 300 s if it cannot take them either); check SES's sending quota and the account's sending status.")
	return r
}

// grantSendEmail lets fn send e-mail from sender only (ses:FromAddress), of
// domain's identity, through this configuration set only.
func (r *Correo) grantSendEmail(fn awslambda.Function, sender, domain string) {
	stack := awscdk.Stack_Of(fn)
	awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee: fn,
		Actions: jsii.Strings("ses:SendEmail"),
		ResourceArns: jsii.Strings(
			*stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("ses"), Resource: jsii.String("identity"), ResourceName: jsii.String(domain)}),
			*stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("ses"), Resource: jsii.String("configuration-set"), ResourceName: r.ConfigurationSet.ConfigurationSetName()}),
		),
		Conditions: &map[string]*map[string]any{
			"StringEquals": {"ses:FromAddress": sender},
		},
	})
}

// addEventTrail sends the configuration set's sending events to the
// account's default bus (the only bus SES delivers to) and a rule there
// writes them to an encrypted log group; events the rule cannot deliver go
// to a DLQ with an alarm.
func (r *Correo) addEventTrail(c constructs.Construct, props *CorreoProps) {
	defaultBus := awsevents.EventBus_FromEventBusName(c, jsii.String("BusPredeterminado"), jsii.String("default"))
	awsses.NewConfigurationSetEventDestination(c, jsii.String("EventosEnvio"), &awsses.ConfigurationSetEventDestinationProps{
		ConfigurationSet: r.ConfigurationSet,
		Destination:      awsses.EventDestination_EventBus(defaultBus),
		Events: &[]awsses.EmailSendingEvent{
			awsses.EmailSendingEvent_SEND, awsses.EmailSendingEvent_REJECT, awsses.EmailSendingEvent_BOUNCE,
			awsses.EmailSendingEvent_COMPLAINT, awsses.EmailSendingEvent_DELIVERY, awsses.EmailSendingEvent_RENDERING_FAILURE,
			awsses.EmailSendingEvent_DELIVERY_DELAY,
		},
	})
	logName := props.EventLogGroupName
	if logName == nil {
		logName = jsii.String("/aws/events/" + *awscdk.Names_UniqueResourceName(c, &awscdk.UniqueResourceNameOptions{MaxLength: jsii.Number(200)}))
	} else {
		core.Check(c, "consumers").If(!strings.HasPrefix(*logName, "/aws/events/"), "EventLogGroupName %q must start with /aws/events/ (EventBridge logs nowhere else)", *logName)
	}
	r.Events = props.LogGroup(c, "RegistroEventos", logName)
	r.EventsDeadLetterQueue = NewDeadLetterQueue(c, "EventosDLQ", &DeadLetterQueueProps{
		Context: props.Context,
		Source:  "rule that logs the confirmation e-mails' SES events",
	})
	rule := awsevents.NewCfnRule(c, jsii.String("ReglaEventos"), &awsevents.CfnRuleProps{
		Description:  jsii.String("SES sending events of the confirmation e-mails' configuration set, to their log group"),
		EventBusName: jsii.String("default"),
		EventPattern: map[string]any{
			"source": []string{"aws.ses"},
			"detail": map[string]any{"mail": map[string]any{"tags": map[string]any{"ses:configuration-set": []any{r.ConfigurationSet.ConfigurationSetName()}}}},
		},
		Targets: []any{&awsevents.CfnRule_TargetProperty{
			Id: jsii.String("Registro"),
			Arn: awscdk.Stack_Of(c).FormatArn(&awscdk.ArnComponents{
				Service: jsii.String("logs"), Resource: jsii.String("log-group"), ResourceName: logName, ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
			}),
			RetryPolicy: &awsevents.CfnRule_RetryPolicyProperty{
				// Within MF-ATTEMPTS (at most 15 per unit of work); what is still
				// undelivered then waits in the DLQ.
				MaximumRetryAttempts: jsii.Number(8), MaximumEventAgeInSeconds: jsii.Number(86400),
			},
			DeadLetterConfig: &awsevents.CfnRule_DeadLetterConfigProperty{Arn: r.EventsDeadLetterQueue.Queue.QueueArn()},
		}},
	})
	rule.Node().AddDependency(r.Events)
	props.Dashboard.Add(observability.Bus, observability.Rule("SES events of the confirmation e-mails (default bus)", rule.Ref(), nil))
	r.EventsDeadLetterQueue.Queue.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("events.amazonaws.com"), nil)},
		Actions:    jsii.Strings("sqs:SendMessage"),
		Resources:  jsii.Strings(*r.EventsDeadLetterQueue.Queue.QueueArn()),
		Conditions: &map[string]any{"ArnEquals": map[string]any{"aws:SourceArn": rule.AttrArn()}},
	}))
	ForQueue(r.EventsDeadLetterQueue.Queue).AdmitSource(rule.AttrArn())
	awslogs.NewResourcePolicy(c, jsii.String("PoliticaRegistro"), &awslogs.ResourcePolicyProps{
		PolicyStatements: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Principals: &[]awsiam.IPrincipal{
				awsiam.NewServicePrincipal(jsii.String("events.amazonaws.com"), nil),
				awsiam.NewServicePrincipal(jsii.String("delivery.logs.amazonaws.com"), nil),
			},
			Actions:    jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
			Resources:  jsii.Strings(*r.Events.LogGroupArn()),
			Conditions: &map[string]any{"ArnEquals": map[string]any{"aws:SourceArn": rule.AttrArn()}},
		})},
	})
}
