package outbox_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/golambda/gobuild"
	"github.com/mercadofresco/integration/constructs/network"
	"github.com/mercadofresco/integration/constructs/outbox"
	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

func TestMain(m *testing.M) { cdktest.Main(m, func() { _ = builder.Close() }) }

// builder is shared so the two functions compile once for all tests.
var builder = &gobuild.Builder{}

type fixture struct {
	app       awscdk.App
	stack     awscdk.Stack
	network   *network.Network
	database  *outbox.Database
	migration *outbox.Migration
	publisher *outbox.Publisher
}

// newFixture builds the outbox as stacks/outbox.go does, with the
// platform's key, topic and bus in a stack of their own (cross-stack
// references, as in the app), and cdk-nag AwsSolutions on the app.
func newFixture(t *testing.T, deletionProtection bool) *fixture {
	return newFixtureWith(t, deletionProtection, awscdk.RemovalPolicy_DESTROY)
}

func newFixtureWith(t *testing.T, deletionProtection bool, removal awscdk.RemovalPolicy) *fixture {
	t.Helper()
	app := awscdk.NewApp(nil)
	env := &awscdk.Environment{Account: jsii.String("111111111111"), Region: jsii.String("eu-west-1")}
	plat := awscdk.NewStack(app, jsii.String("Plataforma"), &awscdk.StackProps{Env: env})
	key := awskms.NewKey(plat, jsii.String("DataKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	alerts := awssns.NewTopic(plat, jsii.String("Alerts"), &awssns.TopicProps{MasterKey: key, EnforceSSL: jsii.Bool(true)})
	bus := awsevents.NewEventBus(plat, jsii.String("Bus"), &awsevents.EventBusProps{EventBusName: jsii.String("bus-mercadofresco-dev")})

	// The VPC lives in a network stack of its own, as in the app.
	red := awscdk.NewStack(app, jsii.String("Red"), &awscdk.StackProps{Env: env})
	red.Node().SetContext(jsii.String("availability-zones:account=111111111111:region=eu-west-1"), jsii.Strings("eu-west-1a", "eu-west-1b"))
	stack := awscdk.NewStack(app, jsii.String("Outbox"), &awscdk.StackProps{Env: env})
	f := &fixture{app: app, stack: stack}
	f.network = network.New(red, "Red", &network.Props{MaxAzs: 2, Context: core.Context{DataKey: key, RemovalPolicy: removal}, EventBus: bus})
	f.database = outbox.NewDatabase(stack, "Aurora", &outbox.DatabaseProps{
		Context: core.Context{DataKey: key, Alerts: alerts, DeletionProtection: jsii.Bool(deletionProtection), RemovalPolicy: removal},
		Vpc:     f.network.Vpc, Subnets: f.network.DataSubnets(),
		RotationSubnets: f.network.AppSubnets(), RotationEndpoint: f.network.SecretsEndpoint,
		ClusterIdentifier: jsii.String("aurora-mf-escritor-dev"),
	})
	f.migration = outbox.NewMigration(stack, "Migraciones", &outbox.MigrationProps{
		Context:  core.Context{Builder: builder, DataKey: key, Alerts: alerts, RemovalPolicy: removal},
		Database: f.database, Vpc: f.network.Vpc, Subnets: f.network.AppSubnets(),
		SecretsEndpoint: f.network.SecretsEndpoint, FunctionName: jsii.String("mf-outbox-migraciones-dev"),
	})
	f.publisher = outbox.NewPublisher(stack, "Publicador", &outbox.PublisherProps{
		Context:  core.Context{EnvironmentName: "dev", Builder: builder, DataKey: key, Alerts: alerts, RemovalPolicy: removal},
		Database: f.database, Vpc: f.network.Vpc, Subnets: f.network.AppSubnets(),
		EventsEndpoint: f.network.EventsEndpoint, Bus: bus, ReservedConcurrency: 2,
		PublisherFunctionName: jsii.String("mf-outbox-publicador-dev"), CleanupFunctionName: jsii.String("mf-outbox-limpieza-dev"),
	})
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	return f
}

var (
	sharedOnce sync.Once
	shared     *fixture
	sharedTpl  assertions.Template
)

// fx is the default fixture, synthesised once (synthesis compiles and
// checks the whole construct tree, so it is the slow part).
func fx(t *testing.T) (*fixture, assertions.Template) {
	t.Helper()
	sharedOnce.Do(func() {
		shared = newFixture(t, false)
		sharedTpl = assertions.Template_FromStack(shared.stack, nil)
	})
	return shared, sharedTpl
}

func messages(stack awscdk.Stack, level string) []string {
	a := assertions.Annotations_FromStack(stack)
	var list []string
	raw := a.FindError(jsii.String("*"), assertions.Match_AnyValue())
	if level == "warning" {
		raw = a.FindWarning(jsii.String("*"), assertions.Match_AnyValue())
	}
	for _, m := range *raw {
		msg := fmt.Sprintf("%s: %v", *m.Id, m.Entry.Data)
		// App-level notices (feature flags, reference strength) are the
		// app's business; this test is about the constructs' resources.
		if level == "warning" && !strings.Contains(msg, "AwsSolutions-") {
			continue
		}
		list = append(list, msg)
	}
	return list
}

func TestCdkNagAwsSolutionsIsClean(t *testing.T) {
	f, _ := fx(t)
	for _, level := range []string{"error", "warning"} {
		for _, m := range messages(f.stack, level) {
			t.Errorf("%s %s", level, m)
		}
	}
}

// Regression: the rotation function runs in isolated subnets and could not
// reach Secrets Manager (the endpoint's security group admitted nothing).
func TestRotationFunctionReachesTheSecretsManagerEndpoint(t *testing.T) {
	f, tpl := fx(t)
	rotationSG := *f.stack.GetLogicalId(f.database.RotationSecurityGroup.Node().DefaultChild().(awscdk.CfnElement))
	found := false
	for _, r := range *tpl.FindResources(jsii.String("AWS::EC2::SecurityGroupIngress"), nil) {
		p, _ := (*r)["Properties"].(map[string]any)
		src, _ := json.Marshal(p["SourceSecurityGroupId"])
		dst, _ := json.Marshal(p["GroupId"])
		if strings.Contains(string(src), rotationSG) && strings.Contains(string(dst), "SecretsManagerSecurityGroup") && p["FromPort"] == float64(443) {
			found = true
		}
	}
	if !found {
		t.Fatal("no ingress rule admits the rotation function's security group to the Secrets Manager endpoint on 443")
	}
}

// A failed rotation is an event only: it lands in a queue whose alarm
// fires on the first message.
func TestRotationFailuresAreAlarmed(t *testing.T) {
	_, tpl := fx(t)
	tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
		"EventPattern": assertions.Match_ObjectLike(&map[string]any{
			"source": []any{"aws.secretsmanager"},
			"detail": assertions.Match_ObjectLike(&map[string]any{"eventName": []any{"RotationFailed"}}),
		}),
		"Targets": []any{assertions.Match_ObjectLike(&map[string]any{"Arn": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("RotacionFallida")), "Arn"}}})},
	})
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName": "ApproximateNumberOfMessagesVisible",
		"Dimensions": []any{map[string]any{"Name": "QueueName", "Value": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("RotacionFallida")), "QueueName"}}}},
	})
	// An undeliverable event, and one the holding queue cannot keep, are
	// not lost: the rule target and the queue both have a DLQ (alarmed).
	tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
		"Targets": []any{assertions.Match_ObjectLike(&map[string]any{
			"DeadLetterConfig": map[string]any{"Arn": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("RotacionFallidaDLQ")), "Arn"}}},
		})},
	})
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"RedrivePolicy": map[string]any{
			"deadLetterTargetArn": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("RotacionFallidaDLQ")), "Arn"}},
			"maxReceiveCount":     outbox.RotationFailuresMaxReceives,
		},
	})
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName": "ApproximateNumberOfMessagesVisible",
		"Dimensions": []any{map[string]any{"Name": "QueueName", "Value": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("RotacionFallidaDLQ")), "QueueName"}}}},
	})
}

func TestAuroraServerlessV2EncryptedTLSOnlyWithRotatedSecret(t *testing.T) {
	_, tpl := fx(t)
	tpl.HasResourceProperties(jsii.String("AWS::RDS::DBCluster"), map[string]any{
		"DBClusterIdentifier":              "aurora-mf-escritor-dev",
		"Engine":                           "aurora-postgresql",
		"StorageEncrypted":                 true,
		"KmsKeyId":                         assertions.Match_AnyValue(),
		"EnableIAMDatabaseAuthentication":  true,
		"ServerlessV2ScalingConfiguration": map[string]any{"MinCapacity": 0.5, "MaxCapacity": 8},
		"EnableCloudwatchLogsExports":      []any{"postgresql"},
		"BackupRetentionPeriod":            7,
		"DeletionProtection":               false,
	})
	tpl.HasResourceProperties(jsii.String("AWS::RDS::DBInstance"), map[string]any{
		"DBInstanceClass": "db.serverless", "PubliclyAccessible": false,
	})
	tpl.HasResourceProperties(jsii.String("AWS::RDS::DBClusterParameterGroup"), map[string]any{
		"Parameters": assertions.Match_ObjectLike(&map[string]any{"rds.force_ssl": "1"}),
	})
	tpl.HasResourceProperties(jsii.String("AWS::SecretsManager::Secret"), map[string]any{
		"Name": "aurora-mf-escritor-dev-credenciales", "KmsKeyId": assertions.Match_AnyValue(),
	})
	tpl.HasResourceProperties(jsii.String("AWS::SecretsManager::RotationSchedule"), map[string]any{
		"RotationRules": map[string]any{"ScheduleExpression": "rate(30 days)"},
	})
	tpl.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{
		"LogGroupName": "/aws/rds/cluster/aurora-mf-escritor-dev/postgresql", "KmsKeyId": assertions.Match_AnyValue(),
	})
}

func TestProxyRequiresTLSAndIAMAndCapsConnections(t *testing.T) {
	_, tpl := fx(t)
	// End-to-end IAM: no secret on the proxy, so it cannot log in as the
	// master user (or anyone without rds_iam).
	tpl.HasResourceProperties(jsii.String("AWS::RDS::DBProxy"), map[string]any{
		"RequireTLS":        true,
		"EngineFamily":      "POSTGRESQL",
		"DefaultAuthScheme": "IAM_AUTH",
		"Auth":              assertions.Match_Absent(),
	})
	tpl.HasResourceProperties(jsii.String("AWS::RDS::DBProxyTargetGroup"), map[string]any{
		"ConnectionPoolConfigurationInfo": assertions.Match_ObjectLike(&map[string]any{"MaxConnectionsPercent": 50}),
	})
}

func TestPublisherRunsInTheVpcEveryMinuteWithBoundedConcurrency(t *testing.T) {
	_, tpl := fx(t)
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"FunctionName":                 "mf-outbox-publicador-dev",
		"Timeout":                      outbox.PublisherTimeoutSeconds,
		"ReservedConcurrentExecutions": 2,
		"VpcConfig":                    assertions.Match_ObjectLike(&map[string]any{"SubnetIds": assertions.Match_AnyValue()}),
		"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
			"DB_HOST": assertions.Match_AnyValue(), "DB_USER": "mf_publicador", "DB_NAME": "tienda", "DB_MAX_CONNS": "2",
			"BUS_NAME": assertions.Match_AnyValue(), "EVENT_SOURCE": "mercadofresco.tienda", "ENTORNO": "dev",
			// 2 SDK x 2 entry sends x 3 claims = 12 attempts per event.
			"AWS_MAX_ATTEMPTS": "2", "OUTBOX_ENTRY_ATTEMPTS": "2", "OUTBOX_MAX_CLAIMS": "3",
		})},
	})
	// Invocations overlap (80 s of polling every 60 s), a failed one is not
	// retried asynchronously (the next minute's is the retry).
	if outbox.PublisherTimeoutSeconds != 100 {
		t.Fatalf("publisher timeout %d s, want 100 (80 s polling + 20 s margin)", outbox.PublisherTimeoutSeconds)
	}
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventInvokeConfig"), map[string]any{
		"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60,
	})
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"FunctionName":                 "mf-outbox-limpieza-dev",
		"ReservedConcurrentExecutions": 1,
		"Environment":                  map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{"DB_USER": "mf_limpieza"})},
	})
	tpl.HasResourceProperties(jsii.String("AWS::Scheduler::Schedule"), map[string]any{
		"ScheduleExpression": "rate(1 minute)",
		"Target":             assertions.Match_ObjectLike(&map[string]any{"RetryPolicy": map[string]any{"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60}}),
	})
	tpl.HasResourceProperties(jsii.String("AWS::Scheduler::Schedule"), map[string]any{
		"ScheduleExpression":         "cron(15 4 * * ? *)",
		"ScheduleExpressionTimezone": "Europe/Madrid",
	})
}

// policies returns every statement of every IAM policy of the template.
func statements(tpl assertions.Template) []map[string]any {
	var out []map[string]any
	for _, r := range *tpl.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		props := (*r)["Properties"].(map[string]any)
		for _, s := range props["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			out = append(out, s.(map[string]any))
		}
	}
	return out
}

func actions(s map[string]any) []string {
	switch a := s["Action"].(type) {
	case string:
		return []string{a}
	case []any:
		var out []string
		for _, x := range a {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

func TestLeastPrivilegePutEventsOnTheBusOnlyAndConnectThroughTheProxy(t *testing.T) {
	_, tpl := fx(t)
	putEvents, connect := 0, 0
	for _, s := range statements(tpl) {
		for _, a := range actions(s) {
			if strings.HasPrefix(a, "events:") {
				putEvents++
				if a != "events:PutEvents" {
					t.Errorf("unexpected EventBridge action %s", a)
				}
				res := fmt.Sprint(s["Resource"])
				if res == "*" || !strings.Contains(res, "Bus") {
					t.Errorf("events:PutEvents on %s, want the bus ARN only", res)
				}
			}
			if a == "rds-db:connect" {
				connect++
				res := fmt.Sprint(s["Resource"])
				if !strings.Contains(res, "dbuser:") || strings.Contains(res, "mf_admin") {
					t.Errorf("rds-db:connect on %s, want database users of the function roles only", res)
				}
			}
			if a == "secretsmanager:GetSecretValue" && strings.Contains(fmt.Sprint(s), "Publicador") {
				t.Errorf("the functions must not read the database secret (IAM auth): %v", s)
			}
		}
	}
	if putEvents != 1 || connect != 4 {
		t.Fatalf("%d PutEvents statements, %d rds-db:connect; want 1 (publisher) and 4 (publisher, cleanup, migration, proxy)", putEvents, connect)
	}
	// The functions' security group opens no egress but to the proxy and
	// the EventBridge endpoint.
	for _, r := range *tpl.FindResources(jsii.String("AWS::EC2::SecurityGroupEgress"), nil) {
		p := (*r)["Properties"].(map[string]any)
		if p["CidrIp"] == "0.0.0.0/0" {
			t.Errorf("open egress rule %v", p)
		}
	}
}

func TestAlarmsOnPendingOldestAndParked(t *testing.T) {
	_, tpl := fx(t)
	tests := []struct {
		metric    string
		threshold float64
		missing   string
	}{
		{lambdaapi.MetricOutboxPending, 500, "notBreaching"},
		{lambdaapi.MetricOutboxOldestAge, 60, "breaching"},
		{lambdaapi.MetricOutboxParked, 0, "notBreaching"},
	}
	for _, tc := range tests {
		t.Run(tc.metric, func(t *testing.T) {
			tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
				"Namespace":          lambdaapi.Namespace,
				"MetricName":         tc.metric,
				"Dimensions":         []any{map[string]any{"Name": lambdaapi.DimensionEnvironment, "Value": "dev"}},
				"Statistic":          "Maximum",
				"Period":             60,
				"Threshold":          tc.threshold,
				"ComparisonOperator": "GreaterThanThreshold",
				"TreatMissingData":   tc.missing,
				"AlarmActions":       []any{assertions.Match_AnyValue()},
				"OKActions":          []any{assertions.Match_AnyValue()},
			})
		})
	}
}

// Prod-like props: deletion protection on; staging's SNAPSHOT removal
// policy snapshots the cluster and retains the log groups (which cannot be
// snapshotted).
func TestDeletionProtectionAndSnapshotRemoval(t *testing.T) {
	f := newFixtureWith(t, true, awscdk.RemovalPolicy_SNAPSHOT)
	tpl := assertions.Template_FromStack(f.stack, nil)
	tpl.HasResource(jsii.String("AWS::RDS::DBCluster"), map[string]any{
		"Properties":     map[string]any{"DeletionProtection": true},
		"DeletionPolicy": "Snapshot",
	})
	for id, r := range *tpl.FindResources(jsii.String("AWS::Logs::LogGroup"), nil) {
		if p := (*r)["DeletionPolicy"]; p != "Retain" {
			t.Errorf("log group %s has DeletionPolicy %v, want Retain", id, p)
		}
	}
}

// Regression: invalid props returned half-built constructs (nil Cluster,
// Proxy, Function), so the stack crashed with a nil pointer before the
// errors could be shown. Now every problem is listed and the constructs
// are whole.
func TestInvalidPropsAreSynthesisErrorsNotCrashes(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Roto"), nil)
	db := outbox.NewDatabase(stack, "SinClave", &outbox.DatabaseProps{})
	pub := outbox.NewPublisher(stack, "SinNada", &outbox.PublisherProps{Database: db})
	mig := outbox.NewMigration(stack, "SinMigrar", &outbox.MigrationProps{Context: core.Context{Builder: builder}})
	if mig.Function == nil || mig.Resource == nil || mig.Provider == nil {
		t.Fatal("a migration with invalid props is half-built")
	}
	if db.Cluster == nil || db.Proxy == nil || db.Secret == nil || pub.Function == nil || pub.Cleanup == nil || pub.PendingAlarm == nil {
		t.Fatal("a construct with invalid props is half-built")
	}
	_ = db.Environment("mf_publicador", 1) // what a dependent does first
	db.GrantConnect(pub.Function.Role, outbox.DefaultMasterUser)
	errs := cdktest.Errors(stack)
	for _, want := range []string{
		"outbox.Database Roto/SinClave: Vpc is required", "outbox.Database Roto/SinClave: ClusterIdentifier is required", "outbox.Database Roto/SinClave: DataKey is required",
		"outbox.Publisher Roto/SinNada: Vpc is required", "outbox.Publisher Roto/SinNada: Bus is required", "outbox.Publisher Roto/SinNada: EventsEndpoint is required",
		"outbox.Publisher Roto/SinNada: Alerts is required", "outbox.Publisher Roto/SinNada: EnvironmentName is required",
		"outbox.Migration Roto/SinMigrar: Database is required", "outbox.Migration Roto/SinMigrar: Vpc is required",
		"outbox.Migration Roto/SinMigrar: SecretsEndpoint is required", "outbox.Migration Roto/SinMigrar: DataKey is required",
		`outbox.Database Roto/SinClave: GrantConnect as "mf_admin": only the roles`,
	} {
		if !strings.Contains(strings.Join(errs, "\n"), want) {
			t.Errorf("no error %q in:\n%s", want, strings.Join(errs, "\n"))
		}
	}
}

// Regression: the database documented a CPU alarm it never created.
func TestDatabaseAlarmsOnProxyConnectionsAndCPU(t *testing.T) {
	_, tpl := fx(t)
	for _, metric := range []string{"DatabaseConnectionsCurrentlyBorrowed", "CPUUtilization"} {
		tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
			"Namespace":    "AWS/RDS",
			"MetricName":   metric,
			"AlarmActions": []any{assertions.Match_AnyValue()},
			"OKActions":    []any{assertions.Match_AnyValue()},
		})
	}
}

// functionsByRole maps each Lambda function's role logical id to the
// function's logical id.
func functionRoles(tpl assertions.Template) map[string]string {
	out := map[string]string{}
	for id, r := range *tpl.FindResources(jsii.String("AWS::Lambda::Function"), nil) {
		p := (*r)["Properties"].(map[string]any)
		if arn, ok := p["Role"].(map[string]any); ok {
			if ga, ok := arn["Fn::GetAtt"].([]any); ok {
				out[ga[0].(string)] = id
			}
		}
	}
	return out
}

// No function connects as the master user: none has it in its
// environment, no rds-db:connect names it, and the only role allowed to
// read the master secret is the schema migration function's (the rotation
// is a nested application, outside this template).
func TestNoFunctionConnectsAsTheMasterUser(t *testing.T) {
	f, tpl := fx(t)
	for id, r := range *tpl.FindResources(jsii.String("AWS::Lambda::Function"), nil) {
		env, _ := json.Marshal((*r)["Properties"].(map[string]any)["Environment"])
		if strings.Contains(string(env), outbox.DefaultMasterUser) {
			t.Errorf("function %s has the master user in its environment: %s", id, env)
		}
	}
	roles := functionRoles(tpl)
	migrationRole := *f.stack.GetLogicalId(f.migration.Function.Role.Node().DefaultChild().(awscdk.CfnElement))
	// The secret as the cluster hands it out (through its target attachment).
	secretID := *f.stack.GetLogicalId(f.database.Cluster.Node().FindChild(jsii.String("Secret")).Node().FindChild(jsii.String("Attachment")).Node().DefaultChild().(awscdk.CfnElement))
	readers := 0
	for id, r := range *tpl.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		p := (*r)["Properties"].(map[string]any)
		doc, _ := json.Marshal(p["PolicyDocument"])
		if !strings.Contains(string(doc), "secretsmanager:GetSecretValue") {
			continue
		}
		attached, _ := json.Marshal(p["Roles"])
		if !strings.Contains(string(doc), secretID) {
			t.Errorf("policy %s reads a secret other than the master secret: %s", id, doc)
		}
		for role := range roles {
			if strings.Contains(string(attached), role) && role != migrationRole {
				t.Errorf("function role %s (of %s) may read the master secret", role, roles[role])
			}
		}
		readers++
	}
	if readers != 1 {
		t.Fatalf("%d policies read the master secret, want 1 (the migration function's)", readers)
	}
}

// The schema is migrated by a custom resource whose properties change when
// the migrations or the role names do; its handler has its own role and
// connects as the owner role (test/ checks that the stack deploys the
// functions after it).
func TestMigrationCustomResourceOncePerDeploy(t *testing.T) {
	f, tpl := fx(t)
	tpl.HasResourceProperties(jsii.String(outbox.MigrationResourceType), map[string]any{
		"MigracionesHash": lambdaapi.SchemaHash(),
		"Roles": map[string]any{"owner": "mf_migrador", "publisher": "mf_publicador",
			"cleanup": "mf_limpieza", "writer": "mf_tienda"},
	})
	// Its own execution role, connecting as the owner role through the proxy.
	migrationRole := *f.stack.GetLogicalId(f.migration.Function.Role.Node().DefaultChild().(awscdk.CfnElement))
	found := false
	for _, r := range *tpl.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		p := (*r)["Properties"].(map[string]any)
		doc, _ := json.Marshal(p["PolicyDocument"])
		attached, _ := json.Marshal(p["Roles"])
		if strings.Contains(string(attached), migrationRole) && strings.Contains(string(doc), "rds-db:connect") {
			found = strings.Contains(string(doc), "/mf_migrador")
		}
	}
	if !found {
		t.Fatal("the migration function's role cannot connect as mf_migrador")
	}
	// The publisher's function no longer migrates.
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"FunctionName": "mf-outbox-publicador-dev",
		"Environment":  map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{"MIGRATE_ON_START": assertions.Match_Absent()})},
	})
	// The provider framework logs to a group with a retention and the data key.
	providerFn := *f.stack.GetLogicalId(f.migration.ProviderLogs.Node().DefaultChild().(awscdk.CfnElement))
	tpl.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{
		"RetentionInDays": assertions.Match_AnyValue(), "KmsKeyId": assertions.Match_AnyValue(),
	})
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"LoggingConfig": map[string]any{"LogGroup": map[string]any{"Ref": providerFn}},
	})
}

// The proxy logs in to the database as the function roles only.
func TestProxyRoleConnectsAsTheFunctionRolesOnly(t *testing.T) {
	_, tpl := fx(t)
	for _, r := range *tpl.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		p := (*r)["Properties"].(map[string]any)
		doc, _ := json.Marshal(p["PolicyDocument"])
		if !strings.Contains(string(doc), "DBClusterResourceId") {
			continue
		}
		for _, role := range lambdaapi.DefaultDBRoles().All() {
			if !strings.Contains(string(doc), "/"+role) {
				t.Errorf("the proxy cannot connect as %s: %s", role, doc)
			}
		}
		if strings.Contains(string(doc), "mf_admin") || strings.Contains(string(doc), "secretsmanager") {
			t.Errorf("the proxy's role reaches the master user or a secret: %s", doc)
		}
		return
	}
	t.Fatal("no policy lets the proxy connect to the cluster")
}

// The master secret lives as long as the cluster; slow statements are
// logged without their bind parameters.
func TestSecretRetainedAndNoBindParametersLogged(t *testing.T) {
	f := newFixtureWith(t, true, awscdk.RemovalPolicy_RETAIN)
	tpl := assertions.Template_FromStack(f.stack, nil)
	tpl.HasResource(jsii.String("AWS::SecretsManager::Secret"), map[string]any{
		"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
	})
	tpl.HasResourceProperties(jsii.String("AWS::RDS::DBClusterParameterGroup"), map[string]any{
		"Parameters": assertions.Match_ObjectLike(&map[string]any{
			"log_min_duration_statement": "1000", "log_parameter_max_length": "0", "log_parameter_max_length_on_error": "0",
		}),
	})
}
