// Package datastore is where the consumers keep state: the DynamoDB
// tables (NewTable; NewIdempotency and NewStock make the project's two;
// docs/design.md#consumer-tables) and the Valkey cache that holds the
// circuit breakers' state (NewCache; docs/design.md#breaker-auth). Both are
// safe by default: encrypted with the Context's data key, deletion
// protected, retained, alarmed to the Context's alerts topic, and grant
// their users exactly what they do (GrantConsumer, BindTo, Bind).
package datastore

import (
	"cmp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/observability"
)

// TableProps configures a Table. The Context's DataKey (the tables hold payment
// references and stock) and Alerts are required.
type TableProps struct {
	core.Context
	// TableName is the physical name, env.PhysicalName(<SPEC name>). Nil
	// lets CloudFormation name it (never a fixed name two environments
	// sharing an account would fight over).
	TableName *string
	// ThrottleAlarmThreshold is the throttled requests in five minutes that
	// raise the alarm. Default 1: an on-demand table that throttles is
	// delaying orders.
	ThrottleAlarmThreshold float64
}

// Schema is what one table is: its keys, the operations its consumers make
// and the variable its consumers read its name from.
type Schema struct {
	// Kind names the table's constructor in errors ("datastore.NewStock").
	Kind string
	// PartitionKey, SortKey ("" for none) and TTLAttribute ("" for none).
	PartitionKey, SortKey, TTLAttribute string
	// Operations are the item operations the consumers make: the only ones
	// GrantConsumer grants and the alarms watch.
	Operations []awsdynamodb.Operation
	// KeyActions are the data key's actions GrantConsumer grants through
	// DynamoDB.
	KeyActions []string
	// EnvTableName is the variable BindTo sets to the table's name.
	EnvTableName string
	// ThrottleDescription and SystemErrorsDescription describe the alarms.
	ThrottleDescription, SystemErrorsDescription string
}

// Actions are the table actions of the schema's operations (GET_ITEM is
// dynamodb:GetItem).
func (s Schema) Actions() []string {
	out := make([]string, 0, len(s.Operations))
	for _, op := range s.Operations {
		action := "dynamodb:"
		for _, w := range strings.Split(string(op), "_") {
			action += w[:1] + strings.ToLower(w[1:])
		}
		out = append(out, action)
	}
	return out
}

// Table is a consumer table with its alarms.
type Table struct {
	constructs.Construct
	// Table is the underlying L2 table.
	Table awsdynamodb.Table
	// EncryptionKey is the key the table is encrypted with.
	EncryptionKey awskms.IKey
	// ThrottleAlarm and SystemErrorsAlarm watch the schema's operations.
	ThrottleAlarm, SystemErrorsAlarm awscloudwatch.Alarm

	schema Schema
}

// NewTable creates the table. Invalid props are synthesis errors, every one of
// them.
func NewTable(scope constructs.Construct, id string, props *TableProps, schema Schema) *Table {
	c, v, props := core.Begin(scope, id, schema.Kind, props)
	props.Require(v, core.DataKey|core.Alerts)
	threshold := cmp.Or(props.ThrottleAlarmThreshold, 1)
	if v.If(threshold < 1, "ThrottleAlarmThreshold must be at least 1, got %v", props.ThrottleAlarmThreshold) {
		threshold = 1
	}
	encryption := awsdynamodb.TableEncryption_CUSTOMER_MANAGED
	if props.DataKey == nil {
		// Reported: keep synthesising without a stray key of the CDK's own.
		encryption = awsdynamodb.TableEncryption_AWS_MANAGED
	}
	tp := &awsdynamodb.TableProps{
		TableName:     props.TableName,
		PartitionKey:  &awsdynamodb.Attribute{Name: jsii.String(schema.PartitionKey), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:   awsdynamodb.BillingMode_PAY_PER_REQUEST,
		Encryption:    encryption,
		EncryptionKey: props.DataKey,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: props.Protected(),
		// DynamoDB tables cannot be snapshotted on deletion: SNAPSHOT retains.
		RemovalPolicy: observability.RemovalFor(props.RemovalPolicy, observability.Data),
	}
	if schema.SortKey != "" {
		tp.SortKey = &awsdynamodb.Attribute{Name: jsii.String(schema.SortKey), Type: awsdynamodb.AttributeType_STRING}
	}
	if schema.TTLAttribute != "" {
		tp.TimeToLiveAttribute = jsii.String(schema.TTLAttribute)
	}
	t := &Table{Construct: c, EncryptionKey: props.DataKey, schema: schema}
	t.Table = awsdynamodb.NewTable(c, jsii.String("Table"), tp)

	five := awscdk.Duration_Minutes(jsii.Number(5))
	alarmOn := func(id string, metric awscloudwatch.IMetric, threshold float64, description string) awscloudwatch.Alarm {
		return observability.NewAlarm(c, id, &observability.AlarmProps{
			Metric:      metric,
			Topic:       props.Alerts,
			Threshold:   threshold,
			Comparison:  awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING, // none reports nothing
			Description: description,
		})
	}
	t.ThrottleAlarm = alarmOn("ThrottleAlarm", t.MetricThrottledRequests(&awscloudwatch.MetricOptions{Period: five}), threshold, schema.ThrottleDescription)
	t.SystemErrorsAlarm = alarmOn("SystemErrorsAlarm", t.MetricSystemErrors(&awscloudwatch.MetricOptions{Period: five}), 1, schema.SystemErrorsDescription)
	return t
}

// GrantConsumer gives grantee exactly the schema's table actions on this
// table and its key actions through DynamoDB in this region
// (core.GrantKey), in the grantee's own policy: a consumer in another stack
// never edits this stack or the key's policy. With prefixes, only on the
// items whose partition key starts with one of them (dynamodb:LeadingKeys;
// "cobro:" admits "cobro:<pedido_id>" and "cobro:<pedido_id>#llamadas"): a
// consumer of a shared table cannot read, forge or delete another
// consumer's records.
func (t *Table) GrantConsumer(grantee awsiam.IGrantable, prefixes ...string) awsiam.Grant {
	return t.grant(grantee, t.schema.Actions(), prefixes)
}

// GrantReadKeys lets grantee read (dynamodb:GetItem) the items whose
// partition key starts with one of prefixes: the refund reads the charge's
// record.
func (t *Table) GrantReadKeys(grantee awsiam.IGrantable, prefixes ...string) awsiam.Grant {
	core.Check(t, "dynamotable").If(len(prefixes) == 0, "a key-limited grant needs at least one key prefix")
	return t.grant(grantee, []string{"dynamodb:GetItem"}, prefixes)
}

// grant gives grantee actions on the table (on the items of prefixes
// only, when there are any), in its own policy, and the schema's key
// actions through DynamoDB.
func (t *Table) grant(grantee awsiam.IGrantable, actions, prefixes []string) awsiam.Grant {
	var conditions *map[string]*map[string]any
	if len(prefixes) > 0 {
		patterns := make([]any, len(prefixes))
		for i, p := range prefixes {
			patterns[i] = p + "*"
		}
		conditions = &map[string]*map[string]any{"ForAllValues:StringLike": {"dynamodb:LeadingKeys": patterns}}
	}
	return awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      grantee,
		Actions:      jsii.Strings(actions...),
		ResourceArns: jsii.Strings(*t.Table.TableArn()),
		Conditions:   conditions,
	}).Combine(core.GrantKey(t.EncryptionKey, grantee, "dynamodb", t.schema.KeyActions...))
}

// BindTo grants fn as a consumer (GrantConsumer, on the items of prefixes
// when there are any) and sets the schema's EnvTableName to the table's
// name, so the code never hard-codes it.
func (t *Table) BindTo(fn awslambda.Function, prefixes ...string) awsiam.Grant {
	fn.AddEnvironment(jsii.String(t.schema.EnvTableName), t.Table.TableName(), nil)
	return t.GrantConsumer(fn, prefixes...)
}

// MetricThrottledRequests is the sum of ThrottledRequests over the
// consumers' operations (Sum by default).
func (t *Table) MetricThrottledRequests(opts *awscloudwatch.MetricOptions) awscloudwatch.IMetric {
	return t.Table.MetricThrottledRequestsForOperations(t.operationsOptions(opts))
}

// MetricSystemErrors is the sum of SystemErrors over the consumers'
// operations (Sum by default).
func (t *Table) MetricSystemErrors(opts *awscloudwatch.MetricOptions) awscloudwatch.IMetric {
	o := awsdynamodb.SystemErrorsForOperationsMetricOptions(*t.operationsOptions(opts))
	return t.Table.MetricSystemErrorsForOperations(&o)
}

// operationsOptions are opts (Sum by default) over the schema's operations.
func (t *Table) operationsOptions(opts *awscloudwatch.MetricOptions) *awsdynamodb.OperationsMetricOptions {
	o, ops := awscloudwatch.MetricOptions{}, append([]awsdynamodb.Operation(nil), t.schema.Operations...)
	if opts != nil {
		o = *opts
	}
	return &awsdynamodb.OperationsMetricOptions{
		Account: o.Account, Color: o.Color, DimensionsMap: o.DimensionsMap, Label: o.Label,
		Period: o.Period, Region: o.Region, StackAccount: o.StackAccount, StackRegion: o.StackRegion,
		Statistic: cmp.Or(o.Statistic, jsii.String("Sum")), Unit: o.Unit, Visible: o.Visible, Operations: &ops,
	}
}
