// Package platform makes what every other part of MercadoFresco uses, the
// sources of the platform context (core.Context): the customer-managed data
// key alias/mercadofresco-datos with its policy and its watch, the alarm
// topic alertas-mercadofresco, and the event bus bus-mercadofresco with its
// archive. docs/design.md#data-key.
package platform

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/constructs/queues"
)

// EventBridgeConnectionsTag is the tag (value "true") without which
// EventBridge refuses a customer managed key for a connection.
const EventBridgeConnectionsTag = "EventBridgeApiDestinations"

// SPEC names of the platform resources (environments add their suffix).
const (
	DataKeyAlias = "alias/mercadofresco-datos"
	AlertsTopic  = "alertas-mercadofresco"
	EventBusName = "bus-mercadofresco"
)

// DataKeyProps configures NewDataKey. DeploymentRoleArn, Administrators and
// BreakGlassRoleArn are required: a key policy that names nobody is the
// CDK's default one, which lets every IAM administrator of the account do
// anything with the key (docs/design.md#data-key).
type DataKeyProps struct {
	// Context's RemovalPolicy applies to the key, mapped by observability.RemovalFor:
	// empty and SNAPSHOT mean RETAIN (a destroyed key makes every byte it
	// encrypted unreadable, snapshots included). DESTROY also lets the
	// deployment role schedule the key's deletion (the stack's deletion
	// does).
	core.Context
	// Alias of the key, e.g. "alias/mercadofresco-datos-dev". Nil means
	// DataKeyAlias.
	Alias *string
	// DeploymentRoleArn is the role CloudFormation deploys the stacks with
	// (DeploymentRoleArn of the stack, for the CDK bootstrap's). It
	// administers the key: KMS refuses a key policy that would leave the
	// principal setting it unable to set it again.
	DeploymentRoleArn string
	// Administrators are the ARNs of the key's other administrators
	// (config Roles.KeyAdmin): policy, rotation, tags, aliases, never use.
	// At least one; each must exist when the policy is set (KMS refuses
	// principals it cannot resolve).
	Administrators []string
	// BreakGlassRoleArn is the one principal (besides the deployment role
	// when RemovalPolicy is DESTROY) that may schedule the key's deletion or
	// disable it (config Roles.BreakGlass).
	BreakGlassRoleArn string
}

// DataKeyServices are the services that encrypt the app's data with the
// data key on a caller's behalf: those of every resource type the templates
// encrypt with it (queues, topics, tables, secrets, the Aurora cluster,
// the state machine, the bus, log groups, function environments, the cache,
// the carts pipe;
// test/ TestDataKeyPolicySeparatesAdministrationFromUse checks the list
// against the templates).
func DataKeyServices() []string {
	return []string{"dynamodb", "elasticache", "events", "lambda", "logs", "pipes", "rds", "secretsmanager", "sns", "sqs", "states"}
}

// KeyAdministrationActions are what the key's administrators may do: AWS's
// "key administrators" set without any cryptographic action and without
// kms:CreateGrant (a grant is a way to use the key), so administering the
// key never reads its data; and without kms:PutKeyPolicy, kms:Disable*
// (DisableKey, DisableKeyRotation) and kms:Delete* but DeleteAlias, so an
// administrator cannot remove the statements that keep deletion, disabling
// and rotation to the break-glass role. The policy changes only through the
// deployment role (KeyPolicyActions): docs/README-security.md.
func KeyAdministrationActions() []string {
	return []string{
		"kms:CreateAlias", "kms:DeleteAlias", "kms:Describe*", "kms:Enable*", "kms:List*", "kms:Update*",
		"kms:Revoke*", "kms:Get*", "kms:TagResource", "kms:UntagResource",
		"kms:ScheduleKeyDeletion", "kms:CancelKeyDeletion", "kms:RotateKeyOnDemand",
	}
}

// KeyPolicyActions are the deployment role's only actions beyond
// administration: CloudFormation sets the key's policy as that role (and
// KMS's lockout check requires the principal that sets it to keep it).
func KeyPolicyActions() []string { return []string{"kms:PutKeyPolicy"} }

// BreakGlassActions are reserved to the break-glass role: every other
// principal is denied them explicitly.
func BreakGlassActions() []string {
	return []string{"kms:ScheduleKeyDeletion", "kms:DisableKey", "kms:DisableKeyRotation"}
}

// KeyUseActions are the cryptographic actions this account's principals
// may ask the key for through DataKeyServices.
func KeyUseActions() []string {
	return []string{"kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"}
}

// Statement ids of the data key's policy (tests and reviews find them by id).
const (
	SidKeyAdministration = "KeyAdministration"
	SidKeyPolicy         = "KeyPolicyThroughTheDeploy"
	SidKeyUse            = "KeyUseThroughServices"
	SidKeyGrants         = "KeyGrantsForServiceResources"
	SidKeyBreakGlass     = "BreakGlassDeletesOrDisables"
	SidKeyDeletion       = "OnlyBreakGlassDeletesOrDisables"
	SidKeyGrantsOnly     = "NoGrantsButForAWSResources"
)

// NewDataKey creates the customer-managed key that encrypts MercadoFresco's
// data at rest (queues, topics, tables, logs, databases). Rotation is on.
// Its policy is its own (the CDK's default statement, kms:* for the
// account, is not there):
//
//   - administration (KeyAdministrationActions) by the deployment role and
//     the Administrators, who cannot use the key, and the policy
//     (KeyPolicyActions) by the deployment role only;
//   - use (KeyUseActions, and kms:CreateGrant for AWS resources) by this
//     account's principals, through IAM, only via DataKeyServices and only from
//     this account;
//   - BreakGlassActions (deletion, disabling, rotation off) for
//     BreakGlassRoleArn, and an explicit Deny of them to every other principal (but the
//     deployment role when the key is destroyed with its stack);
//   - the AWS services that act without an IAM role of ours (CloudWatch
//     alarms publishing to encrypted topics, SNS and EventBridge delivering
//     to encrypted queues, CloudWatch Logs encrypting log groups).
//
// Missing required props are synthesis errors (the key is still built).
func NewDataKey(scope constructs.Construct, id string, props *DataKeyProps) awskms.Key {
	if props == nil {
		props = &DataKeyProps{}
	}
	alias := *cmp.Or(props.Alias, jsii.String(DataKeyAlias))
	keyRemoval := observability.RemovalFor(props.RemovalPolicy, observability.Data)
	stack := awscdk.Stack_Of(scope)
	policy := awsiam.NewPolicyDocument(nil)
	key := awskms.NewKey(scope, jsii.String(id), &awskms.KeyProps{
		Alias:             jsii.String(alias),
		Description:       jsii.String("MercadoFresco data at rest: queues, topics, tables, logs and databases."),
		EnableKeyRotation: jsii.Bool(true),
		RemovalPolicy:     keyRemoval,
		PendingWindow:     awscdk.Duration_Days(jsii.Number(30)),
		// The given policy replaces the CDK's default (kms:* for the
		// account root) under @aws-cdk/aws-kms:defaultKeyPolicies, on in v2.
		Policy: policy,
	})
	v := core.Check(key, "platform.NewDataKey")
	isArn := func(s string) bool { return strings.HasPrefix(s, "arn:") || *awscdk.Token_IsUnresolved(jsii.String(s)) }
	v.If(!isArn(props.DeploymentRoleArn), "DeploymentRoleArn %q is not an ARN: the role that deploys the key must administer it", props.DeploymentRoleArn)
	v.If(len(props.Administrators) == 0, "Administrators is required: name the key administrator role (config Roles.KeyAdmin)")
	for _, a := range props.Administrators {
		v.If(!isArn(a), "administrator %q is not an ARN", a)
	}
	v.If(!isArn(props.BreakGlassRoleArn), "BreakGlassRoleArn %q is not an ARN: name the one role that may delete or disable the key (config Roles.BreakGlass)", props.BreakGlassRoleArn)
	v.If(props.BreakGlassRoleArn != "" && slices.Contains(props.Administrators, props.BreakGlassRoleArn),
		"BreakGlassRoleArn %q is also an administrator: the break-glass role must be a role of its own", props.BreakGlassRoleArn)
	var admins []awsiam.IPrincipal
	for _, a := range append([]string{props.DeploymentRoleArn}, props.Administrators...) {
		if isArn(a) {
			admins = append(admins, awsiam.NewArnPrincipal(jsii.String(a)))
		}
	}
	if len(admins) == 0 {
		// A stand-in so the policy is whole; synthesis fails on the errors.
		admins = append(admins, awsiam.NewArnPrincipal(jsii.String(fmt.Sprintf("arn:%s:iam::%s:role/missing-key-administrator", *stack.Partition(), *stack.Account()))))
	}
	var viaServices []*string
	for _, svc := range DataKeyServices() {
		viaServices = append(viaServices, jsii.String(fmt.Sprintf("%s.%s.amazonaws.com", svc, *stack.Region())))
	}
	policy.AddStatements(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String(SidKeyAdministration),
		Principals: &admins,
		Actions:    jsii.Strings(KeyAdministrationActions()...),
		Resources:  jsii.Strings("*"),
	}))
	deployActions := KeyPolicyActions()
	if keyRemoval == awscdk.RemovalPolicy_DESTROY {
		// The key is destroyed with its stack, as the deployment role.
		deployActions = append(deployActions, "kms:DisableKey")
	}
	policy.AddStatements(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String(SidKeyPolicy),
		Principals: &[]awsiam.IPrincipal{admins[0]},
		Actions:    jsii.Strings(deployActions...),
		Resources:  jsii.Strings("*"),
	}))
	thisAccount := map[string]interface{}{"kms:CallerAccount": stack.Account(), "kms:ViaService": viaServices}
	policy.AddStatements(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String(SidKeyUse),
		Principals: &[]awsiam.IPrincipal{awsiam.NewAccountRootPrincipal()},
		Actions:    jsii.Strings(KeyUseActions()...),
		Resources:  jsii.Strings("*"),
		Conditions: &map[string]interface{}{"StringEquals": thisAccount},
	}))
	// Services that store data (Lambda, RDS, ElastiCache, DynamoDB, Secrets
	// Manager) create grants on the key for the resource they manage.
	policy.AddStatements(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String(SidKeyGrants),
		Principals: &[]awsiam.IPrincipal{awsiam.NewAccountRootPrincipal()},
		Actions:    jsii.Strings("kms:CreateGrant", "kms:ListGrants", "kms:RevokeGrant"),
		Resources:  jsii.Strings("*"),
		Conditions: &map[string]interface{}{
			"StringEquals": thisAccount,
			"Bool":         map[string]interface{}{"kms:GrantIsForAWSResource": "true"},
		},
	}))
	// And nobody else creates grants: a Deny no later Allow (a statement a
	// construct appends, as the CDK's Secret does) can widen. AWS services
	// acting for a resource, or as themselves, are not refused.
	policy.AddStatements(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String(SidKeyGrantsOnly),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("kms:CreateGrant"),
		Resources:  jsii.Strings("*"),
		Conditions: &map[string]interface{}{
			"BoolIfExists": map[string]interface{}{"kms:GrantIsForAWSResource": "false", "aws:PrincipalIsAWSService": "false"},
		},
	}))
	// The break-glass role is no administrator: this is all it may do.
	breakGlass := props.BreakGlassRoleArn
	if !isArn(breakGlass) {
		breakGlass = fmt.Sprintf("arn:%s:iam::%s:role/missing-break-glass", *stack.Partition(), *stack.Account())
	}
	policy.AddStatements(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String(SidKeyBreakGlass),
		Principals: &[]awsiam.IPrincipal{awsiam.NewArnPrincipal(jsii.String(breakGlass))},
		Actions:    jsii.Strings(BreakGlassActions()...),
		Resources:  jsii.Strings("*"),
	}))
	mayDelete := []*string{jsii.String(breakGlass)}
	if keyRemoval == awscdk.RemovalPolicy_DESTROY {
		// The stack's deletion schedules the key's deletion as the
		// deployment role; without this `cdk destroy` fails.
		mayDelete = append(mayDelete, jsii.String(props.DeploymentRoleArn))
	}
	policy.AddStatements(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String(SidKeyDeletion),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings(BreakGlassActions()...),
		Resources:  jsii.Strings("*"),
		Conditions: &map[string]interface{}{
			"ArnNotLike": map[string]interface{}{"aws:PrincipalArn": mayDelete},
		},
	}))
	// EventBridge encrypts a connection's credentials (the ERP webhook's,
	// constructs/events) with a customer managed key only when the key
	// carries this tag.
	awscdk.Tags_Of(key).Add(jsii.String(EventBridgeConnectionsTag), jsii.String("true"), nil)

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
	// The CDK grants delivery.logs (a state machine's encrypted log delivery)
	// kms:Decrypt* without a condition; this Deny confines every service
	// principal that may send aws:SourceAccount to this account's calls
	// (IfExists: a call without the key is not refused, so log delivery
	// cannot break on it). docs/design.md#data-key.
	key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String(SidServicesOnlyForThisAccount),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("delivery.logs.amazonaws.com"), nil)},
		Actions:    jsii.Strings("kms:Decrypt*", "kms:Encrypt*", "kms:GenerateDataKey*", "kms:ReEncrypt*"),
		Resources:  jsii.Strings("*"),
		Conditions: &map[string]interface{}{
			"StringNotEqualsIfExists": map[string]interface{}{"aws:SourceAccount": stack.Account()},
		},
	}), jsii.Bool(false))
	return key
}

// SidServicesOnlyForThisAccount is the data key's Deny of service calls
// made on behalf of another account (aws:SourceAccount).
const SidServicesOnlyForThisAccount = "ServiciosSoloParaEstaCuenta"

// AlertsTopicProps configures NewAlertsTopic. The Context's DataKey
// encrypts the topic; required: an alarm topic with an AWS-managed key
// cannot receive CloudWatch alarms.
type AlertsTopicProps struct {
	core.Context
	// TopicName is the physical name. Nil means AlertsTopic.
	TopicName *string
	// Email, when not empty, is subscribed to the topic.
	Email string
}

// NewAlertsTopic creates `alertas-mercadofresco`, the topic every alarm of
// the project targets: encrypted with the data key, TLS enforced, publishable
// by this account's CloudWatch alarms of its region and by nobody else
// (a known-producers guard, constructs/queues).
func NewAlertsTopic(scope constructs.Construct, id string, props *AlertsTopicProps) awssns.Topic {
	if props == nil {
		props = &AlertsTopicProps{}
	}
	name := *cmp.Or(props.TopicName, jsii.String(AlertsTopic))
	topic := newAlarmTopic(scope, id, name, "MercadoFresco alertas", props.DataKey, props.Email)
	core.Check(topic, "platform").If(props.DataKey == nil, "the alerts topic needs the data key (CloudWatch cannot publish to a topic encrypted with the AWS-managed SNS key)")
	return topic
}

// newAlarmTopic is a topic that CloudWatch alarms of this account and
// region publish to (alertas-mercadofresco, and the key watch's own
// topic): TLS only for every call (RequireTLS), encrypted with key when it is not nil, CloudWatch's
// permission to publish stated (the topic policy the CDK writes for
// enforceSSL replaces SNS's default one) and the alarms admitted past the
// topic's known-producers guard (constructs/queues; a rule that
// publishes to it is admitted beside its target), email subscribed when
// not empty.
func newAlarmTopic(scope constructs.Construct, id, name, displayName string, key awskms.IKey, email string) awssns.Topic {
	topic := awssns.NewTopic(scope, jsii.String(id), &awssns.TopicProps{
		TopicName:        jsii.String(name),
		DisplayName:      jsii.String(displayName),
		MasterKey:        key,
		EnforceSSL:       jsii.Bool(true),
		SignatureVersion: jsii.String("2"),
	})
	topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("AllowCloudWatchAlarms"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  jsii.Strings(*topic.TopicArn()),
		Conditions: &map[string]interface{}{
			"StringEquals": map[string]interface{}{"aws:SourceAccount": awscdk.Stack_Of(scope).Account()},
		},
	}))
	queues.RequireTLS(topic)
	queues.ForTopic(topic).AdmitAlarms()
	if email != "" {
		topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(email), nil))
	}
	return topic
}

// EventBusProps configures NewEventBus. The Context's DataKey encrypts the
// bus's events at rest, and the archive's; required: the events carry
// customer and order data.
type EventBusProps struct {
	core.Context
	// EventBusName is the physical name. Nil means EventBusName.
	EventBusName *string
	// ArchiveRetention is how long the archive keeps events for replay
	// (whole days). Nil keeps them forever.
	ArchiveRetention awscdk.Duration
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
	name := *cmp.Or(props.EventBusName, jsii.String(EventBusName))
	stack := awscdk.Stack_Of(scope)
	bus := awsevents.NewEventBus(scope, jsii.String(id), &awsevents.EventBusProps{
		EventBusName: jsii.String(name),
		Description:  jsii.String("MercadoFresco domain events (orders, stock, carts)."),
		KmsKey:       props.DataKey,
	})
	core.Check(bus, "platform").If(props.DataKey == nil, "the event bus needs the data key (its events carry customer and order data)")
	arn := queues.BusArn(bus)
	queues.BusPolicy(bus).AddStatements(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("ProductoresDeEstaCuenta"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewAccountRootPrincipal()},
		Actions:    jsii.Strings("events:PutEvents"),
		Resources:  jsii.Strings(*arn),
	}), awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("NadieDeFuera"),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("events:PutEvents"),
		Resources:  jsii.Strings(*arn),
		Conditions: &map[string]interface{}{
			"StringNotEquals": map[string]interface{}{"aws:PrincipalAccount": stack.Account()},
		},
	}))
	// awsevents.NewArchive, not bus.Archive: in aws-cdk-lib 2.276.0
	// EventBus.archive() does not pass KmsKey on (the archive would be
	// encrypted with an AWS-owned key: KmsKeyIdentifier ""). Archive adds
	// the key policy statements EventBridge needs for it, naming the bus's
	// ARN built from the name (queues.BusArn) rather than the bus's
	// Fn::GetAtt, which would make the key depend on the bus that depends
	// on the key (a cycle CloudFormation refuses).
	busRef := awsevents.EventBus_FromEventBusArn(scope, jsii.String(id+"Ref"), arn)
	archiveProps := &awsevents.ArchiveProps{
		SourceEventBus: busRef,
		ArchiveName:    jsii.String(name + "-archivo"),
		Description:    jsii.String("Every event of " + name + ", for replay after a consumer fix."),
		EventPattern: &awsevents.EventPattern{
			Account: jsii.Strings(*stack.Account()),
		},
		KmsKey:    props.DataKey,
		Retention: props.ArchiveRetention,
	}
	archive := awsevents.NewArchive(bus, jsii.String("Archive"), archiveProps)
	archive.Node().AddDependency(bus)
	return bus, archive
}
