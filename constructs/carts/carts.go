// Package carts turns abandoned carts into events: the carts table
// mercadofresco-carritos (DynamoDB, TTL on expira_en, stream with new and
// old images) feeds the EventBridge pipe pipe-mf-carritos, which keeps only
// the deletions DynamoDB's TTL made (eventName REMOVE by the principal
// dynamodb.amazonaws.com) and publishes each as a versioned
// CarritoAbandonado event (eventsapi.CarritoAbandonado) on
// bus-mercadofresco: one write by the shop, no dual write. A rule sends
// CarritoAbandonado to the queue cola-mercadofresco-carritos-abandonados.
//
// That queue has no consumer yet (the abandoned-cart reminder is not
// built): its messages wait there, with a DLQ and alarms, and expire after
// RetentionDays; its age alarm says so before they do.
//
// The pipe: source DLQ (the batches it could not deliver after its retries
// or past the maximum record age), bisection of failing batches, retries
// counted by the attempts guardrail, ERROR logs to an encrypted log group.
package carts

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awspipes"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/mercadofresco/integration/constructs/alarm"
	"github.com/mercadofresco/integration/constructs/busrule"
	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/producers"
	"github.com/mercadofresco/integration/constructs/reliablequeue"
	"github.com/mercadofresco/integration/constructs/removal"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
)

// SPEC names (environments add their suffix).
const (
	TableName = "mercadofresco-carritos"
	PipeName  = "pipe-mf-carritos"
	QueueName = "cola-mercadofresco-carritos-abandonados"
)

// Defaults of the pipe (docs/design.md#carts-pipe).
const (
	// DefaultRetryAttempts: 10 retries of a failing batch, 11 PutEvents
	// at most per record (the attempts guardrail counts them).
	DefaultRetryAttempts = 10
	// DefaultMaxRecordAgeSeconds: a removal older than 6 h is not worth a
	// reminder any more; it goes to the DLQ instead of waiting.
	DefaultMaxRecordAgeSeconds = 6 * 3600
	// RetentionDays of the abandoned-carts queue (no consumer yet).
	RetentionDays = 7
)

// ImportedTable names an existing carts table (an environment that has
// one). Its stream must be NEW_AND_OLD_IMAGES and its TTL on expira_en.
type ImportedTable struct {
	TableName string
	StreamArn string
	// KeyArn is the table's KMS key ARN ("" for an AWS-owned key).
	KeyArn string
}

// Props configures Carts. Bus, EncryptionKey and AlarmTopic are required.
type Props struct {
	Bus awsevents.IEventBus
	// Import uses an existing table instead of creating one.
	Import *ImportedTable
	// TableName, PipeName, QueueName and the DLQ names: physical names.
	// Nil means the SPEC names (table, pipe) or CloudFormation's (queues).
	TableName, PipeName, QueueName, DeadLetterQueueName, PipeDeadLetterQueueName, RuleName, RuleDeadLetterQueueName *string
	// RetryAttempts and MaxRecordAgeSeconds of the pipe's source. Zero
	// means the defaults.
	RetryAttempts, MaxRecordAgeSeconds float64
	EncryptionKey                      awskms.IKey
	AlarmTopic                         awssns.ITopic
	LogRetention                       awslogs.RetentionDays
	RemovalPolicy                      awscdk.RemovalPolicy
	// DeletionProtection of a created table: nil means on.
	DeletionProtection *bool
}

// Carts is the table, the pipe, the rule and the queue.
type Carts struct {
	constructs.Construct
	Table      awsdynamodb.ITable
	Pipe       awspipes.CfnPipe
	PipeRole   awsiam.Role
	PipeDLQ    *reliablequeue.DeadLetterQueue
	PipeLogs   awslogs.LogGroup
	Rule       *busrule.Rule
	Abandoned  *reliablequeue.Queue
	RetryCount float64
	// PipeFailedAlarm fires when the pipe's target invocations fail.
	PipeFailedAlarm awscloudwatch.Alarm
}

// TTLRemovalFilter is the pipe's filter: only deletions made by DynamoDB's
// TTL process.
func TTLRemovalFilter() string {
	b, _ := json.Marshal(map[string]any{
		"eventName":    []string{"REMOVE"},
		"userIdentity": map[string]any{"type": []string{"Service"}, "principalId": []string{"dynamodb.amazonaws.com"}},
	})
	return string(b)
}

// InputTemplate renders a stream record as a CarritoAbandonado detail.
func InputTemplate() string {
	return fmt.Sprintf(`{"version": %d, "id_evento": "<$.eventID>", "carrito_id": "<$.dynamodb.Keys.%s.S>", "cliente_id": "<$.dynamodb.OldImage.%s.S>", "actualizado_en": "<$.dynamodb.OldImage.%s.S>"}`,
		eventsapi.Version1, eventsapi.CarritosKeyAttribute, eventsapi.CarritosClienteAttribute, eventsapi.CarritosUpdatedAttribute)
}

// New creates the carts flow. Every problem is reported at synth.
func New(scope constructs.Construct, id string, props *Props) *Carts {
	if props == nil {
		props = &Props{}
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	k := &Carts{Construct: c}
	fail := func(format string, a ...any) {
		awscdk.Annotations_Of(c).AddError(jsii.String(fmt.Sprintf("carts %s: %s", *c.Node().Path(), fmt.Sprintf(format, a...))))
	}
	if props.Bus == nil {
		fail("Bus is required")
	}
	if props.EncryptionKey == nil {
		fail("EncryptionKey (the data key) is required")
	}
	if props.AlarmTopic == nil {
		fail("AlarmTopic is required")
	}
	or := func(p *string, def string) *string {
		if p != nil {
			return p
		}
		return jsii.String(def)
	}
	if imp := props.Import; imp != nil {
		tableName, streamArn := imp.TableName, imp.StreamArn
		if tableName == "" || streamArn == "" {
			fail("Import needs TableName and StreamArn (the table's NEW_AND_OLD_IMAGES stream)")
			// Stand-ins keep the construct whole; synthesis fails anyway.
			tableName, streamArn = "missing", "arn:aws:dynamodb:eu-west-1:111111111111:table/missing/stream/missing"
		}
		attrs := &awsdynamodb.TableAttributes{TableName: jsii.String(tableName), TableStreamArn: jsii.String(streamArn)}
		if imp.KeyArn != "" {
			attrs.EncryptionKey = awskms.Key_FromKeyArn(c, jsii.String("TableKey"), jsii.String(imp.KeyArn))
		}
		k.Table = awsdynamodb.Table_FromTableAttributes(c, jsii.String("Table"), attrs)
	} else {
		dp := props.DeletionProtection
		if dp == nil {
			dp = jsii.Bool(true)
		}
		enc := awsdynamodb.TableEncryption_CUSTOMER_MANAGED
		if props.EncryptionKey == nil {
			enc = awsdynamodb.TableEncryption_AWS_MANAGED
		}
		k.Table = awsdynamodb.NewTable(c, jsii.String("Table"), &awsdynamodb.TableProps{
			TableName:           or(props.TableName, TableName),
			PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String(eventsapi.CarritosKeyAttribute), Type: awsdynamodb.AttributeType_STRING},
			BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
			TimeToLiveAttribute: jsii.String(eventsapi.CarritosTTLAttribute),
			Stream:              awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES,
			Encryption:          enc,
			EncryptionKey:       props.EncryptionKey,
			PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
				PointInTimeRecoveryEnabled: jsii.Bool(true),
			},
			DeletionProtection: dp,
			RemovalPolicy:      removal.For(props.RemovalPolicy, removal.Data),
		})
	}

	k.RetryCount = props.RetryAttempts
	if k.RetryCount == 0 {
		k.RetryCount = DefaultRetryAttempts
	}
	if k.RetryCount < 0 || k.RetryCount > 185 {
		fail("RetryAttempts must be in 0..185, got %v", props.RetryAttempts)
		k.RetryCount = DefaultRetryAttempts
	}
	maxAge := props.MaxRecordAgeSeconds
	if maxAge == 0 {
		maxAge = DefaultMaxRecordAgeSeconds
	}
	if maxAge < 60 || maxAge > 604800 {
		fail("MaxRecordAgeSeconds must be in 60..604800, got %v", props.MaxRecordAgeSeconds)
		maxAge = DefaultMaxRecordAgeSeconds
	}
	pipeName := or(props.PipeName, PipeName)

	k.PipeDLQ = reliablequeue.NewDeadLetterQueue(c, "PipeDLQ", &reliablequeue.DeadLetterQueueProps{
		QueueName: props.PipeDeadLetterQueueName,
		Context:   core.Context{DataKey: props.EncryptionKey, Alerts: props.AlarmTopic, RemovalPolicy: props.RemovalPolicy},
		Source:    "pipe " + *pipeName + " (stream batches it could not publish to the bus)",
	})
	k.PipeLogs = awslogs.NewLogGroup(c, jsii.String("PipeLogs"), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String("/aws/vendedlogs/pipes/" + *pipeName),
		Retention:     logRetention(props.LogRetention),
		EncryptionKey: props.EncryptionKey,
		RemovalPolicy: removal.For(props.RemovalPolicy, removal.Data),
	})
	k.PipeRole = awsiam.NewRole(c, jsii.String("PipeRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("pipes.amazonaws.com"), &awsiam.ServicePrincipalOpts{
			Conditions: &map[string]interface{}{"StringEquals": map[string]interface{}{"aws:SourceAccount": awscdk.Stack_Of(c).Account()}},
		}),
		Description: jsii.String("EventBridge pipe " + *pipeName + ": reads the carts stream, publishes to the bus"),
	})
	// Table.GrantStreamRead, with the key's use through DynamoDB only.
	k.Table.GrantTableListStreams(k.PipeRole)
	k.Table.GrantStream(k.PipeRole, jsii.String("dynamodb:DescribeStream"), jsii.String("dynamodb:GetRecords"), jsii.String("dynamodb:GetShardIterator"))
	core.GrantKey(k.Table.EncryptionKey(), k.PipeRole, "dynamodb", "kms:Decrypt", "kms:DescribeKey")
	cdknag.NagSuppressions_AddResourceSuppressions(k.PipeRole, &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String("dynamodb:ListStreams has no resource-level permissions (AWS requires Resource '*'); the stream reads themselves are on this table's stream ARN only."),
		AppliesTo: &[]interface{}{jsii.String("Resource::*")},
	}}, jsii.Bool(true))
	grantSend(k.PipeDLQ, k.PipeRole)
	producers.ForQueue(k.PipeDLQ.Queue).AdmitRole(k.PipeRole)
	k.PipeLogs.GrantWrite(k.PipeRole)
	busArn := jsii.String("")
	if props.Bus != nil {
		props.Bus.GrantPutEventsTo(k.PipeRole, nil)
		busArn = props.Bus.EventBusArn()
	}
	streamArn := k.Table.TableStreamArn()
	if streamArn == nil {
		streamArn = jsii.String("")
	}
	k.Pipe = awspipes.NewCfnPipe(c, jsii.String("Pipe"), &awspipes.CfnPipeProps{
		Name:        pipeName,
		Description: jsii.String("TTL removals of the carts table -> CarritoAbandonado on the bus"),
		RoleArn:     k.PipeRole.RoleArn(),
		Source:      streamArn,
		SourceParameters: &awspipes.CfnPipe_PipeSourceParametersProperty{
			DynamoDbStreamParameters: &awspipes.CfnPipe_PipeSourceDynamoDBStreamParametersProperty{
				// Every record still in the stream when the pipe starts:
				// consumers de-duplicate on id_evento.
				StartingPosition:          jsii.String("TRIM_HORIZON"),
				BatchSize:                 jsii.Number(10),
				MaximumRetryAttempts:      jsii.Number(k.RetryCount),
				MaximumRecordAgeInSeconds: jsii.Number(maxAge),
				OnPartialBatchItemFailure: jsii.String("AUTOMATIC_BISECT"),
				DeadLetterConfig:          &awspipes.CfnPipe_DeadLetterConfigProperty{Arn: k.PipeDLQ.Queue.QueueArn()},
			},
			FilterCriteria: &awspipes.CfnPipe_FilterCriteriaProperty{
				Filters: &[]*awspipes.CfnPipe_FilterProperty{{Pattern: jsii.String(TTLRemovalFilter())}},
			},
		},
		Target: busArn,
		TargetParameters: &awspipes.CfnPipe_PipeTargetParametersProperty{
			InputTemplate: jsii.String(InputTemplate()),
			EventBridgeEventBusParameters: &awspipes.CfnPipe_PipeTargetEventBridgeEventBusParametersProperty{
				Source:     jsii.String(eventsapi.SourceCarritos),
				DetailType: jsii.String(eventsapi.TypeCarritoAbandonado),
			},
		},
		LogConfiguration: &awspipes.CfnPipe_PipeLogConfigurationProperty{
			Level:                        jsii.String("ERROR"),
			CloudwatchLogsLogDestination: &awspipes.CfnPipe_CloudwatchLogsLogDestinationProperty{LogGroupArn: k.PipeLogs.LogGroupArn()},
		},
	})
	k.Pipe.Node().AddDependency(k.PipeRole)

	k.PipeFailedAlarm = alarm.New(c, "PipeFailedAlarm", &alarm.Props{
		Metric: awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String("AWS/EventBridge/Pipes"), MetricName: jsii.String("ExecutionFailed"),
			DimensionsMap: &map[string]*string{"PipeName": pipeName},
			Period:        awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum"),
		}),
		Topic:       props.AlarmTopic,
		Threshold:   0,
		MissingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
		Description: fmt.Sprintf("Pipe %s failed to publish abandoned carts to the bus (retried, then dead-lettered to its DLQ). See its log group %s.", *pipeName, *k.PipeLogs.LogGroupName()),
	})

	k.Abandoned = reliablequeue.New(c, "Abandonados", &reliablequeue.Props{
		QueueName:           props.QueueName,
		DeadLetterQueueName: props.DeadLetterQueueName,
		Context:             core.Context{DataKey: props.EncryptionKey, Alerts: props.AlarmTopic, RemovalPolicy: props.RemovalPolicy},
		RetentionPeriod:     awscdk.Duration_Days(jsii.Number(RetentionDays)),
		// No consumer yet: the alarm fires a day before unread events expire.
		OldestMessageAgeThreshold: awscdk.Duration_Days(jsii.Number(RetentionDays - 1)),
	})
	k.Rule = busrule.New(c, "CarritoAbandonado", &busrule.Props{
		Bus:         props.Bus,
		RuleName:    props.RuleName,
		Description: "CarritoAbandonado (pipe " + *pipeName + ") -> " + k.Abandoned.QueueName,
		Pattern: &awsevents.EventPattern{
			Source:     jsii.Strings(eventsapi.SourceCarritos),
			DetailType: jsii.Strings(eventsapi.TypeCarritoAbandonado),
		},
		TargetLabel:         "the queue " + k.Abandoned.QueueName,
		DeadLetterQueueName: props.RuleDeadLetterQueueName,
		Context:             core.Context{DataKey: props.EncryptionKey, Alerts: props.AlarmTopic, RemovalPolicy: props.RemovalPolicy},
		Target: func(o busrule.TargetOptions) awsevents.IRuleTarget {
			return awseventstargets.NewSqsQueue(k.Abandoned.Queue, &awseventstargets.SqsQueueProps{
				DeadLetterQueue: o.DeadLetterQueue, MaxEventAge: o.MaxEventAge, RetryAttempts: jsii.Number(o.RetryAttempts),
			})
		},
	})
	producers.ForQueue(k.Abandoned.Queue).AdmitRule(k.Rule.Rule)
	return k
}

func grantSend(d *reliablequeue.DeadLetterQueue, grantee awsiam.IGrantable) {
	d.Queue.Grant(grantee, jsii.String("sqs:SendMessage"), jsii.String("sqs:GetQueueAttributes"))
	reliablequeue.GrantKeyThroughSQS(d.Queue, grantee, "kms:GenerateDataKey", "kms:Decrypt")
}

func logRetention(r awslogs.RetentionDays) awslogs.RetentionDays {
	if r == "" {
		return awslogs.RetentionDays_ONE_MONTH
	}
	return r
}
