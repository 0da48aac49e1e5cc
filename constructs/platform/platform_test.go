package platform_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/platform"
	"github.com/mercadofresco/integration/internal/cdktest"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

const (
	keyAdmin   = "arn:aws:iam::" + cdktest.Account + ":role/administrador-claves"
	breakGlass = "arn:aws:iam::" + cdktest.Account + ":role/emergencia"
	deployer   = "arn:aws:iam::" + cdktest.Account + ":role/despliegue"
)

func keyProps(removal awscdk.RemovalPolicy) *platform.DataKeyProps {
	return &platform.DataKeyProps{Context: core.Context{RemovalPolicy: removal}, DeploymentRoleArn: deployer, Administrators: []string{keyAdmin}, BreakGlassRoleArn: breakGlass}
}

// The zero values of the optional props are the safe defaults: the SPEC
// alias, rotation on, the key retained when the stack goes.
func TestDataKeyDefaults(t *testing.T) {
	stack := cdktest.NewStack("S")
	platform.NewDataKey(stack, "Key", keyProps(""))
	if errs := cdktest.Errors(stack); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	tpl := assertions.Template_FromStack(stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::KMS::Alias"), map[string]any{"AliasName": platform.DataKeyAlias})
	tpl.HasResource(jsii.String("AWS::KMS::Key"), map[string]any{
		"Properties": map[string]any{"EnableKeyRotation": true, "PendingWindowInDays": 30,
			// Without it EventBridge refuses the key for the ERP connection.
			"Tags": assertions.Match_ArrayWith(&[]any{map[string]any{"Key": platform.EventBridgeConnectionsTag, "Value": "true"}})},
		"DeletionPolicy": "Retain",
	})
}

func TestAlertsTopicWithoutKeyIsAnError(t *testing.T) {
	stack := cdktest.NewStack("S")
	platform.NewAlertsTopic(stack, "Alerts", nil)
	errs := assertions.Annotations_FromStack(stack).FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("needs the data key")))
	if len(*errs) != 1 {
		t.Fatalf("want one error about the missing key, got %d", len(*errs))
	}
}

// The bus and its archive are encrypted with the data key, the key lets
// EventBridge use it for exactly this bus, and the bus admits PutEvents
// only from this account.
func TestEventBusEncryptedAndClosed(t *testing.T) {
	stack := cdktest.NewStack("S")
	key := platform.NewDataKey(stack, "Key", keyProps(""))
	platform.NewEventBus(stack, "Bus", &platform.EventBusProps{Context: core.Context{DataKey: key}, ArchiveRetention: awscdk.Duration_Days(jsii.Number(30))})
	tpl := assertions.Template_FromStack(stack, nil)
	keyArn := map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^Key")), "Arn"}}
	tpl.HasResourceProperties(jsii.String("AWS::Events::EventBus"), map[string]any{"Name": platform.EventBusName, "KmsKeyIdentifier": keyArn})
	tpl.HasResource(jsii.String("AWS::Events::Archive"), map[string]any{
		"Properties": map[string]any{"KmsKeyIdentifier": keyArn, "RetentionDays": 30, "ArchiveName": platform.EventBusName + "-archivo"},
		"DependsOn":  assertions.Match_ArrayWith(&[]any{assertions.Match_StringLikeRegexp(jsii.String("^Bus"))}),
	})
	busArn := assertions.Match_ObjectLike(&map[string]any{"Fn::Join": assertions.Match_ArrayWith(&[]any{
		assertions.Match_ArrayWith(&[]any{assertions.Match_StringLikeRegexp(jsii.String(":event-bus/" + platform.EventBusName + "$"))}),
	})})
	tpl.HasResourceProperties(jsii.String("AWS::KMS::Key"), map[string]any{
		"KeyPolicy": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
			"Principal": map[string]any{"Service": "events.amazonaws.com"},
			"Condition": map[string]any{"StringEquals": assertions.Match_ObjectLike(&map[string]any{"kms:EncryptionContext:aws:events:event-bus:arn": busArn})},
		})})},
	})
	// The statements are the bus's own Policy, naming the bus by its ARN
	// built from the name: no AWS::Events::EventBusPolicy resource, whose
	// deprecated Principal cdk-nag reads with a warning on every synthesis.
	tpl.HasResourceProperties(jsii.String("AWS::Events::EventBus"), map[string]any{"Policy": map[string]any{"Statement": []any{
		assertions.Match_ObjectLike(&map[string]any{"Effect": "Allow", "Action": "events:PutEvents", "Principal": map[string]any{"AWS": assertions.Match_AnyValue()}, "Resource": busArn}),
		assertions.Match_ObjectLike(&map[string]any{
			"Effect": "Deny", "Action": "events:PutEvents", "Principal": map[string]any{"AWS": "*"}, "Resource": busArn,
			"Condition": map[string]any{"StringNotEquals": map[string]any{"aws:PrincipalAccount": cdktest.Account}},
		}),
	}}})
	tpl.ResourceCountIs(jsii.String("AWS::Events::EventBusPolicy"), jsii.Number(0))
}

func TestEventBusWithoutKeyIsAnError(t *testing.T) {
	stack := cdktest.NewStack("S")
	platform.NewEventBus(stack, "Bus", nil)
	cdktest.RequireContains(t, cdktest.Errors(stack), "event bus needs the data key")
}

// A key policy that names nobody is refused: every required role is
// reported at once, and the key is still built.
func TestDataKeyWithoutRolesIsAnError(t *testing.T) {
	stack := cdktest.NewStack("S")
	if platform.NewDataKey(stack, "Key", nil) == nil {
		t.Fatal("no key")
	}
	errs := cdktest.Errors(stack)
	for _, want := range []string{"DeploymentRoleArn", "Administrators is required", "BreakGlassRoleArn"} {
		cdktest.RequireContains(t, errs, want)
	}
	stack = cdktest.NewStack("S")
	props := keyProps("")
	props.BreakGlassRoleArn = keyAdmin
	platform.NewDataKey(stack, "Key", props)
	cdktest.RequireContains(t, cdktest.Errors(stack), "is also an administrator")
}

type statement struct {
	Sid       string
	Effect    string
	Principal map[string]any
	Action    any
	Condition map[string]map[string]any
}

func keyStatements(t *testing.T, stack awscdk.Stack) map[string]statement {
	t.Helper()
	raw, _ := json.Marshal(assertions.Template_FromStack(stack, nil).FindResources(jsii.String("AWS::KMS::Key"), nil))
	var keys map[string]struct {
		Properties struct {
			KeyPolicy struct{ Statement []statement }
		}
	}
	if err := json.Unmarshal(raw, &keys); err != nil || len(keys) != 1 {
		t.Fatalf("keys: %v %s", err, raw)
	}
	out := map[string]statement{}
	for _, k := range keys {
		for i, st := range k.Properties.KeyPolicy.Statement {
			id := st.Sid
			if id == "" {
				id = "#" + string(rune('0'+i))
			}
			out[id] = st
		}
	}
	return out
}

func list(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			b, _ := json.Marshal(e)
			out = append(out, strings.Trim(string(b), `"`))
		}
		return out
	}
	return nil
}

// The key's policy is its own: administration by the deployment role and
// the key administrator without any cryptographic action or grant; use by
// the account through the services only; deletion and disabling for the
// break-glass role alone, denied to everyone else but, when the key is
// destroyed with its stack, the deployment role.
func TestDataKeyPolicyNamesItsAdministrators(t *testing.T) {
	for _, tc := range []struct {
		removal   awscdk.RemovalPolicy
		mayDelete []string
	}{
		{awscdk.RemovalPolicy_RETAIN, []string{breakGlass}},
		{awscdk.RemovalPolicy_SNAPSHOT, []string{breakGlass}},
		{awscdk.RemovalPolicy_DESTROY, []string{breakGlass, deployer}},
	} {
		t.Run(string(tc.removal), func(t *testing.T) {
			stack := cdktest.NewStack("S")
			platform.NewDataKey(stack, "Key", keyProps(tc.removal))
			sts := keyStatements(t, stack)
			for id, st := range sts {
				if slices.Contains(list(st.Action), "kms:*") {
					t.Errorf("%s allows kms:*", id)
				}
			}
			admin := sts[platform.SidKeyAdministration]
			if got := list(admin.Principal["AWS"]); !slices.Equal(got, []string{deployer, keyAdmin}) {
				t.Errorf("administrators %v", got)
			}
			for _, a := range list(admin.Action) {
				for _, crypto := range []string{"Encrypt", "Decrypt", "GenerateDataKey", "ReEncrypt", "CreateGrant", "Create*", "*"} {
					if strings.TrimPrefix(a, "kms:") == crypto || strings.HasPrefix(strings.TrimPrefix(a, "kms:"), crypto) {
						t.Errorf("administrators may %s", a)
					}
				}
			}
			for _, sid := range []string{platform.SidKeyUse, platform.SidKeyGrants} {
				via := list(sts[sid].Condition["StringEquals"]["kms:ViaService"])
				if len(via) != len(platform.DataKeyServices()) || !slices.Contains(via, "sqs.eu-west-1.amazonaws.com") {
					t.Errorf("%s: kms:ViaService %v", sid, via)
				}
				if got := list(sts[sid].Condition["StringEquals"]["kms:CallerAccount"]); !slices.Equal(got, []string{cdktest.Account}) {
					t.Errorf("%s: kms:CallerAccount %v", sid, got)
				}
			}
			if got := list(sts[platform.SidKeyGrants].Condition["Bool"]["kms:GrantIsForAWSResource"]); !slices.Equal(got, []string{"true"}) {
				t.Errorf("grants for any purpose: %v", got)
			}
			// Control Tower's CT.KMS.PR.3: an explicit Deny of every grant
			// that is neither for an AWS resource nor by an AWS service.
			only := sts[platform.SidKeyGrantsOnly]
			if only.Effect != "Deny" || !slices.Equal(list(only.Action), []string{"kms:CreateGrant"}) || !slices.Equal(list(only.Principal["AWS"]), []string{"*"}) ||
				!slices.Equal(list(only.Condition["BoolIfExists"]["kms:GrantIsForAWSResource"]), []string{"false"}) ||
				!slices.Equal(list(only.Condition["BoolIfExists"]["aws:PrincipalIsAWSService"]), []string{"false"}) || len(only.Condition) != 1 {
				t.Errorf("grants statement %+v", only)
			}
			if got := list(sts[platform.SidKeyBreakGlass].Principal["AWS"]); !slices.Equal(got, []string{breakGlass}) {
				t.Errorf("break-glass statement names %v", got)
			}
			deny := sts[platform.SidKeyDeletion]
			if deny.Effect != "Deny" || !slices.Equal(list(deny.Action), platform.BreakGlassActions()) {
				t.Errorf("deletion statement %+v", deny)
			}
			if got := list(deny.Condition["ArnNotLike"]["aws:PrincipalArn"]); !slices.Equal(got, tc.mayDelete) {
				t.Errorf("exempt from the Deny: %v, want %v", got, tc.mayDelete)
			}
		})
	}
}

func TestDeploymentRoleArn(t *testing.T) {
	newApp := func(ctx map[string]any) awscdk.App {
		ctx["@aws-cdk/core:enablePartitionLiterals"] = true
		return awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	}
	env := &awscdk.Environment{Account: jsii.String(cdktest.Account), Region: jsii.String(cdktest.Region)}
	literal := awscdk.NewStack(newApp(map[string]any{}), jsii.String("Literal"), &awscdk.StackProps{Env: env})
	qualified := awscdk.NewStack(newApp(map[string]any{"@aws-cdk/core:bootstrapQualifier": "mf1"}), jsii.String("Qualified"), &awscdk.StackProps{Env: env})
	agnostic := awscdk.NewStack(newApp(map[string]any{}), jsii.String("Agnostic"), nil)
	legacy := awscdk.NewStack(newApp(map[string]any{}), jsii.String("Legacy"), &awscdk.StackProps{Env: env, Synthesizer: awscdk.NewLegacyStackSynthesizer()})
	given := awscdk.NewStack(newApp(map[string]any{}), jsii.String("Given"), &awscdk.StackProps{Env: env, Synthesizer: awscdk.NewDefaultStackSynthesizer(nil)})
	for _, tc := range []struct {
		stack   awscdk.Stack
		want    string
		wantErr bool
	}{
		{literal, "arn:aws:iam::111111111111:role/cdk-hnb659fds-cfn-exec-role-111111111111-eu-west-1", false},
		{qualified, "arn:aws:iam::111111111111:role/cdk-mf1-cfn-exec-role-111111111111-eu-west-1", false},
		{agnostic, "", true},
		{legacy, "", true},
		{given, "", true},
	} {
		got, err := core.DeploymentRoleArn(tc.stack)
		if tc.wantErr != errors.Is(err, core.ErrNoDeploymentRole) || got != tc.want {
			t.Errorf("%s: %q, %v; want %q (error %v)", *tc.stack.StackName(), got, err, tc.want, tc.wantErr)
		}
	}
	// Without partition literals the ARN is the template's partition.
	got, err := core.DeploymentRoleArn(cdktest.NewStack("S"))
	if err != nil || !*awscdk.Token_IsUnresolved(jsii.String(got)) {
		t.Errorf("without partition literals: %q, %v; want a token", got, err)
	}
}

// The watch: a rule on the default bus for the key's calls, two SNS
// targets with the rule's DLQ (SQS-managed) and retry policy, topics that
// admit this rule only, a topic of its own without the data key, and
// nothing added to the data key's policy.
func TestKeyWatch(t *testing.T) {
	const trail = "arn:aws:cloudtrail:eu-west-1:444444444444:trail/organizacion"
	stack := cdktest.NewStack("S")
	key := platform.NewDataKey(stack, "Key", keyProps(""))
	alerts := platform.NewAlertsTopic(stack, "Alerts", &platform.AlertsTopicProps{Context: core.Context{DataKey: key}})
	before := len(keyStatements(t, stack))
	w := platform.NewKeyWatch(stack, "Watch", &platform.KeyWatchProps{Context: core.Context{DataKey: key, Alerts: alerts}, Email: "guardia@example.com", Trail: trail})
	if errs := cdktest.Errors(stack); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if after := len(keyStatements(t, stack)); after != before {
		t.Errorf("the watch added %d statements to the data key's policy", after-before)
	}
	tpl := assertions.Template_FromStack(stack, nil)
	ruleArn := map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^WatchRule")), "Arn"}}
	dlq := map[string]any{"Arn": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^WatchRuleDeadLetterQueue")), "Arn"}}}
	target := func(topic string) any {
		return assertions.Match_ObjectLike(&map[string]any{
			"Arn": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String(topic))}, "DeadLetterConfig": dlq,
			"RetryPolicy": map[string]any{"MaximumRetryAttempts": 10, "MaximumEventAgeInSeconds": 7200},
		})
	}
	tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
		"Name":         platform.KeyWatchRule,
		"Description":  assertions.Match_StringLikeRegexp(jsii.String(`^CloudTrail \(trail ` + trail + `\)`)),
		"EventBusName": assertions.Match_Absent(),
		"EventPattern": map[string]any{
			"source": []any{"aws.kms"}, "detail-type": []any{"AWS API Call via CloudTrail"},
			"detail": map[string]any{
				"eventSource": []any{"kms.amazonaws.com"},
				"eventName":   []any{"ScheduleKeyDeletion", "DisableKey", "DisableKeyRotation", "PutKeyPolicy", "CancelKeyDeletion"},
				"resources":   map[string]any{"ARN": []any{map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^Key")), "Arn"}}}},
			},
		},
		"Targets": []any{target("^WatchTopic"), target("^Alerts")},
	})
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"QueueName": platform.KeyWatchRuleDLQName, "SqsManagedSseEnabled": true, "KmsMasterKeyId": assertions.Match_Absent(),
	})
	tpl.HasResource(jsii.String("AWS::SNS::Topic"), map[string]any{
		"Properties": map[string]any{"TopicName": platform.KeyAlertsTopic, "KmsMasterKeyId": assertions.Match_Absent()},
		"Metadata": map[string]any{"cdk_nag": map[string]any{"rules_to_suppress": assertions.Match_ArrayWith(&[]any{
			assertions.Match_ObjectLike(&map[string]any{"id": "AwsSolutions-SNS2", "reason": assertions.Match_StringLikeRegexp(jsii.String("cannot encrypt the alert about itself"))}),
		})}},
	})
	tpl.HasResourceProperties(jsii.String("AWS::SNS::Subscription"), map[string]any{
		"Protocol": "email", "Endpoint": "guardia@example.com", "TopicArn": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^WatchTopic"))},
	})
	for _, topic := range []string{"^WatchTopic", "^Alerts"} {
		tpl.HasResourceProperties(jsii.String("AWS::SNS::TopicPolicy"), map[string]any{
			"Topics": []any{map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String(topic))}},
			"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
				"Effect": "Allow", "Principal": map[string]any{"Service": "events.amazonaws.com"}, "Action": "sns:Publish",
				"Condition": map[string]any{"ArnEquals": map[string]any{"aws:SourceArn": ruleArn}},
			})})},
		})
	}
	tpl.HasResourceProperties(jsii.String("AWS::SQS::QueuePolicy"), map[string]any{
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
			"Effect": "Allow", "Principal": map[string]any{"Service": "events.amazonaws.com"}, "Action": "sqs:SendMessage",
			"Condition": map[string]any{"ArnEquals": map[string]any{"aws:SourceArn": ruleArn}},
		})})},
	})
	// The watch's own alarms go to its own topic.
	for _, a := range []any{w.Rule.FailedInvocationsAlarm, w.Rule.SentToDlqAlarm, w.Rule.DeadLetterQueue.Alarm} {
		if a == nil {
			t.Fatal("missing alarm")
		}
	}
	tpl.ResourcePropertiesCountIs(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"AlarmActions": []any{map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^WatchTopic"))}},
	}, jsii.Number(3))

	bad := cdktest.NewStack("S")
	platform.NewKeyWatch(bad, "Watch", nil)
	cdktest.RequireContains(t, cdktest.Errors(bad), "Key is required")
	cdktest.RequireContains(t, cdktest.Errors(bad), "Alerts is required")
	cdktest.RequireContains(t, cdktest.Errors(bad), `KeyWatchProps.Trail (config AuditTrail) "" is not a CloudTrail trail's ARN`)
}

// The send watch: a rule on the default bus for the role's SQS sends
// (CloudTrail data events), naming the trail, alerting the alerts topic,
// which admits the rule; without a role or a trail it is refused.
func TestSendWatch(t *testing.T) {
	const (
		trail   = "arn:aws:cloudtrail:eu-west-1:444444444444:trail/organizacion"
		guardia = "arn:aws:iam::" + cdktest.Account + ":role/guardia"
	)
	stack := cdktest.NewStack("S")
	key := platform.NewDataKey(stack, "Key", keyProps(""))
	alerts := platform.NewAlertsTopic(stack, "Alerts", &platform.AlertsTopicProps{Context: core.Context{DataKey: key}})
	platform.NewKeyWatch(stack, "KeyWatch", &platform.KeyWatchProps{Context: core.Context{DataKey: key, Alerts: alerts}, Trail: trail})
	platform.NewSendWatch(stack, "Watch", &platform.SendWatchProps{Context: core.Context{DataKey: key, Alerts: alerts}, RoleArn: guardia, Trail: trail})
	if errs := cdktest.Errors(stack); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	tpl := assertions.Template_FromStack(stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
		"Name":         platform.SendWatchRule,
		"Description":  assertions.Match_StringLikeRegexp(jsii.String(`^CloudTrail \(trail ` + trail + `, SQS data events\)`)),
		"EventBusName": assertions.Match_Absent(),
		"EventPattern": map[string]any{
			"source": []any{"aws.sqs"}, "detail-type": []any{"AWS API Call via CloudTrail"},
			"detail": map[string]any{
				"eventSource":  []any{"sqs.amazonaws.com"},
				"eventName":    []any{"SendMessage", "SendMessageBatch", "StartMessageMoveTask"},
				"userIdentity": map[string]any{"sessionContext": map[string]any{"sessionIssuer": map[string]any{"arn": []any{guardia}}}},
			},
		},
		"Targets": []any{assertions.Match_ObjectLike(&map[string]any{"Arn": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^Alerts"))}})},
	})
	// Both watches admitted by the alerts topic, each under its own Sid.
	for _, sid := range []string{"AllowKeyWatchRule", "AllowSendWatchRule"} {
		tpl.HasResourceProperties(jsii.String("AWS::SNS::TopicPolicy"), map[string]any{
			"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
				"Sid": sid, "Effect": "Allow", "Action": "sns:Publish",
			})})},
		})
	}

	bad := cdktest.NewStack("S")
	platform.NewSendWatch(bad, "Watch", nil)
	errs := cdktest.Errors(bad)
	cdktest.RequireContains(t, errs, `SendWatchProps.RoleArn "" is not the ARN of a role`)
	cdktest.RequireContains(t, errs, `SendWatchProps.Trail (config AuditTrail) "" is not a CloudTrail trail's ARN`)
}
