package datastore_test

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/datastore"
	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

type fixture struct {
	app    awscdk.App
	stack  awscdk.Stack
	key    awskms.Key
	alerts awssns.Topic
}

func newFixture() *fixture {
	p := cdktest.NewPlatform("Data")
	return &fixture{app: p.App, stack: p.Stack, key: p.Key, alerts: p.Alerts}
}

func (f *fixture) props() *datastore.TableProps {
	return &datastore.TableProps{Context: core.Context{DataKey: f.key, Alerts: f.alerts}}
}

func (f *fixture) template() assertions.Template { return assertions.Template_FromStack(f.stack, nil) }

// onlyResource returns the properties and attributes of the single
// resource of type typ.
func onlyResource(t *testing.T, tpl assertions.Template, typ string) map[string]any {
	t.Helper()
	found := *tpl.FindResources(jsii.String(typ), nil)
	if len(found) != 1 {
		t.Fatalf("%d %s resources, want 1", len(found), typ)
	}
	for _, r := range found {
		return *r
	}
	return nil
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDefaults(t *testing.T) {
	f := newFixture()
	datastore.NewIdempotency(f.stack, "Idempotencia", f.props())
	tpl := f.template()
	tpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"DeletionPolicy":      "Retain",
		"UpdateReplacePolicy": "Retain",
		"Properties": map[string]any{
			"BillingMode":          "PAY_PER_REQUEST",
			"KeySchema":            []any{map[string]any{"AttributeName": "clave", "KeyType": "HASH"}},
			"AttributeDefinitions": []any{map[string]any{"AttributeName": "clave", "AttributeType": "S"}},
			"TimeToLiveSpecification": map[string]any{
				"AttributeName": "expira_en", "Enabled": true,
			},
			"SSESpecification": map[string]any{
				"SSEEnabled":     true,
				"SSEType":        "KMS",
				"KMSMasterKeyId": f.stack.Resolve(f.key.KeyArn()),
			},
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
			"DeletionProtectionEnabled":        true,
		},
	})
	props := onlyResource(t, tpl, "AWS::DynamoDB::Table")["Properties"].(map[string]any)
	for _, absent := range []string{"TableName", "ProvisionedThroughput", "StreamSpecification", "GlobalSecondaryIndexes"} {
		if _, ok := props[absent]; ok {
			t.Errorf("unexpected %s: %v", absent, props[absent])
		}
	}
	// The names the library writes are the names the table declares.
	if lambdaapi.IdempotencyKeyAttribute != "clave" || lambdaapi.IdempotencyTTLAttribute != "expira_en" {
		t.Fatal("library and construct disagree on attribute names")
	}
	annotations := assertions.Annotations_FromStack(f.stack)
	if errs := annotations.FindError(jsii.String("*"), assertions.Match_AnyValue()); len(*errs) != 0 {
		t.Fatalf("unexpected errors: %v", toJSON(t, errs))
	}
}

func TestEnvironmentSettings(t *testing.T) {
	for _, tc := range []struct {
		name       string
		protection *bool
		removal    awscdk.RemovalPolicy
		wantPolicy string
		wantDP     bool
	}{
		{"prod", jsii.Bool(true), awscdk.RemovalPolicy_RETAIN, "Retain", true},
		{"dev", jsii.Bool(false), awscdk.RemovalPolicy_DESTROY, "Delete", false},
		{"staging snapshot means retain", jsii.Bool(false), awscdk.RemovalPolicy_SNAPSHOT, "Retain", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			p := f.props()
			p.TableName = jsii.String("mercadofresco-idempotencia-" + tc.name)
			p.DeletionProtection = tc.protection
			p.RemovalPolicy = tc.removal
			datastore.NewIdempotency(f.stack, "Idempotencia", p)
			f.template().HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
				"DeletionPolicy":      tc.wantPolicy,
				"UpdateReplacePolicy": tc.wantPolicy,
				"Properties": map[string]any{
					"TableName":                 *p.TableName,
					"DeletionProtectionEnabled": tc.wantDP,
				},
			})
		})
	}
}

// policyStatements returns the statements of every IAM policy of the stack.
func policyStatements(t *testing.T, tpl assertions.Template) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range *tpl.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		doc := (*r)["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)
		for _, s := range doc["Statement"].([]any) {
			out = append(out, s.(map[string]any))
		}
	}
	return out
}

func actionsOf(s map[string]any) []string {
	var out []string
	switch a := s["Action"].(type) {
	case string:
		out = []string{a}
	case []any:
		for _, x := range a {
			out = append(out, x.(string))
		}
	}
	sort.Strings(out)
	return out
}

func TestGrantConsumerIsExactlyFourItemActionsAndKeyUseThroughDynamoDB(t *testing.T) {
	f := newFixture()
	table := datastore.NewIdempotency(f.stack, "Idempotencia", f.props())
	role := awsiam.NewRole(f.stack, jsii.String("Consumer"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	table.GrantConsumer(role)

	stmts := policyStatements(t, f.template())
	if len(stmts) != 2 {
		t.Fatalf("%d statements, want 2 (table, key): %s", len(stmts), toJSON(t, stmts))
	}
	tableArn := toJSON(t, f.stack.Resolve(table.Table.TableArn()))
	keyArn := toJSON(t, f.stack.Resolve(f.key.KeyArn()))
	var sawTable, sawKey bool
	for _, s := range stmts {
		if s["Effect"] != "Allow" {
			t.Errorf("statement effect %v", s["Effect"])
		}
		res := toJSON(t, s["Resource"])
		switch {
		case res == tableArn:
			sawTable = true
			if got, want := actionsOf(s), []string{"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}; !reflect.DeepEqual(got, want) {
				t.Errorf("table actions %v, want exactly %v", got, want)
			}
			if s["Condition"] != nil {
				t.Errorf("unexpected table condition %v", s["Condition"])
			}
		case res == keyArn:
			sawKey = true
			if got, want := actionsOf(s), []string{"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey", "kms:GenerateDataKeyWithoutPlaintext", "kms:ReEncryptFrom", "kms:ReEncryptTo"}; !reflect.DeepEqual(got, want) {
				t.Errorf("key actions %v, want exactly %v", got, want)
			}
			want := map[string]any{"StringEquals": map[string]any{"kms:ViaService": "dynamodb.eu-west-1.amazonaws.com"}}
			if !reflect.DeepEqual(s["Condition"], want) {
				t.Errorf("key condition %s, want %s", toJSON(t, s["Condition"]), toJSON(t, want))
			}
		default:
			t.Errorf("statement on unexpected resource %s", res)
		}
	}
	if !sawTable || !sawKey {
		t.Fatalf("table statement %v, key statement %v", sawTable, sawKey)
	}
	// The exported list is the one asserted above.
	if strings.Join(datastore.IdempotencyKeyActions(), ",") != "kms:Decrypt,kms:DescribeKey,kms:Encrypt,kms:ReEncryptFrom,kms:ReEncryptTo,kms:GenerateDataKey,kms:GenerateDataKeyWithoutPlaintext" {
		t.Error("exported key action list changed")
	}
}

// TestGrantAcrossStacks: a consumer in another stack (the messaging stack)
// is granted through its own policy, with no cycle between the stacks.
func TestGrantAcrossStacks(t *testing.T) {
	f := newFixture()
	table := datastore.NewIdempotency(f.stack, "Idempotencia", f.props())
	other := awscdk.NewStack(f.app, jsii.String("Messaging"), &awscdk.StackProps{
		Env: &awscdk.Environment{Account: jsii.String("111111111111"), Region: jsii.String("eu-west-1")},
	})
	fn := awslambda.NewFunction(other, jsii.String("Consumer"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_NODEJS_22_X(),
		Handler: jsii.String("index.handler"),
		Code:    awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({})")),
	})
	table.BindTo(fn)
	f.app.Synth(nil)
	consumer := assertions.Template_FromStack(other, nil)
	consumer.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Environment": map[string]any{"Variables": map[string]any{
			lambdaapi.EnvIdempotencyTable: assertions.Match_AnyValue(),
		}},
	})
	if n := len(policyStatements(t, consumer)); n != 2 {
		t.Fatalf("%d statements in the consumer's policy, want 2", n)
	}
	if n := len(policyStatements(t, f.template())); n != 0 {
		t.Fatalf("the data stack gained %d policy statements", n)
	}
	// The data key's policy is not touched by the grant.
	keyPolicy := toJSON(t, onlyResource(t, f.template(), "AWS::KMS::Key")["Properties"].(map[string]any)["KeyPolicy"])
	if strings.Contains(keyPolicy, "Consumer") {
		t.Fatalf("key policy names the consumer: %s", keyPolicy)
	}
}

func TestAlarms(t *testing.T) {
	f := newFixture()
	table := datastore.NewIdempotency(f.stack, "Idempotencia", f.props())
	tpl := f.template()
	alarms := *tpl.FindResources(jsii.String("AWS::CloudWatch::Alarm"), nil)
	if len(alarms) != 2 {
		t.Fatalf("%d alarms, want 2", len(alarms))
	}
	topic := f.stack.Resolve(f.alerts.TopicArn())
	for _, metric := range []string{"ThrottledRequests", "SystemErrors"} {
		found := false
		for _, a := range alarms {
			p := (*a)["Properties"].(map[string]any)
			if !strings.Contains(toJSON(t, p["Metrics"]), `"MetricName":"`+metric+`"`) {
				continue
			}
			found = true
			ops := toJSON(t, p["Metrics"])
			for _, op := range []string{"GetItem", "PutItem", "UpdateItem", "DeleteItem"} {
				if !strings.Contains(ops, `"Value":"`+op+`"`) {
					t.Errorf("%s alarm does not cover %s", metric, op)
				}
			}
			want := map[string]any{
				"Threshold":          float64(1),
				"EvaluationPeriods":  float64(1),
				"ComparisonOperator": "GreaterThanOrEqualToThreshold",
				"TreatMissingData":   "notBreaching",
				"AlarmActions":       []any{topic},
				"OKActions":          []any{topic},
			}
			for k, v := range want {
				if !reflect.DeepEqual(p[k], v) {
					t.Errorf("%s alarm %s = %s, want %s", metric, k, toJSON(t, p[k]), toJSON(t, v))
				}
			}
			if !strings.Contains(ops, `"Period":300`) || !strings.Contains(ops, `"Stat":"Sum"`) {
				t.Errorf("%s alarm is not a 5-minute sum: %s", metric, ops)
			}
		}
		if !found {
			t.Errorf("no alarm on %s", metric)
		}
	}
	if table.ThrottleAlarm == nil || table.SystemErrorsAlarm == nil {
		t.Fatal("alarms not exposed")
	}
}

func TestThrottleThreshold(t *testing.T) {
	f := newFixture()
	p := f.props()
	p.ThrottleAlarmThreshold = 25
	table := datastore.NewIdempotency(f.stack, "Idempotencia", p)
	f.template().HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"Threshold": 25,
	})
	_ = table
}

func TestMetrics(t *testing.T) {
	f := newFixture()
	table := datastore.NewIdempotency(f.stack, "Idempotencia", f.props())
	for name, m := range map[string]awscloudwatch.IMetric{
		"ThrottledRequests": table.MetricThrottledRequests(nil),
		"SystemErrors":      table.MetricSystemErrors(nil),
	} {
		cfg := m.ToMetricConfig()
		if cfg.MathExpression == nil || len(*cfg.MathExpression.UsingMetrics) != 4 {
			t.Errorf("%s: want a sum over 4 operations, got %s", name, toJSON(t, cfg))
		}
	}
}

func TestRequiredProps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props func(*fixture) *datastore.TableProps
		want  string
	}{
		{"no key", func(f *fixture) *datastore.TableProps {
			return &datastore.TableProps{Context: core.Context{Alerts: f.alerts}}
		}, "DataKey is required"},
		{"no topic", func(f *fixture) *datastore.TableProps {
			return &datastore.TableProps{Context: core.Context{DataKey: f.key}}
		}, "Alerts is required"},
		{"nil props", func(*fixture) *datastore.TableProps { return nil }, "DataKey is required"},
		{"bad threshold", func(f *fixture) *datastore.TableProps {
			p := f.props()
			p.ThrottleAlarmThreshold = 0.5
			return p
		}, "ThrottleAlarmThreshold must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			datastore.NewIdempotency(f.stack, "Idempotencia", tc.props(f))
			errs := assertions.Annotations_FromStack(f.stack).FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String(tc.want)))
			if len(*errs) == 0 {
				t.Fatalf("no error annotation matching %q", tc.want)
			}
		})
	}
}

// TestNagClean: the table passes the AwsSolutions pack (DDB3 PITR etc.)
// without any suppression.
func TestNagClean(t *testing.T) {
	f := newFixture()
	datastore.NewIdempotency(f.stack, "Idempotencia", f.props())
	// Control: a bare table without PITR, to prove the pack ran.
	awsdynamodb.NewTable(f.stack, jsii.String("Control"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("id"), Type: awsdynamodb.AttributeType_STRING},
	})
	awscdk.Aspects_Of(f.app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	f.app.Synth(nil)
	annotations := assertions.Annotations_FromStack(f.stack)
	var all []*cxapi.SynthesisMessage
	all = append(all, *annotations.FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))...)
	all = append(all, *annotations.FindWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))...)
	control := false
	for _, m := range all {
		switch id := *m.Id; {
		case strings.HasPrefix(id, "/Data/Control/"):
			control = true
		case strings.HasPrefix(id, "/Data/Idempotencia/"):
			t.Errorf("cdk-nag on %s: %v", id, m.Entry.Data)
		}
	}
	if !control {
		t.Fatal("cdk-nag did not flag the control table (DDB3): the pack did not run")
	}
}
