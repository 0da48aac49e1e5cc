package outbox

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsschedulertargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/mercadofresco/integration/constructs/alarm"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/lambdas/metrics/metricsapi"
	"github.com/mercadofresco/integration/lambdas/outbox/outboxapi"
)

// Defaults of PublisherProps (the lesson's numbers).
const (
	DefaultSource             = "mercadofresco.tienda"
	DefaultPendingThreshold   = 500
	DefaultOldestAgeThreshold = 60 // seconds
	// PublisherTimeoutSeconds is the publisher function's timeout: it polls
	// for 80 s of it (lambdas/outbox-publicador stops claiming 20 s before
	// the deadline), so invocations started every minute overlap by 20 s
	// and a publisher is always polling (lambdas/outbox/outboxapi).
	PublisherTimeoutSeconds = int(outboxapi.PublisherTimeout / time.Second)
	// CleanupTimeoutSeconds is the cleanup function's timeout.
	CleanupTimeoutSeconds = 300
)

// PublisherProps configures NewPublisher. Database, Vpc, Subnets, Bus,
// EventsEndpoint and AlarmTopic are required.
type PublisherProps struct {
	Database *Database
	// Vpc and Subnets place the functions (Network.AppSubnets()).
	Vpc     awsec2.IVpc
	Subnets *awsec2.SubnetSelection
	// EventsEndpoint is the EventBridge interface endpoint the publisher
	// reaches the bus through (the VPC has no NAT). Its policy is narrowed
	// to PutEvents on Bus.
	EventsEndpoint awsec2.IInterfaceVpcEndpoint
	// Bus receives the events; the publisher may PutEvents to it only.
	Bus awsevents.IEventBus
	// Source of every event. Default DefaultSource.
	Source string
	// Environment is the value of the metric dimension Entorno (the
	// environment name); the alarms watch that dimension.
	Environment string
	// Builder compiles the functions (share the app's).
	Builder *golambda.Builder
	// EncryptionKey encrypts the functions' environment and logs.
	EncryptionKey awskms.IKey
	// LogRetention and LogRemovalPolicy of the functions' log groups
	// (SNAPSHOT is taken as RETAIN).
	LogRetention     awslogs.RetentionDays
	LogRemovalPolicy awscdk.RemovalPolicy
	// AlarmTopic receives every alarm (alarm and OK actions).
	AlarmTopic awssns.ITopic
	// ReservedConcurrency of the publisher. Zero means
	// outboxapi.PublisherConcurrency (2): an invocation a minute that polls for
	// 80 s overlaps the next one; less would throttle the overlap and open
	// a gap in the polling. More is never needed for throughput (one
	// publisher moves thousands of events per second).
	ReservedConcurrency float64
	// FunctionNamePrefix names the functions <prefix>-publicador and
	// <prefix>-limpieza. Nil lets CloudFormation name them.
	FunctionNamePrefix *string
	// PendingThreshold and OldestAgeThresholdSeconds default to 500 and 60.
	PendingThreshold          float64
	OldestAgeThresholdSeconds float64
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
	// SecurityGroup is shared by both functions.
	SecurityGroup awsec2.SecurityGroup
	// PublishSchedule and CleanupSchedule invoke them.
	PublishSchedule awsscheduler.Schedule
	CleanupSchedule awsscheduler.Schedule
	// PendingAlarm, OldestAlarm and ParkedAlarm watch the EMF gauges.
	PendingAlarm, OldestAlarm, ParkedAlarm awscloudwatch.Alarm

	environment string
}

// NewPublisher creates the functions, schedules and alarms. Every missing
// prop is reported as a synthesis error, and the construct is still built
// whole (the wiring to what is missing is left out), so code that uses it
// shows the errors instead of crashing on a nil field.
func NewPublisher(scope constructs.Construct, id string, props *PublisherProps) *Publisher {
	if props == nil {
		props = &PublisherProps{}
	}
	this := constructs.NewConstruct(scope, jsii.String(id))
	p := &Publisher{Construct: this, environment: props.Environment}
	if p.environment == "" {
		p.environment = "missing" // a metric dimension cannot be empty; synthesis fails anyway
	}
	for _, req := range []struct {
		name    string
		missing bool
	}{
		{"Database", props.Database == nil}, {"Vpc", props.Vpc == nil}, {"Bus", props.Bus == nil},
		{"EventsEndpoint", props.EventsEndpoint == nil}, {"AlarmTopic", props.AlarmTopic == nil},
		{"Environment", props.Environment == ""},
	} {
		if req.missing {
			awscdk.Annotations_Of(this).AddError(jsii.String("outbox.Publisher: " + req.name + " is required"))
		}
	}
	if props.Vpc == nil {
		pp := *props
		pp.Vpc = awsec2.NewVpc(this, jsii.String("MissingVpc"), &awsec2.VpcProps{MaxAzs: jsii.Number(2), NatGateways: jsii.Number(0)})
		pp.Subnets = &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}
		props = &pp
	}
	source := props.Source
	if source == "" {
		source = DefaultSource
	}
	reserved := props.ReservedConcurrency
	if reserved == 0 {
		reserved = outboxapi.PublisherConcurrency
	}
	if reserved < outboxapi.PublisherConcurrency || reserved > 10 {
		awscdk.Annotations_Of(this).AddError(jsii.String(fmt.Sprintf("outbox.Publisher: ReservedConcurrency %v not in %d..10 (invocations overlap, %d at once; each holds up to 2 proxy connections)", reserved, outboxapi.PublisherConcurrency, outboxapi.PublisherConcurrency)))
	}
	logRemoval := props.LogRemovalPolicy // golambda maps it (removal.For)
	name := func(suffix string) *string {
		if props.FunctionNamePrefix == nil {
			return nil
		}
		return jsii.String(*props.FunctionNamePrefix + "-" + suffix)
	}

	p.SecurityGroup = awsec2.NewSecurityGroup(this, jsii.String("SecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              props.Vpc,
		Description:      jsii.String("Outbox functions: to the RDS Proxy and the EventBridge endpoint only"),
		AllowAllOutbound: jsii.Bool(false),
	})
	sgs := &[]awsec2.ISecurityGroup{p.SecurityGroup}
	// Each function connects as its own database role (never the master
	// user): DB_USER differs, the rest is shared.
	env, pubDB := map[string]*string{}, map[string]*string{}
	if props.Database != nil {
		env = props.Database.Environment(props.Database.Roles.Cleanup)
		pubDB = props.Database.Environment(props.Database.Roles.Publisher)
	}
	env["ENTORNO"] = jsii.String(props.Environment)
	busName := jsii.String("")
	if props.Bus != nil {
		busName = props.Bus.EventBusName()
	}
	pubEnv := map[string]*string{
		"BUS_NAME": busName, "EVENT_SOURCE": jsii.String(source),
		outboxapi.EnvEntryAttempts: jsii.String(fmt.Sprint(outboxapi.DefaultEntryAttempts)),
		outboxapi.EnvMaxClaims:     jsii.String(fmt.Sprint(outboxapi.DefaultMaxClaims)),
	}
	for k, v := range env {
		pubEnv[k] = v
	}
	for k, v := range pubDB {
		pubEnv[k] = v
	}

	p.Function = golambda.NewFunction(this, "Publicador", &golambda.Props{
		Entry:                        "lambdas/outbox-publicador",
		Builder:                      props.Builder,
		FunctionName:                 name("publicador"),
		Description:                  jsii.String("Transactional outbox: publishes pending rows of Aurora's outbox table to " + *busName),
		Timeout:                      awscdk.Duration_Seconds(jsii.Number(PublisherTimeoutSeconds)),
		MemorySize:                   256,
		Environment:                  pubEnv,
		EncryptionKey:                props.EncryptionKey,
		LogRetention:                 props.LogRetention,
		LogRemovalPolicy:             logRemoval,
		AlarmTopic:                   props.AlarmTopic,
		ReservedConcurrentExecutions: jsii.Number(reserved),
		Vpc:                          props.Vpc,
		VpcSubnets:                   props.Subnets,
		SecurityGroups:               sgs,
		// Attempts per event on the bus, counted per outbox row across
		// invocations (MF-ATTEMPTS): SDK x entry sends x claims = 12.
		Dependencies: []golambda.Dependency{{
			Name:        "events:PutEvents (outbox -> bus)",
			AttemptsEnv: []string{golambda.EnvSDKMaxAttempts, outboxapi.EnvEntryAttempts, outboxapi.EnvMaxClaims},
			PerWorkItem: true,
		}},
	})
	// No asynchronous retry of a failed invocation: the next minute's
	// invocation is the retry, and the overlap already covers the gap.
	p.Function.Function.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{
		RetryAttempts: jsii.Number(0),
		MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(60)),
	})
	p.Cleanup = golambda.NewFunction(this, "Limpieza", &golambda.Props{
		Entry:                        "lambdas/outbox-limpieza",
		Builder:                      props.Builder,
		FunctionName:                 name("limpieza"),
		Description:                  jsii.String("Transactional outbox: deletes rows published more than 7 days ago, in batches"),
		Timeout:                      awscdk.Duration_Seconds(jsii.Number(CleanupTimeoutSeconds)),
		MemorySize:                   256,
		Environment:                  env,
		EncryptionKey:                props.EncryptionKey,
		LogRetention:                 props.LogRetention,
		LogRemovalPolicy:             logRemoval,
		AlarmTopic:                   props.AlarmTopic,
		ReservedConcurrentExecutions: jsii.Number(1),
		Vpc:                          props.Vpc,
		VpcSubnets:                   props.Subnets,
		SecurityGroups:               sgs,
	})

	// Least privilege: PutEvents on this bus only; connect through the
	// proxy as one user; network to the proxy port and the endpoint only.
	if props.Bus != nil {
		props.Bus.GrantPutEventsTo(p.Function.Role, nil)
	}
	if props.Database != nil {
		props.Database.GrantConnect(p.Function.Role, props.Database.Roles.Publisher)
		props.Database.GrantConnect(p.Cleanup.Role, props.Database.Roles.Cleanup)
		props.Database.AllowFrom(p.SecurityGroup, "outbox functions")
	}
	if props.EventsEndpoint != nil {
		// The endpoint's own policy (constructs/network) limits it to
		// PutEvents on the bus by this account's principals.
		// Opened from this side: with the endpoint in another stack, the
		// CDK then places both rules in this stack (no dependency cycle).
		p.SecurityGroup.Connections().AllowTo(props.EventsEndpoint, awsec2.Port_Tcp(jsii.Number(443)), jsii.String("outbox publisher PutEvents"))
	}

	// The schedules' roles are ours so the acknowledgement of the ":*"
	// the CDK adds to lambda:InvokeFunction sits next to them.
	var acknowledge []func()
	schedulerRole := func(id string, fn *golambda.Function) awsiam.Role {
		role := awsiam.NewRole(this, jsii.String(id), &awsiam.RoleProps{
			AssumedBy: awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), &awsiam.ServicePrincipalOpts{
				Conditions: &map[string]interface{}{
					"StringEquals": map[string]interface{}{"aws:SourceAccount": awscdk.Stack_Of(this).Account()},
				},
			}),
			Description: jsii.String("EventBridge Scheduler: invokes " + fn.Entry),
		})
		// Acknowledged once the schedule has granted (the policy is created
		// by the grant, and suppressions only reach existing children).
		acknowledge = append(acknowledge, func() {
			fnID := *awscdk.Stack_Of(this).GetLogicalId(fn.Function.Node().DefaultChild().(awscdk.CfnElement))
			cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
				Id:        jsii.String("AwsSolutions-IAM5"),
				Reason:    jsii.String("lambda:InvokeFunction on this one function; the ':*' the CDK adds covers its versions and aliases, no other function."),
				AppliesTo: &[]interface{}{jsii.String("Resource::<" + fnID + ".Arn>:*")},
			}}, jsii.Bool(true))
		})
		return role
	}

	// Every minute (overlapping invocations, see outboxapi); no retry
	// (the next minute's invocation is the retry) and a short event age so
	// a backlog of invocations never piles up.
	p.PublishSchedule = awsscheduler.NewSchedule(this, jsii.String("CadaMinuto"), &awsscheduler.ScheduleProps{
		Schedule:    awsscheduler.ScheduleExpression_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		Description: jsii.String("Runs the outbox publisher's 1 s polling loop every minute"),
		Target: awsschedulertargets.NewLambdaInvoke(p.Function.Function, &awsschedulertargets.ScheduleTargetBaseProps{
			Role:          schedulerRole("CadaMinutoRole", p.Function),
			RetryAttempts: jsii.Number(0),
			MaxEventAge:   awscdk.Duration_Minutes(jsii.Number(1)),
		}),
	})
	p.CleanupSchedule = awsscheduler.NewSchedule(this, jsii.String("Diaria"), &awsscheduler.ScheduleProps{
		Schedule: awsscheduler.ScheduleExpression_Cron(&awsscheduler.CronOptionsWithTimezone{
			Hour: jsii.String("4"), Minute: jsii.String("15"),
			TimeZone: awscdk.TimeZone_EUROPE_MADRID(),
		}),
		Description: jsii.String("Deletes outbox rows published more than 7 days ago (quiet hours)"),
		Target: awsschedulertargets.NewLambdaInvoke(p.Cleanup.Function, &awsschedulertargets.ScheduleTargetBaseProps{
			Role:          schedulerRole("DiariaRole", p.Cleanup),
			RetryAttempts: jsii.Number(2),
			MaxEventAge:   awscdk.Duration_Hours(jsii.Number(1)),
		}),
	})

	for _, ack := range acknowledge {
		ack()
	}

	pending := props.PendingThreshold
	if pending == 0 {
		pending = DefaultPendingThreshold
	}
	oldest := props.OldestAgeThresholdSeconds
	if oldest == 0 {
		oldest = DefaultOldestAgeThreshold
	}
	p.PendingAlarm = alarm.New(this, "PendientesAlarm", &alarm.Props{
		Metric:            p.MetricPending(nil),
		Topic:             props.AlarmTopic,
		Description:       fmt.Sprintf("Outbox (%s): more than %.0f events waiting to be published for 2 minutes. Publisher too slow or failing; see its logs and Errors alarm.", props.Environment, pending),
		Threshold:         pending,
		EvaluationPeriods: 2,
		// The age alarm below catches a silent publisher.
		MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	p.OldestAlarm = alarm.New(this, "AntiguedadAlarm", &alarm.Props{
		Metric:            p.MetricOldestPendingAge(nil),
		Topic:             props.AlarmTopic,
		Description:       fmt.Sprintf("Outbox (%s): the oldest unpublished event is older than %.0f s, or the publisher stopped reporting. Orders are not reaching bus-mercadofresco.", props.Environment, oldest),
		Threshold:         oldest,
		EvaluationPeriods: 2,
		// Breaching: the gauges come from the publisher itself, so silence
		// means the publisher is not running (an outbox makes that failure
		// silent and global otherwise).
		MissingData: awscloudwatch.TreatMissingData_BREACHING,
	})
	p.ParkedAlarm = alarm.New(this, "AparcadosAlarm", &alarm.Props{
		Metric:      p.MetricParked(nil),
		Topic:       props.AlarmTopic,
		Description: fmt.Sprintf("Outbox (%s): events parked as poison (rejected by EventBridge or too large). They will not be published until an operator fixes and unparks them: SELECT id, tipo, ultimo_error FROM outbox WHERE aparcado_en IS NOT NULL.", props.Environment),
		Threshold:   0,
		MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING, // the age alarm catches a silent publisher
	})
	return p
}

func (p *Publisher) metric(name string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	props := &awscloudwatch.MetricProps{
		Namespace:     jsii.String(metricsapi.Namespace),
		MetricName:    jsii.String(name),
		DimensionsMap: &map[string]*string{metricsapi.DimensionEnvironment: jsii.String(p.environment)},
		Period:        awscdk.Duration_Minutes(jsii.Number(1)),
		Statistic:     jsii.String("Maximum"),
	}
	if opts != nil {
		if opts.Period != nil {
			props.Period = opts.Period
		}
		if opts.Statistic != nil {
			props.Statistic = opts.Statistic
		}
		props.Label = opts.Label
	}
	return awscloudwatch.NewMetric(props)
}

// MetricPending is the number of unpublished, unparked outbox rows.
func (p *Publisher) MetricPending(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return p.metric(outboxapi.MetricPending, opts)
}

// MetricOldestPendingAge is the age in seconds of the oldest pending row.
func (p *Publisher) MetricOldestPendingAge(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return p.metric(outboxapi.MetricOldestAge, opts)
}

// MetricParked is the number of parked (poison) rows.
func (p *Publisher) MetricParked(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return p.metric(outboxapi.MetricParked, opts)
}

// GrantInvoke lets grantee run the publisher on demand (e.g. a runbook).
func (p *Publisher) GrantInvoke(grantee awsiam.IGrantable) awsiam.Grant {
	return p.Function.GrantInvoke(grantee)
}
