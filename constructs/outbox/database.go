// Package outbox is the transactional outbox on Aurora PostgreSQL: the
// database (NewDatabase: Aurora Serverless v2 encrypted with the data key,
// TLS only, a rotated master secret, an RDS Proxy with IAM authentication
// end to end), the schema migration that creates the database roles and
// applies the schema once per deploy (NewMigration, a custom resource), and
// the publisher that moves committed rows to the bus about every second,
// with its daily cleanup and alarms (NewPublisher). Every function connects
// as a database role of its own, never as the master user.
// docs/design.md#outbox, #outbox-lag, #database-roles.
package outbox

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/dependency"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsrds"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/synthesized"
)

// The database's figures: its name, master user, Serverless v2 capacity
// in ACUs (0.5 to 8: 1,669 max_connections), the share of Aurora's
// max_connections the proxy may open whatever the Lambda concurrency (the
// rest stays for migrations, operators and the rotation; MF-DB-CONNECTIONS
// holds the clients to it, docs/design.md#aurora-connections), and the
// backup retention when BackupRetention is nil.
const (
	DefaultDatabaseName          = "tienda"
	DefaultMasterUser            = "mf_admin"
	DefaultMinCapacity           = 0.5
	DefaultMaxCapacity           = 8
	DefaultMaxConnectionsPercent = 50
	DefaultBackupDays            = 7
)

// DatabaseProps configures NewDatabase. Vpc, ClusterIdentifier and the
// Context's DataKey (storage, credentials, exported logs, Performance
// Insights) are required; the Context's Alerts, when set, receives the
// database's alarms; the rest defaults safely.
type DatabaseProps struct {
	core.Context
	// Vpc and Subnets place the cluster and the proxy (normally
	// Network.Vpc and Network.DataSubnets()).
	Vpc     awsec2.IVpc
	Subnets *awsec2.SubnetSelection
	// RotationSubnets place the secret rotation function; it needs the
	// Secrets Manager endpoint (RotationEndpoint). Defaults to Subnets.
	RotationSubnets  *awsec2.SubnetSelection
	RotationEndpoint awsec2.IInterfaceVpcEndpoint
	// ClusterIdentifier is the physical name, e.g.
	// env.PhysicalName("aurora-mf-escritor"). Required.
	ClusterIdentifier *string
	// ProxyName defaults to ClusterIdentifier + "-proxy".
	ProxyName *string
	// BackupRetention defaults to 7 days.
	BackupRetention awscdk.Duration
	// OutsideConnections are the most connections writers outside this app
	// open through the proxy, by name, for MF-DB-CONNECTIONS.
	OutsideConnections map[string]int
}

// Database is an Aurora PostgreSQL Serverless v2 cluster (a writer only:
// Aurora storage is still replicated 6 ways over 3 AZs), created per
// environment (this construct does not import an existing one), with
// storage encrypted by the data key, a generated master secret rotated
// every 30 days and kept as long as the cluster, TLS forced (rds.force_ssl),
// IAM authentication, no bind parameters in the logs, and an RDS Proxy in
// front that requires TLS and uses IAM authentication end to end (clients
// to the proxy and the proxy to the database), for the database roles of
// lambdaapi.DefaultDBRoles only: the proxy holds no secret and cannot log
// in as the master user. It caps the connections it opens to
// DefaultMaxConnectionsPercent of Aurora's.
type Database struct {
	constructs.Construct
	// Cluster is the Aurora cluster.
	Cluster awsrds.DatabaseCluster
	// Proxy is the RDS Proxy every function connects to.
	Proxy awsrds.DatabaseProxy
	// Secret holds the master credentials: read by the rotation and by the
	// schema migration (Migration) to create the roles, never by the
	// proxy or a function on the hot path.
	Secret awssecretsmanager.ISecret
	// DatabaseName is the database the outbox lives in.
	DatabaseName string
	// MasterUser is the cluster's master user name; no function connects
	// as it.
	MasterUser string
	// Roles are the database roles of the functions (docs/design.md#database-roles).
	Roles lambdaapi.DBRoles
	// ConnectionsAlarm and CPUAlarm exist when the Context's Alerts was set.
	ConnectionsAlarm, CPUAlarm awscloudwatch.Alarm
	// RotationSecurityGroup is the secret rotation function's security
	// group: out to the cluster and the Secrets Manager endpoint only.
	RotationSecurityGroup awsec2.ISecurityGroup
	// RotationLogs is the rotation function's log group.
	RotationLogs awslogs.LogGroup
	// RotationFailures receives Secrets Manager's RotationFailed events for
	// the database secret; its alarm fires on the first one.
	RotationFailures *queues.DeadLetterQueue
	// RotationFailuresDLQ keeps what RotationFailures could not: an event
	// EventBridge could not deliver to it (the rule target's DLQ), and an
	// event received RotationFailuresMaxReceives times there without being
	// deleted (its redrive). Its alarm fires on the first one too.
	RotationFailuresDLQ *queues.DeadLetterQueue
}

// Rotation-failure queues: the holding queue keeps an event 7 days (it
// alarms on the first), its DLQ 14 (a standard DLQ must outlive its
// source: a moved message keeps its enqueue time); a person reading the
// holding queue in the console receives each event, so 10 looks move it to
// the DLQ, where it alarms again and is kept.
const (
	rotationFailuresRetentionDays = 7
	RotationFailuresMaxReceives   = 10
)

// NewDatabase creates the cluster and its proxy. Every problem of props is
// reported at synth; the construct is still whole (in an imported
// placeholder VPC when Vpc is missing), so dependents show the errors
// instead of crashing on a nil field.
func NewDatabase(scope constructs.Construct, id string, props *DatabaseProps) *Database {
	this, v, props := core.Begin(scope, id, "outbox.Database", props)
	d := &Database{Construct: this, DatabaseName: DefaultDatabaseName, MasterUser: DefaultMasterUser, Roles: lambdaapi.DefaultDBRoles()}
	vpc, subnets := core.RequireVpc(v, this, props.Vpc, props.Subnets, "the cluster and its proxy live in its data subnets")
	clusterID := "missing-cluster-identifier"
	if !v.If(props.ClusterIdentifier == nil || *props.ClusterIdentifier == "", "ClusterIdentifier is required") {
		clusterID = *props.ClusterIdentifier
	}
	deletionProtection := *props.Protected()
	props.Require(v, core.DataKey)
	key := props.DataKey
	backup := cmp.Or(props.BackupRetention, awscdk.Duration_Days(jsii.Number(DefaultBackupDays)))
	clusterRemoval := observability.RemovalFor(props.RemovalPolicy, observability.Snapshottable)
	proxyName := *cmp.Or(props.ProxyName, jsii.String(clusterID+"-proxy"))
	engine := awsrds.DatabaseClusterEngine_AuroraPostgres(&awsrds.AuroraPostgresClusterEngineProps{
		Version: awsrds.AuroraPostgresEngineVersion_VER_16_6(),
	})
	params := awsrds.NewParameterGroup(this, jsii.String("Parametros"), &awsrds.ParameterGroupProps{
		Engine:      engine,
		Description: jsii.String("MercadoFresco outbox: TLS only, slow statements logged without their bind parameters"),
		Parameters: &map[string]*string{
			"rds.force_ssl":              jsii.String("1"),
			"log_min_duration_statement": jsii.String("1000"),
			// A slow statement's log line would carry its bind parameters
			// (customer names, addresses, order lines): log none of them,
			// neither for slow statements nor for failed ones.
			"log_parameter_max_length":          jsii.String("0"),
			"log_parameter_max_length_on_error": jsii.String("0"),
			// Kill sessions idle inside a transaction: a crashed client must
			// not hold row locks (or hold back VACUUM on the outbox) for long.
			"idle_in_transaction_session_timeout": jsii.String("60000"),
		},
	})
	// The exported PostgreSQL log group, created here (encrypted, with a
	// retention) instead of through CloudwatchLogsRetention, which deploys
	// a custom-resource Lambda with a managed policy for the same result.
	pgLogs := props.LogGroup(this, "PostgresqlLogs", jsii.String("/aws/rds/cluster/"+clusterID+"/postgresql"))
	// Groups without egress but what their resources call, which the
	// connections below add (the CDK's own groups would allow all).
	group := func(id, description string) awsec2.SecurityGroup {
		return awsec2.NewSecurityGroup(this, jsii.String(id), &awsec2.SecurityGroupProps{Vpc: vpc, Description: jsii.String(description), AllowAllOutbound: jsii.Bool(false)})
	}
	d.Cluster = awsrds.NewDatabaseCluster(this, jsii.String("Cluster"), &awsrds.DatabaseClusterProps{
		Engine:            engine,
		ClusterIdentifier: jsii.String(clusterID),
		Writer: awsrds.ClusterInstance_ServerlessV2(jsii.String("Escritor"), &awsrds.ServerlessV2ClusterInstanceProps{
			PubliclyAccessible:              jsii.Bool(false),
			AutoMinorVersionUpgrade:         jsii.Bool(true),
			EnablePerformanceInsights:       jsii.Bool(true),
			PerformanceInsightEncryptionKey: key,
			ScaleWithWriter:                 jsii.Bool(true),
		}),
		ServerlessV2MinCapacity: jsii.Number(DefaultMinCapacity),
		ServerlessV2MaxCapacity: jsii.Number(DefaultMaxCapacity),
		Vpc:                     vpc,
		VpcSubnets:              subnets,
		SecurityGroups:          &[]awsec2.ISecurityGroup{group("ClusterSecurityGroup", clusterID+": calls nothing; admits its proxy, its secret rotation and the schema migration")},
		Credentials: awsrds.Credentials_FromGeneratedSecret(jsii.String(DefaultMasterUser), &awsrds.CredentialsBaseOptions{
			EncryptionKey: core.SecretKey(this, key),
			SecretName:    jsii.String(clusterID + "-credenciales"),
		}),
		DefaultDatabaseName:        jsii.String(d.DatabaseName),
		StorageEncrypted:           jsii.Bool(true),
		StorageEncryptionKey:       key,
		IamAuthentication:          jsii.Bool(true),
		ParameterGroup:             params,
		Backup:                     &awsrds.BackupProps{Retention: backup, PreferredWindow: jsii.String("02:00-03:00")},
		PreferredMaintenanceWindow: jsii.String("sun:03:30-sun:04:30"),
		CloudwatchLogsExports:      jsii.Strings("postgresql"),
		// Enhanced monitoring (operating-system metrics every 60 s: memory,
		// swap, the process list) tells a connection storm from a slow
		// query; the CDK creates the monitoring role.
		MonitoringInterval: awscdk.Duration_Seconds(jsii.Number(60)),
		CopyTagsToSnapshot: jsii.Bool(true),
		DeletionProtection: jsii.Bool(deletionProtection),
		RemovalPolicy:      clusterRemoval,
	})
	d.Cluster.Node().AddDependency(pgLogs)
	d.Secret = d.Cluster.Secret()
	// The secret is the only way in as the master user: it lives as long as
	// the cluster (the CDK's default deletes it with the stack, even when
	// the cluster is retained or snapshotted).
	secret, ok := d.Cluster.Node().TryFindChild(jsii.String("Secret")).(awscdk.IResource)
	if !v.If(!ok, "cannot find the cluster's generated secret to retain it with the cluster") {
		secret.ApplyRemovalPolicy(observability.RemovalFor(props.RemovalPolicy, observability.Data))
	}
	rotationSubnets := props.RotationSubnets
	if rotationSubnets == nil || props.Vpc == nil {
		rotationSubnets = subnets
	}
	d.RotationSecurityGroup = group("RotationSecurityGroup", clusterID+" secret rotation: to the cluster and the Secrets Manager endpoint only")
	rotation := d.Cluster.AddRotationSingleUser(&awsrds.RotationSingleUserOptions{
		AutomaticallyAfter: awscdk.Duration_Days(jsii.Number(30)),
		VpcSubnets:         rotationSubnets,
		Endpoint:           props.RotationEndpoint,
		SecurityGroup:      d.RotationSecurityGroup,
	})
	// The rotation function (the application's, named after the last 64
	// characters of the rotation's unique id, as the CDK names it) logs to
	// a group of this template, with the context's retention, key and
	// removal policy: Lambda's own would have neither.
	fnName := *awscdk.Names_UniqueId(rotation)
	fnName = fnName[max(0, len(fnName)-64):]
	d.RotationLogs = props.LogGroup(this, "RotationLogs", jsii.String("/aws/lambda/"+fnName))
	rotation.Node().AddDependency(d.RotationLogs)
	// The rotation function runs in isolated subnets: it reaches Secrets
	// Manager only through the endpoint, which must admit it (the CDK opens
	// the database to it, not the endpoint).
	if !v.If(props.RotationEndpoint == nil, "RotationEndpoint is required: the rotation function has no other way to Secrets Manager from the isolated subnets") {
		dependency.AllowHTTPS(d.RotationSecurityGroup, props.RotationEndpoint, "secret rotation of "+clusterID)
	}
	// End-to-end IAM authentication: clients present IAM tokens to the
	// proxy, and the proxy logs in to the database with IAM tokens of its
	// own role, as the same user. So the proxy needs no secret, and
	// rds-db:connect on the cluster for the function roles only (never the
	// master user) is all it can do. The roles have rds_iam (CreateRoles).
	stack := awscdk.Stack_Of(this)
	proxyRole := awsiam.NewRole(this, jsii.String("ProxyRole"), &awsiam.RoleProps{
		// RDS Proxies of this account only (aws:SourceAccount, aws:SourceArn).
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("rds.amazonaws.com"), &awsiam.ServicePrincipalOpts{Conditions: &map[string]interface{}{
			"StringEquals": map[string]interface{}{"aws:SourceAccount": stack.Account()},
			"ArnLike": map[string]interface{}{"aws:SourceArn": stack.FormatArn(&awscdk.ArnComponents{
				Service: jsii.String("rds"), Resource: jsii.String("db-proxy"), ResourceName: jsii.String("*"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
			})},
		}}),
		Description: jsii.String("RDS Proxy of " + clusterID + ": connects to the database with IAM as the function roles"),
	})
	var clusterUsers []*string
	for _, r := range d.Roles.All() {
		clusterUsers = append(clusterUsers, stack.FormatArn(&awscdk.ArnComponents{
			Service:      jsii.String("rds-db"),
			Resource:     jsii.String("dbuser"),
			ResourceName: jsii.String(*d.Cluster.ClusterResourceIdentifier() + "/" + r),
			ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
		}))
	}
	proxyRole.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("rds-db:connect"),
		Resources: &clusterUsers,
	}))
	d.Proxy = d.Cluster.AddProxy(jsii.String("Proxy"), &awsrds.DatabaseProxyOptions{
		Vpc:                       vpc,
		VpcSubnets:                subnets,
		DbProxyName:               jsii.String(proxyName),
		SecurityGroups:            &[]awsec2.ISecurityGroup{group("ProxySecurityGroup", proxyName+": to the cluster only (IAM authentication, no secret to read)")},
		Role:                      proxyRole,
		DefaultAuthScheme:         awsrds.DefaultAuthScheme_IAM_AUTH,
		IamAuth:                   jsii.Bool(true),
		RequireTLS:                jsii.Bool(true),
		MaxConnectionsPercent:     jsii.Number(DefaultMaxConnectionsPercent),
		MaxIdleConnectionsPercent: jsii.Number(DefaultMaxConnectionsPercent / 2),
		BorrowTimeout:             awscdk.Duration_Seconds(jsii.Number(30)),
		IdleClientTimeout:         awscdk.Duration_Minutes(jsii.Number(15)),
	})
	if cfn, ok := d.Proxy.Node().DefaultChild().(awscdk.CfnResource); ok && len(props.OutsideConnections) > 0 {
		cfn.AddMetadata(jsii.String(synthesized.MetadataOutsideConnections), props.OutsideConnections)
	}

	core.AcknowledgeNag(d.Cluster, true, "AwsSolutions-RDS11", "The default port 5432 is kept: only the proxy's and the rotation function's security groups may reach it, and a non-standard port adds no protection against anyone who can already reach the isolated subnets.")
	core.AcknowledgeNag(d.Cluster, true, "AwsSolutions-IAM4", "The enhanced-monitoring role the CDK creates carries AmazonRDSEnhancedMonitoringRole, AWS's policy for exactly this role: it lets RDS write the OS metrics to the RDSOSMetrics log group and nothing else.",
		"Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonRDSEnhancedMonitoringRole")
	if !deletionProtection {
		core.AcknowledgeNag(d.Cluster, true, "AwsSolutions-RDS10", "Deletion protection comes from config.Environment.DeletionProtection: on in prod, off in dev/staging, which are rebuilt from scratch.")
	}
	if props.Alerts != nil {
		d.addAlarms(props.Alerts)
		d.watchRotation(props)
	}
	d.contribute(props.Dashboard, clusterID, proxyName)
	return d
}

// watchRotation keeps every failed rotation of the database secret in a
// queue whose alarm fires on the first one: Secrets Manager reports a
// failure only as an event (through CloudTrail), and a secret whose rotation
// keeps failing is a credential nobody can renew.
func (d *Database) watchRotation(props *DatabaseProps) {
	// Named, so the DLQ can admit it by ARN without a reference cycle.
	held := "mercadofresco-rotacion-aurora-" + props.Context.Environment()
	d.RotationFailures = queues.NewDeadLetterQueue(d.Construct, "RotacionFallida", &queues.DeadLetterQueueProps{
		Context:         props.Context,
		QueueName:       jsii.String(held),
		Source:          "Secrets Manager RotationFailed events of the database secret",
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(rotationFailuresRetentionDays)),
	})
	d.RotationFailuresDLQ = queues.NewDeadLetterQueue(d.Construct, "RotacionFallidaDLQ", &queues.DeadLetterQueueProps{
		Context:   props.Context,
		QueueName: jsii.String(held + "-fallidos"),
		Source:    "RotationFailed events EventBridge could not deliver to RotacionFallida, or received there 10 times without being deleted",
	})
	d.RotationFailures.Queue.Node().DefaultChild().(awssqs.CfnQueue).SetRedrivePolicy(map[string]any{
		"deadLetterTargetArn": d.RotationFailuresDLQ.Queue.QueueArn(),
		"maxReceiveCount":     RotationFailuresMaxReceives,
	})
	// The DLQ admits this one source queue (NewDeadLetterQueue denies all).
	d.RotationFailuresDLQ.Queue.Node().DefaultChild().(awssqs.CfnQueue).SetRedriveAllowPolicy(map[string]any{
		"redrivePermission": "byQueue",
		"sourceQueueArns":   []any{awscdk.Stack_Of(d.Construct).FormatArn(&awscdk.ArnComponents{Service: jsii.String("sqs"), Resource: jsii.String(held)})},
	})
	rule := awsevents.NewRule(d.Construct, jsii.String("RotacionFallidaRegla"), &awsevents.RuleProps{
		Description: jsii.String("Failed rotations of the Aurora secret"),
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings("aws.secretsmanager"),
			DetailType: jsii.Strings("AWS Service Event via CloudTrail"),
			Detail: &map[string]interface{}{
				"eventName":           []any{"RotationFailed"},
				"additionalEventData": map[string]any{"SecretId": []any{d.Secret.SecretArn()}},
			},
		},
	})
	// A retry policy like every rule target's (MF-ATTEMPTS: EventBridge's
	// default of 185 retries is no policy); a day of retries for a queue.
	rule.AddTarget(awseventstargets.NewSqsQueue(d.RotationFailures.Queue, &awseventstargets.SqsQueueProps{
		RetryAttempts:   jsii.Number(10),
		MaxEventAge:     awscdk.Duration_Hours(jsii.Number(24)),
		DeadLetterQueue: d.RotationFailuresDLQ.Queue,
	}))
	queues.ForQueue(d.RotationFailures.Queue).AdmitRule(rule)
	queues.ForQueue(d.RotationFailuresDLQ.Queue).AdmitRule(rule)
}

func (d *Database) addAlarms(topic awssns.ITopic) {
	// The proxy's connections to Aurora close to its cap means clients are
	// queueing (BorrowTimeout) and the next step is connection errors.
	conns := observability.Metric("AWS/RDS", "DatabaseConnectionsCurrentlyBorrowed", map[string]*string{"ProxyName": d.Proxy.DbProxyName()}, "Maximum", "", awscdk.Duration_Minutes(jsii.Number(1)))
	d.ConnectionsAlarm = observability.NewAlarm(d.Construct, "ConexionesProxyAlarm", &observability.AlarmProps{
		Metric:            conns,
		Topic:             topic,
		Description:       "RDS Proxy: more than 100 connections to Aurora borrowed for 5 minutes; the outbox functions and the shop's writers declare fewer (MF-DB-CONNECTIONS), so clients are piling up and will soon wait on BorrowTimeout.",
		Threshold:         100,
		EvaluationPeriods: 5,
		MissingData:       awscloudwatch.TreatMissingData_NOT_BREACHING, // an idle proxy reports nothing
	})
	// Serverless v2 scales up to MaxCapacity; CPU above 80% for 10 minutes
	// means it is at its ceiling (or a query went wrong) and the shop's
	// order inserts are about to slow down.
	d.CPUAlarm = observability.NewAlarm(d.Construct, "CPUAlarm", &observability.AlarmProps{
		Metric:            d.Cluster.MetricCPUUtilization(observability.Per5Min("Average")),
		Topic:             topic,
		Description:       "Aurora (outbox and orders): CPU above 80% for 10 minutes. Check Performance Insights for the top statements and the ServerlessDatabaseCapacity against MaxCapacity.",
		Threshold:         80,
		EvaluationPeriods: 2,
		// Periods without data (a paused metric stream) are not a CPU problem;
		// the outbox age alarm catches a database that stopped working.
		MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
}

// GrantConnect lets grantee open connections through the proxy as the
// database role user (one of Roles) with an IAM token: rds-db:connect on
// this proxy and that user only. Any other user (the master user above
// all) is a synthesis error.
func (d *Database) GrantConnect(grantee awsiam.IGrantable, user string) awsiam.Grant {
	core.Check(d.Construct, "outbox.Database").If(!slices.Contains(d.Roles.All(), user), "GrantConnect as %q: only the roles %v may connect through the proxy", user, d.Roles.All())
	return d.Proxy.GrantConnect(grantee, jsii.String(user))
}

// AllowFrom opens the proxy's port to peer (and peer's egress to it).
func (d *Database) AllowFrom(peer awsec2.IConnectable, description string) {
	d.Proxy.Connections().AllowFrom(peer, awsec2.Port_Tcp(jsii.Number(5432)), jsii.String(description))
}

// Environment returns the variables postgres.FromEnv reads, for a
// function connecting as the database role user with a pool of at most
// poolMax connections per instance.
func (d *Database) Environment(user string, poolMax int) map[string]*string {
	return map[string]*string{
		lambdaapi.EnvDBMaxConns: jsii.String(strconv.Itoa(poolMax)),
		lambdaapi.EnvDBHost:     d.Proxy.Endpoint(),
		lambdaapi.EnvDBPort:     jsii.String(strconv.Itoa(lambdaapi.DefaultDBPort)),
		lambdaapi.EnvDBName:     jsii.String(d.DatabaseName),
		lambdaapi.EnvDBUser:     jsii.String(user),
	}
}
