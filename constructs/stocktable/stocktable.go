// Package stocktable defines the DynamoDB table mercadofresco-stock that the
// stock-movements consumer (lambdas/stock) keeps: per SKU a totals item and
// one item per order line or adjustment that moved it.
//
// The zero value of Props is the production configuration: on-demand billing,
// partition key "sku" and sort key "elemento" (lambdas/sqsconsumer/consumerapi),
// encryption with the customer-managed data key alias/mercadofresco-datos,
// point-in-time recovery, deletion protection, RETAIN, and alarms on
// throttled requests and DynamoDB system errors. Consumers get exactly the
// three item operations lambdas/stock performs (GrantConsumer).
package stocktable

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/alarm"
	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/removal"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer/consumerapi"
)

// SpecTableName is the table's name (environments add their suffix).
const SpecTableName = "mercadofresco-stock"

// consumerOperations are the calls lambdas/stock makes: a consistent read
// of a line or the totals, the line's conditional put, the totals'
// conditional updates.
var consumerOperations = []awsdynamodb.Operation{
	awsdynamodb.Operation_GET_ITEM,
	awsdynamodb.Operation_PUT_ITEM,
	awsdynamodb.Operation_UPDATE_ITEM,
}

// ConsumerTableActions are the only table actions a consumer gets.
func ConsumerTableActions() []string {
	return []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}
}

// Props configures a Table. EncryptionKey and AlarmTopic are required.
type Props struct {
	// TableName is the physical name (env.PhysicalName(SpecTableName)).
	// Nil lets CloudFormation name it.
	TableName *string
	// EncryptionKey is the data key (required: stock is business data).
	EncryptionKey awskms.IKey
	// AlarmTopic receives the alarms (alertas-mercadofresco). Required.
	AlarmTopic awssns.ITopic
	// DeletionProtection: nil means on.
	DeletionProtection *bool
	// RemovalPolicy: empty and SNAPSHOT mean RETAIN (constructs/removal).
	RemovalPolicy awscdk.RemovalPolicy
}

// Table is the stock table with its alarms.
type Table struct {
	constructs.Construct
	Table         awsdynamodb.Table
	EncryptionKey awskms.IKey
	// ThrottleAlarm and SystemErrorsAlarm watch the consumer's operations.
	ThrottleAlarm, SystemErrorsAlarm awscloudwatch.Alarm
}

// New creates the table; invalid props are synthesis errors and the
// construct is still whole.
func New(scope constructs.Construct, id string, props *Props) *Table {
	if props == nil {
		props = &Props{}
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	fail := func(msg string) {
		awscdk.Annotations_Of(c).AddError(jsii.String(fmt.Sprintf("stocktable %s: %s", *c.Node().Path(), msg)))
	}
	encryption := awsdynamodb.TableEncryption_CUSTOMER_MANAGED
	if props.EncryptionKey == nil {
		fail("EncryptionKey is required (the data key alias/mercadofresco-datos)")
		encryption = awsdynamodb.TableEncryption_AWS_MANAGED
	}
	if props.AlarmTopic == nil {
		fail("AlarmTopic is required (alertas-mercadofresco)")
	}
	protection := props.DeletionProtection
	if protection == nil {
		protection = jsii.Bool(true)
	}
	t := &Table{Construct: c, EncryptionKey: props.EncryptionKey}
	t.Table = awsdynamodb.NewTable(c, jsii.String("Table"), &awsdynamodb.TableProps{
		TableName:     props.TableName,
		PartitionKey:  &awsdynamodb.Attribute{Name: jsii.String(consumerapi.StockPartitionKey), Type: awsdynamodb.AttributeType_STRING},
		SortKey:       &awsdynamodb.Attribute{Name: jsii.String(consumerapi.StockSortKey), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:   awsdynamodb.BillingMode_PAY_PER_REQUEST,
		Encryption:    encryption,
		EncryptionKey: props.EncryptionKey,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: protection,
		RemovalPolicy:      removal.For(props.RemovalPolicy, removal.Data),
	})
	ops := append([]awsdynamodb.Operation(nil), consumerOperations...)
	five := awscdk.Duration_Minutes(jsii.Number(5))
	alarmOn := func(id string, metric awscloudwatch.IMetric, description string) awscloudwatch.Alarm {
		return alarm.New(c, id, &alarm.Props{
			Metric:      metric,
			Topic:       props.AlarmTopic,
			Threshold:   1,
			Comparison:  awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING, // none reports nothing
			Description: description,
		})
	}
	t.ThrottleAlarm = alarmOn("ThrottleAlarm",
		t.Table.MetricThrottledRequestsForOperations(&awsdynamodb.OperationsMetricOptions{Operations: &ops, Period: five, Statistic: jsii.String("Sum")}),
		"The stock table throttled the stock-movements consumer: its SKU groups wait in the FIFO queue. Check ThrottledRequests per operation and the account's on-demand limits.")
	t.SystemErrorsAlarm = alarmOn("SystemErrorsAlarm",
		t.Table.MetricSystemErrorsForOperations(&awsdynamodb.SystemErrorsForOperationsMetricOptions{Operations: &ops, Period: five, Statistic: jsii.String("Sum")}),
		"DynamoDB answered the stock-movements consumer with server errors (5xx): movements are retried and their SKU groups wait. Check the AWS Health Dashboard for DynamoDB.")
	return t
}

// TableName is the physical name.
func (t *Table) TableName() *string { return t.Table.TableName() }

// GrantConsumer gives grantee ConsumerTableActions on the table and the
// data key's use through DynamoDB only (kms:ViaService), in its own policy.
func (t *Table) GrantConsumer(grantee awsiam.IGrantable) awsiam.Grant {
	grant := awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      grantee,
		Actions:      jsii.Strings(ConsumerTableActions()...),
		ResourceArns: jsii.Strings(*t.Table.TableArn()),
	})
	if t.EncryptionKey == nil {
		return grant
	}
	return grant.Combine(core.GrantKey(t.EncryptionKey, grantee, "dynamodb", "kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"))
}

// BindTo grants fn (GrantConsumer) and sets consumerapi.EnvStockTable.
func (t *Table) BindTo(fn awslambda.Function) awsiam.Grant {
	fn.AddEnvironment(jsii.String(consumerapi.EnvStockTable), t.TableName(), nil)
	return t.GrantConsumer(fn)
}
