// Package platform holds the pieces every other part of MercadoFresco uses
// from day one: the customer-managed data key `alias/mercadofresco-datos`,
// the alarm topic `alertas-mercadofresco`, and the event bus
// `bus-mercadofresco` with its archive.
package platform

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/producers"
	"github.com/mercadofresco/integration/constructs/removal"
	"github.com/mercadofresco/integration/lambdas/metrics"
)

// SPEC names of the platform resources (environments add their suffix).
const (
	DataKeyAlias = "alias/mercadofresco-datos"
	AlertsTopic  = "alertas-mercadofresco"
	EventBusName = "bus-mercadofresco"
	// MetricNamespace is the project's custom CloudWatch namespace: the one
	// the Lambdas write to (lambdas/metrics).
	MetricNamespace = metrics.Namespace
)

// DataKeyProps configures NewDataKey.
type DataKeyProps struct {
	// Alias of the key, e.g. "alias/mercadofresco-datos-dev". Nil means
	// DataKeyAlias.
	Alias *string
	// RemovalPolicy of the key, mapped by removal.For: empty and SNAPSHOT
	// mean RETAIN (keeping the key is what keeps an environment's snapshots
	// readable; a destroyed key makes
	// every byte it encrypted unreadable).
	RemovalPolicy awscdk.RemovalPolicy
}

// NewDataKey creates the customer-managed key that encrypts MercadoFresco's
// data at rest (queues, topics, tables, logs, databases). Rotation is on,
// and the key policy lets the AWS services that act on the project's behalf
// without an IAM role of ours (CloudWatch alarms publishing to encrypted
// topics, SNS and EventBridge delivering to encrypted queues, CloudWatch Logs
// encrypting log groups) use it. Everything else is granted through IAM: the
// CDK's default key policy delegates to the account.
func NewDataKey(scope constructs.Construct, id string, props *DataKeyProps) awskms.Key {
	if props == nil {
		props = &DataKeyProps{}
	}
	alias := DataKeyAlias
	if props.Alias != nil {
		alias = *props.Alias
	}
	keyRemoval := removal.For(props.RemovalPolicy, removal.Data)
	key := awskms.NewKey(scope, jsii.String(id), &awskms.KeyProps{
		Alias:             jsii.String(alias),
		Description:       jsii.String("MercadoFresco data at rest: queues, topics, tables, logs and databases."),
		EnableKeyRotation: jsii.Bool(true),
		RemovalPolicy:     keyRemoval,
		PendingWindow:     awscdk.Duration_Days(jsii.Number(30)),
	})
	stack := awscdk.Stack_Of(scope)

	// Service principals that encrypt/decrypt with the key on our behalf.
	// Each is limited to this account's resources with aws:SourceAccount
	// where the service sends it.
	for _, svc := range []struct{ sid, principal string }{
		{"AllowCloudWatchAlarmsToEncryptedTopics", "cloudwatch.amazonaws.com"},
		{"AllowSnsDeliveryToEncryptedQueues", "sns.amazonaws.com"},
		{"AllowEventBridgeDeliveryToEncryptedTargets", "events.amazonaws.com"},
	} {
		key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String(svc.sid),
			Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String(svc.principal), nil)},
			Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey*"),
			Resources:  jsii.Strings("*"),
			Conditions: &map[string]interface{}{
				"StringEquals": map[string]interface{}{"aws:SourceAccount": stack.Account()},
			},
		}), jsii.Bool(false))
	}
	// CloudWatch Logs encrypts log groups with the key; it identifies the
	// log group in the encryption context, which scopes the grant to this
	// account's log groups in this region.
	key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("AllowCloudWatchLogsEncryption"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String(fmt.Sprintf("logs.%s.amazonaws.com", *stack.Region())), nil)},
		Actions:    jsii.Strings("kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"),
		Resources:  jsii.Strings("*"),
		Conditions: &map[string]interface{}{
			"ArnLike": map[string]interface{}{
				"kms:EncryptionContext:aws:logs:arn": fmt.Sprintf("arn:%s:logs:%s:%s:log-group:*", *stack.Partition(), *stack.Region(), *stack.Account()),
			},
		},
	}), jsii.Bool(false))
	return key
}

// AlertsTopicProps configures NewAlertsTopic.
type AlertsTopicProps struct {
	// TopicName is the physical name. Nil means AlertsTopic.
	TopicName *string
	// Key encrypts the topic. Required: an alarm topic with an AWS-managed
	// key cannot receive CloudWatch alarms.
	Key awskms.IKey
	// Email, when not empty, is subscribed to the topic.
	Email string
}

// NewAlertsTopic creates `alertas-mercadofresco`, the topic every alarm of
// the project targets: encrypted with the data key, TLS enforced, publishable
// by this account's CloudWatch alarms of its region and by nobody else
// (a known-producers guard, constructs/producers).
func NewAlertsTopic(scope constructs.Construct, id string, props *AlertsTopicProps) awssns.Topic {
	if props == nil {
		props = &AlertsTopicProps{}
	}
	name := AlertsTopic
	if props.TopicName != nil {
		name = *props.TopicName
	}
	topic := awssns.NewTopic(scope, jsii.String(id), &awssns.TopicProps{
		TopicName:        jsii.String(name),
		DisplayName:      jsii.String("MercadoFresco alertas"),
		MasterKey:        props.Key,
		EnforceSSL:       jsii.Bool(true),
		SignatureVersion: jsii.String("2"),
	})
	if props.Key == nil {
		awscdk.Annotations_Of(topic).AddError(jsii.String("platform: the alerts topic needs the data key (CloudWatch cannot publish to a topic encrypted with the AWS-managed SNS key)"))
	}
	stack := awscdk.Stack_Of(scope)
	// The topic policy the CDK writes for enforceSSL replaces SNS's default
	// one, so CloudWatch's permission to publish must be stated.
	topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("AllowCloudWatchAlarms"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  jsii.Strings(*topic.TopicArn()),
		Conditions: &map[string]interface{}{
			"StringEquals": map[string]interface{}{"aws:SourceAccount": stack.Account()},
		},
	}))
	// Only CloudWatch alarms publish alerts (constructs/producers): a rule
	// that publishes to it is admitted with
	// producers.ForTopic(alerts).AdmitRule(rule).
	producers.ForTopic(topic).AdmitAlarms()
	if props.Email != "" {
		topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(props.Email), nil))
	}
	return topic
}

// EventBusProps configures NewEventBus.
type EventBusProps struct {
	// EventBusName is the physical name. Nil means EventBusName.
	EventBusName *string
	// ArchiveRetentionDays is how long the archive keeps events for replay.
	// Zero keeps them forever.
	ArchiveRetentionDays float64
	// Key encrypts the bus's events at rest, and the archive's (the data
	// key). Required: the events carry customer and order data.
	Key awskms.IKey
}

// NewEventBus creates `bus-mercadofresco` with an archive of every event
// published to it, so a broken consumer's events can be replayed after the
// fix (replays are unordered; consumers are idempotent). The bus and the
// archive are encrypted with the data key, and the bus's resource policy
// admits PutEvents only from principals of this account (and denies
// everyone else explicitly, so a later Allow cannot open it by mistake).
func NewEventBus(scope constructs.Construct, id string, props *EventBusProps) (awsevents.EventBus, awsevents.Archive) {
	if props == nil {
		props = &EventBusProps{}
	}
	name := EventBusName
	if props.EventBusName != nil {
		name = *props.EventBusName
	}
	stack := awscdk.Stack_Of(scope)
	bus := awsevents.NewEventBus(scope, jsii.String(id), &awsevents.EventBusProps{
		EventBusName: jsii.String(name),
		Description:  jsii.String("MercadoFresco domain events (orders, stock, carts)."),
		KmsKey:       props.Key,
	})
	if props.Key == nil {
		awscdk.Annotations_Of(bus).AddError(jsii.String("platform: the event bus needs the data key (its events carry customer and order data)"))
	}
	bus.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("ProductoresDeEstaCuenta"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewAccountRootPrincipal()},
		Actions:    jsii.Strings("events:PutEvents"),
		Resources:  jsii.Strings(*bus.EventBusArn()),
	}))
	bus.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("NadieDeFuera"),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("events:PutEvents"),
		Resources:  jsii.Strings(*bus.EventBusArn()),
		Conditions: &map[string]interface{}{
			"StringNotEquals": map[string]interface{}{"aws:PrincipalAccount": stack.Account()},
		},
	}))
	// awsevents.NewArchive, not bus.Archive: in aws-cdk-lib 2.276.0
	// EventBus.archive() does not pass KmsKey on (the archive would be
	// encrypted with an AWS-owned key: KmsKeyIdentifier ""). Archive adds
	// the key policy statements EventBridge needs for it, naming the bus's
	// ARN: given as a literal (built from the name) rather than the bus's
	// Fn::GetAtt, which would make the key depend on the bus that depends
	// on the key (a cycle CloudFormation refuses).
	busRef := awsevents.EventBus_FromEventBusArn(scope, jsii.String(id+"Ref"), stack.FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("events"), Resource: jsii.String("event-bus"), ResourceName: jsii.String(name),
	}))
	archiveProps := &awsevents.ArchiveProps{
		SourceEventBus: busRef,
		ArchiveName:    jsii.String(name + "-archivo"),
		Description:    jsii.String("Every event of " + name + ", for replay after a consumer fix."),
		EventPattern: &awsevents.EventPattern{
			Account: jsii.Strings(*stack.Account()),
		},
		KmsKey: props.Key,
	}
	if props.ArchiveRetentionDays > 0 {
		archiveProps.Retention = awscdk.Duration_Days(jsii.Number(props.ArchiveRetentionDays))
	}
	archive := awsevents.NewArchive(bus, jsii.String("Archive"), archiveProps)
	archive.Node().AddDependency(bus)
	return bus, archive
}
