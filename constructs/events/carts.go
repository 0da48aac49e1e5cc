package events

import (
	"cmp"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awspipes"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
)

// SPEC names (environments add their suffix).
const (
	TableName = "mercadofresco-carritos"
	PipeName  = "pipe-mf-carritos"
	QueueName = "cola-mercadofresco-carritos-abandonados"
)

// The pipe's and the queue's figures (docs/design.md#carts-pipe).
const (
	// PipeRetryAttempts: 10 retries of a failing batch, 11 PutEvents
	// at most per record (the attempts guardrail counts them).
	PipeRetryAttempts = 10
	// MaxRecordAge: a removal older than 6 h is not worth a reminder
	// any more; it goes to the DLQ instead of waiting.
	MaxRecordAge = 6 * time.Hour
	// RetentionDays of the abandoned-carts queue (no consumer yet).
	RetentionDays = 7
)

// CartsProps configures Carts. Bus and the Context's DataKey and Alerts are
// required; the Context's DeletionProtection applies to a created table.
type CartsProps struct {
	core.Context
	Bus awsevents.IEventBus
	// Import uses an existing table instead of creating one.
	Import *config.CarritosImport
	// TableName, PipeName, QueueName and the DLQ names: physical names.
	// Nil means the SPEC names (table, pipe) or CloudFormation's (queues).
	TableName, PipeName, QueueName, DeadLetterQueueName, PipeDeadLetterQueueName, RuleName, RuleDeadLetterQueueName *string
	// RetryAttempts (0..185) of the pipe's source. Zero means
	// PipeRetryAttempts.
	RetryAttempts float64
}

// Carts is the table, the pipe, the rule and the queue.
type Carts struct {
	constructs.Construct
	Table      awsdynamodb.ITable
	Pipe       awspipes.CfnPipe
	PipeRole   awsiam.Role
	PipeDLQ    *queues.DeadLetterQueue
	PipeLogs   awslogs.LogGroup
	Rule       *Rule
	Abandoned  *queues.Queue
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
		eventsapi.CarritoAbandonadoVersion, eventsapi.CarritosKeyAttribute, eventsapi.CarritosClienteAttribute, eventsapi.CarritosUpdatedAttribute)
}

// NewCarts turns abandoned carts into events with one write by the shop:
// the carts table mercadofresco-carritos (TTL on expira_en, a stream) feeds
// the pipe pipe-mf-carritos, which keeps only the deletions DynamoDB's TTL
// made and publishes each as a CarritoAbandonado event on bus-mercadofresco;
// a rule sends them to cola-mercadofresco-carritos-abandonados, which has
// no consumer yet. The pipe has a source DLQ, bisects failing batches and
// logs errors to an encrypted group. Every problem is reported at synth.
func NewCarts(scope constructs.Construct, id string, props *CartsProps) *Carts {
	c, v, props := core.Begin(scope, id, "carts", props)
	k := &Carts{Construct: c}
	v.If(props.Bus == nil, "Bus is required")
	props.Require(v, core.DataKey|core.Alerts)
	k.RetryCount = v.Count("RetryAttempts", props.RetryAttempts, PipeRetryAttempts, 0, 185)
	pipeName := cmp.Or(props.PipeName, jsii.String(PipeName))
	k.addTable(props, v)
	k.addPipe(props, pipeName)
	k.addQueue(props, pipeName)
	return k
}

// addTable creates the carts table, or imports the environment's.
func (k *Carts) addTable(props *CartsProps, v *core.Problems) {
	if imp := props.Import; imp != nil {
		tableName, streamArn := imp.TableName, imp.StreamArn
		if v.If(tableName == "" || streamArn == "", "Import needs TableName and StreamArn (the table's NEW_AND_OLD_IMAGES stream)") {
			tableName, streamArn = "missing", "arn:aws:dynamodb:eu-west-1:111111111111:table/missing/stream/missing"
		}
		attrs := &awsdynamodb.TableAttributes{TableName: jsii.String(tableName), TableStreamArn: jsii.String(streamArn)}
		if imp.KeyArn != "" {
			attrs.EncryptionKey = awskms.Key_FromKeyArn(k.Construct, jsii.String("TableKey"), jsii.String(imp.KeyArn))
		}
		k.Table = awsdynamodb.Table_FromTableAttributes(k.Construct, jsii.String("Table"), attrs)
		return
	}
	enc := awsdynamodb.TableEncryption_CUSTOMER_MANAGED
	if props.DataKey == nil {
		enc = awsdynamodb.TableEncryption_AWS_MANAGED
	}
	k.Table = awsdynamodb.NewTable(k.Construct, jsii.String("Table"), &awsdynamodb.TableProps{
		TableName:           cmp.Or(props.TableName, jsii.String(TableName)),
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String(eventsapi.CarritosKeyAttribute), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String(eventsapi.CarritosTTLAttribute),
		Stream:              awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES,
		Encryption:          enc,
		EncryptionKey:       props.DataKey,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: props.Protected(),
		RemovalPolicy:      observability.RemovalFor(props.RemovalPolicy, observability.Data),
	})
}

// addPipe creates the pipe from the table's stream to the bus, with its
// DLQ, role, logs and alarm.
func (k *Carts) addPipe(props *CartsProps, pipeName *string) {
	c := k.Construct
	k.PipeDLQ = queues.NewDeadLetterQueue(c, "PipeDLQ", &queues.DeadLetterQueueProps{
		Context:   props.Context,
		QueueName: props.PipeDeadLetterQueueName,
		Source:    "pipe " + *pipeName + " (stream batches it could not publish to the bus)",
	})
	k.PipeLogs = props.LogGroup(c, "PipeLogs", jsii.String("/aws/vendedlogs/pipes/"+*pipeName))
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
	core.AcknowledgeNag(k.PipeRole, true, "AwsSolutions-IAM5", "dynamodb:ListStreams has no resource-level permissions (AWS requires Resource '*'); the stream reads themselves are on this table's stream ARN only.", "Resource::*")
	k.PipeDLQ.Queue.Grant(k.PipeRole, jsii.String("sqs:SendMessage"), jsii.String("sqs:GetQueueAttributes"))
	queues.GrantKeyThroughSQS(k.PipeDLQ.Queue, k.PipeRole, "kms:GenerateDataKey", "kms:Decrypt")
	queues.ForQueue(k.PipeDLQ.Queue).AdmitRole(k.PipeRole)
	k.PipeLogs.GrantWrite(k.PipeRole)
	// The pipe's stored configuration (its filter and input template) is
	// encrypted with the data key, which its role uses through EventBridge
	// Pipes only (docs/design.md#data-key).
	core.GrantKey(props.DataKey, k.PipeRole, "pipes", "kms:Decrypt", "kms:GenerateDataKey", "kms:DescribeKey")
	busArn := jsii.String("")
	if props.Bus != nil {
		props.Bus.GrantPutEventsTo(k.PipeRole, nil)
		busArn = props.Bus.EventBusArn()
	}
	streamArn := cmp.Or(k.Table.TableStreamArn(), jsii.String(""))
	k.Pipe = awspipes.NewCfnPipe(c, jsii.String("Pipe"), &awspipes.CfnPipeProps{
		Name:             pipeName,
		Description:      jsii.String("TTL removals of the carts table -> CarritoAbandonado on the bus"),
		RoleArn:          k.PipeRole.RoleArn(),
		KmsKeyIdentifier: keyArn(props.DataKey),
		Source:           streamArn,
		SourceParameters: &awspipes.CfnPipe_PipeSourceParametersProperty{
			DynamoDbStreamParameters: &awspipes.CfnPipe_PipeSourceDynamoDBStreamParametersProperty{
				// Every record still in the stream when the pipe starts:
				// consumers de-duplicate on id_evento.
				StartingPosition:          jsii.String("TRIM_HORIZON"),
				BatchSize:                 jsii.Number(10),
				MaximumRetryAttempts:      jsii.Number(k.RetryCount),
				MaximumRecordAgeInSeconds: jsii.Number(MaxRecordAge.Seconds()),
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
	core.Produces(k.Pipe, eventsapi.TypeCarritoAbandonado, []int{eventsapi.CarritoAbandonadoVersion}, nil)
	failed := observability.Metric("AWS/EventBridge/Pipes", "ExecutionFailed", map[string]*string{"PipeName": pipeName}, "Sum", "", nil)
	k.PipeFailedAlarm = observability.NewAnyAlarm(c, "PipeFailedAlarm", failed, props.Alerts,
		fmt.Sprintf("Pipe %s failed to publish abandoned carts to the bus (retried, then dead-lettered to its DLQ). See its log group %s.", *pipeName, *k.PipeLogs.LogGroupName()))
}

// addQueue creates the abandoned-carts queue and the rule that fills it.
func (k *Carts) addQueue(props *CartsProps, pipeName *string) {
	k.Abandoned = queues.NewQueue(k.Construct, "Abandonados", &queues.QueueProps{
		Context:             props.Context,
		QueueName:           props.QueueName,
		DeadLetterQueueName: props.DeadLetterQueueName,
		RetentionPeriod:     awscdk.Duration_Days(jsii.Number(RetentionDays)),
		// No consumer yet: the alarm fires a day before unread events expire.
		OldestMessageAgeThreshold: awscdk.Duration_Days(jsii.Number(RetentionDays - 1)),
	})
	k.Rule = NewRule(k.Construct, "CarritoAbandonado", &RuleProps{
		Context:     props.Context,
		Bus:         props.Bus,
		RuleName:    props.RuleName,
		Description: "CarritoAbandonado (pipe " + *pipeName + ") -> " + k.Abandoned.QueueName,
		Pattern: &awsevents.EventPattern{
			Source:     jsii.Strings(eventsapi.SourceCarritos),
			DetailType: jsii.Strings(eventsapi.TypeCarritoAbandonado),
		},
		TargetLabel:         "the queue " + k.Abandoned.QueueName,
		DeadLetterQueueName: props.RuleDeadLetterQueueName,
		Target:              SqsTarget(k.Abandoned.Queue),
	})
}

// keyArn is key's ARN, nil for no key.
func keyArn(key awskms.IKey) *string {
	if key == nil {
		return nil
	}
	return key.KeyArn()
}
