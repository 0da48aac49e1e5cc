package outbox

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsschedulertargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/dependency"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// The publisher's figures (docs/design.md#outbox).
const (
	// PendingThreshold is the pending rows that alarm (for 2 minutes).
	PendingThreshold = 500
	// OldestAgeThreshold is the oldest pending row's age that alarms.
	OldestAgeThreshold = 60 * time.Second
	// PublisherTimeoutSeconds is the publisher function's timeout: it polls
	// for 80 s of it, so invocations started every minute overlap by 20 s
	// and a publisher is always polling (docs/design.md#outbox-lag).
	PublisherTimeoutSeconds = int(lambdaapi.PublisherTimeout / time.Second)
	// CleanupTimeoutSeconds is the cleanup function's timeout.
	CleanupTimeoutSeconds = 300
	// The pools' maxima (DB_MAX_CONNS, docs/design.md#aurora-connections):
	// the publisher claims a batch on one connection while it marks the
	// last one on the other; the others run one statement at a time.
	PublisherPoolMax, CleanupPoolMax, MigrationPoolMax = 2, 1, 1
)

// PublisherProps configures NewPublisher. The Context's EnvironmentName
// (the Entorno dimension the alarms watch) and Alerts, Database, Vpc, Bus
// and EventsEndpoint are required.
type PublisherProps struct {
	core.Context
	Database *Database
	// Vpc and Subnets place the functions (Network.AppSubnets()).
	Vpc     awsec2.IVpc
	Subnets *awsec2.SubnetSelection
	// EventsEndpoint is the EventBridge interface endpoint the publisher
	// reaches the bus through (the subnets have no NAT); its policy allows
	// PutEvents on Bus only.
	EventsEndpoint awsec2.IInterfaceVpcEndpoint
	// Bus receives the events (source eventsapi.SourceTienda); the
	// publisher may PutEvents to it only.
	Bus awsevents.IEventBus
	// ReservedConcurrency of the publisher (2..10). Zero means
	// lambdaapi.PublisherConcurrency: consecutive invocations overlap.
	ReservedConcurrency float64
	// PublisherFunctionName and CleanupFunctionName are the functions'
	// physical names. Nil lets CloudFormation name them.
	PublisherFunctionName, CleanupFunctionName *string
}

// Publisher is the outbox publisher function, run every minute by an
// EventBridge Scheduler schedule, the daily cleanup function, and the
// alarms on the outbox's metrics.
type Publisher struct {
	constructs.Construct
	// Function is the publisher.
	Function *golambda.Function
	// Cleanup deletes rows published more than 7 days ago.
	Cleanup *golambda.Function
	// SecurityGroup is shared by both functions: to the proxy and the
	// EventBridge endpoint only.
	SecurityGroup awsec2.SecurityGroup
	// PublishSchedule and CleanupSchedule invoke them.
	PublishSchedule awsscheduler.Schedule
	CleanupSchedule awsscheduler.Schedule
	// PendingAlarm, OldestAlarm and ParkedAlarm watch the EMF gauges.
	PendingAlarm, OldestAlarm, ParkedAlarm awscloudwatch.Alarm

	environment string
}

// NewPublisher creates the functions, schedules and alarms. Every problem
// of props is reported at synth (the wiring to what is missing is left
// out, the construct is whole).
func NewPublisher(scope constructs.Construct, id string, props *PublisherProps) *Publisher {
	this, v, props := core.Begin(scope, id, "outbox.Publisher", props)
	p := &Publisher{Construct: this, environment: props.Environment()}
	props.Require(v, core.EnvironmentName|core.Alerts)
	v.If(props.Database == nil, "Database is required")
	v.If(props.Bus == nil, "Bus is required")
	v.If(props.EventsEndpoint == nil, "EventsEndpoint is required: the publisher reaches the bus through it")
	vpc, subnets := core.RequireVpc(v, this, props.Vpc, props.Subnets, "the functions connect to the RDS Proxy")
	reserved := v.Count("ReservedConcurrency", props.ReservedConcurrency, lambdaapi.PublisherConcurrency, lambdaapi.PublisherConcurrency, 10)

	p.SecurityGroup = awsec2.NewSecurityGroup(this, jsii.String("SecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              vpc,
		Description:      jsii.String("Outbox functions: to the RDS Proxy and the EventBridge endpoint only"),
		AllowAllOutbound: jsii.Bool(false),
	})
	p.addFunctions(props, vpc, subnets, reserved)
	// Every minute (overlapping invocations, docs/design.md#outbox-lag); no
	// retry (the next minute's invocation is the retry) and a short event
	// age, so a backlog of invocations never piles up.
	p.PublishSchedule = p.schedule("CadaMinuto", p.Function, awsscheduler.ScheduleExpression_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		"Runs the outbox publisher's 1 s polling loop every minute", 0, awscdk.Duration_Minutes(jsii.Number(1)))
	p.CleanupSchedule = p.schedule("Diaria", p.Cleanup, awsscheduler.ScheduleExpression_Cron(&awsscheduler.CronOptionsWithTimezone{
		Hour: jsii.String("4"), Minute: jsii.String("15"), TimeZone: awscdk.TimeZone_EUROPE_MADRID(),
	}), "Deletes outbox rows published more than 7 days ago (quiet hours)", 2, awscdk.Duration_Hours(jsii.Number(1)))
	p.addAlarms(props.Alerts)
	p.contribute(props.Dashboard)
	return p
}

// addFunctions creates the publisher and the cleanup, each connecting as
// its own database role, with least privilege: PutEvents on the bus only,
// rds-db:connect through the proxy as one user, the network to the proxy's
// port and the endpoint only.
func (p *Publisher) addFunctions(props *PublisherProps, vpc awsec2.IVpc, subnets *awsec2.SubnetSelection, reserved float64) {
	db := props.Database
	cleanupEnv, pubEnv := map[string]*string{}, map[string]*string{}
	if db != nil {
		cleanupEnv, pubEnv = db.Environment(db.Roles.Cleanup, CleanupPoolMax), db.Environment(db.Roles.Publisher, PublisherPoolMax)
	}
	busName := jsii.String("")
	if props.Bus != nil {
		busName = props.Bus.EventBusName()
	}
	for _, env := range []map[string]*string{cleanupEnv, pubEnv} {
		env[lambdaapi.EnvEnvironment] = jsii.String(props.EnvironmentName)
	}
	pubEnv[lambdaapi.EnvBusName], pubEnv[lambdaapi.EnvEventSource] = busName, jsii.String(eventsapi.SourceTienda)
	pubEnv[lambdaapi.EnvOutboxEntryAttempts] = jsii.String(fmt.Sprint(lambdaapi.DefaultOutboxEntryAttempts))
	pubEnv[lambdaapi.EnvOutboxMaxClaims] = jsii.String(fmt.Sprint(lambdaapi.DefaultOutboxMaxClaims))
	fn := func(id, name string, physical *string, description string, timeout float64, env map[string]*string, reserved float64, deps []golambda.Dependency) *golambda.Function {
		return golambda.NewFunction(p.Construct, id, &golambda.Props{
			Context:                      props.Context,
			Entry:                        "lambdas/outbox-" + name,
			FunctionName:                 physical,
			Description:                  jsii.String(description),
			Timeout:                      awscdk.Duration_Seconds(jsii.Number(timeout)),
			Environment:                  env,
			ReservedConcurrentExecutions: jsii.Number(reserved),
			Vpc:                          vpc,
			VpcSubnets:                   subnets,
			SecurityGroups:               &[]awsec2.ISecurityGroup{p.SecurityGroup},
			Dependencies:                 deps,
		})
	}
	p.Function = fn("Publicador", "publicador", props.PublisherFunctionName, "Transactional outbox: publishes pending rows of Aurora's outbox table to "+*busName,
		float64(PublisherTimeoutSeconds), pubEnv, reserved, []golambda.Dependency{{
			// Attempts per event on the bus, per outbox row across
			// invocations (MF-ATTEMPTS): SDK x entry sends x claims = 12.
			Name:        "events:PutEvents (outbox -> bus)",
			AttemptsEnv: []string{lambdaapi.EnvSDKMaxAttempts, lambdaapi.EnvOutboxEntryAttempts, lambdaapi.EnvOutboxMaxClaims},
			PerWorkItem: true,
		}})
	// No asynchronous retry of a failed invocation: the next minute's
	// invocation is the retry, and the overlap already covers the gap.
	p.Function.Function.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{
		RetryAttempts: jsii.Number(0),
		MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(60)),
	})
	p.Cleanup = fn("Limpieza", "limpieza", props.CleanupFunctionName, "Transactional outbox: deletes rows published more than 7 days ago, in batches",
		CleanupTimeoutSeconds, cleanupEnv, 1, nil)
	if props.Bus != nil {
		props.Bus.GrantPutEventsTo(p.Function.Role, nil)
		// It publishes what the shop writes into the outbox.
		core.ProducesOnBus(p.Function.Function, eventsapi.SourceTienda, eventsapi.TypePedidoCreado, []int{eventsapi.PedidoCreadoVersion}, props.Bus)
	}
	if db != nil {
		db.GrantConnect(p.Function.Role, db.Roles.Publisher)
		db.GrantConnect(p.Cleanup.Role, db.Roles.Cleanup)
		db.AllowFrom(p.SecurityGroup, "outbox functions")
	}
	if props.EventsEndpoint != nil {
		// The endpoint's own policy (constructs/network) limits it to
		// PutEvents on the bus by this account's principals.
		dependency.AllowHTTPS(p.SecurityGroup, props.EventsEndpoint, "outbox publisher PutEvents")
	}
}

// schedule invokes fn on expression through EventBridge Scheduler, with a
// role of its own whose acknowledgement of the ":*" the CDK adds to
// lambda:InvokeFunction sits next to it.
func (p *Publisher) schedule(id string, fn *golambda.Function, expression awsscheduler.ScheduleExpression, description string, retries float64, maxAge awscdk.Duration) awsscheduler.Schedule {
	stack := awscdk.Stack_Of(p.Construct)
	role := awsiam.NewRole(p.Construct, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), &awsiam.ServicePrincipalOpts{
			Conditions: &map[string]interface{}{
				"StringEquals": map[string]interface{}{"aws:SourceAccount": stack.Account()},
			},
		}),
		Description: jsii.String("EventBridge Scheduler: invokes " + fn.Entry),
	})
	schedule := awsscheduler.NewSchedule(p.Construct, jsii.String(id), &awsscheduler.ScheduleProps{
		Schedule:    expression,
		Description: jsii.String(description),
		Target: awsschedulertargets.NewLambdaInvoke(fn.Function, &awsschedulertargets.ScheduleTargetBaseProps{
			Role:          role,
			RetryAttempts: jsii.Number(retries),
			MaxEventAge:   maxAge,
		}),
	})
	// After the schedule's grant: suppressions reach existing children only.
	fnID := core.LogicalID(fn.Function)
	core.AcknowledgeNag(role, true, "AwsSolutions-IAM5", "lambda:InvokeFunction on this one function; the ':*' the CDK adds covers its versions and aliases, no other function.", "Resource::<"+fnID+".Arn>:*")
	return schedule
}

// addAlarms watches the publisher's gauges (docs/design.md#outbox).
func (p *Publisher) addAlarms(topic awssns.ITopic) {
	p.PendingAlarm = observability.NewAlarm(p.Construct, "PendientesAlarm", &observability.AlarmProps{
		Metric:            p.MetricPending(nil),
		Topic:             topic,
		Description:       fmt.Sprintf("Outbox (%s): more than %d events waiting to be published for 2 minutes. Publisher too slow or failing; see its logs and Errors alarm.", p.environment, PendingThreshold),
		Threshold:         PendingThreshold,
		EvaluationPeriods: 2,
		// The age alarm below catches a silent publisher.
		MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	p.OldestAlarm = observability.NewAlarm(p.Construct, "AntiguedadAlarm", &observability.AlarmProps{
		Metric:            p.MetricOldestPendingAge(nil),
		Topic:             topic,
		Description:       fmt.Sprintf("Outbox (%s): the oldest unpublished event is older than %.0f s, or the publisher stopped reporting. Orders are not reaching bus-mercadofresco.", p.environment, OldestAgeThreshold.Seconds()),
		Threshold:         OldestAgeThreshold.Seconds(),
		EvaluationPeriods: 2,
		// Breaching: the gauges come from the publisher itself, so silence
		// means the publisher is not running.
		MissingData: awscloudwatch.TreatMissingData_BREACHING,
	})
	// The age alarm above catches a silent publisher.
	p.ParkedAlarm = observability.NewAnyAlarm(p.Construct, "AparcadosAlarm", p.MetricParked(nil), topic,
		fmt.Sprintf("Outbox (%s): events parked as poison (rejected by EventBridge or too large). They will not be published until an operator fixes and unparks them: SELECT id, tipo, ultimo_error FROM outbox WHERE aparcado_en IS NOT NULL.", p.environment))
}

// metric is the gauge name of this environment (Maximum per minute,
// unless opts says otherwise).
func (p *Publisher) metric(name string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	dims := map[string]*string{lambdaapi.DimensionEnvironment: jsii.String(p.environment)}
	m := observability.Metric(lambdaapi.Namespace, name, dims, "Maximum", "", awscdk.Duration_Minutes(jsii.Number(1)))
	if opts == nil {
		return m
	}
	return m.With(opts)
}

// MetricPending is the number of unpublished, unparked outbox rows.
func (p *Publisher) MetricPending(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return p.metric(lambdaapi.MetricOutboxPending, opts)
}

// MetricOldestPendingAge is the age in seconds of the oldest pending row.
func (p *Publisher) MetricOldestPendingAge(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return p.metric(lambdaapi.MetricOutboxOldestAge, opts)
}

// MetricParked is the number of parked (poison) rows.
func (p *Publisher) MetricParked(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return p.metric(lambdaapi.MetricOutboxParked, opts)
}
