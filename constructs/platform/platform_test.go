package platform_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/platform"
	"github.com/mercadofresco/integration/internal/cdktest"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

// The zero-value props are the safe defaults: the SPEC alias, rotation on,
// the key retained when the stack goes.
func TestDataKeyDefaults(t *testing.T) {
	stack := cdktest.NewStack("S")
	platform.NewDataKey(stack, "Key", nil)
	tpl := assertions.Template_FromStack(stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::KMS::Alias"), map[string]any{"AliasName": platform.DataKeyAlias})
	tpl.HasResource(jsii.String("AWS::KMS::Key"), map[string]any{
		"Properties":     map[string]any{"EnableKeyRotation": true, "PendingWindowInDays": 30},
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
	key := platform.NewDataKey(stack, "Key", nil)
	platform.NewEventBus(stack, "Bus", &platform.EventBusProps{Key: key, ArchiveRetentionDays: 30})
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
	tpl.HasResourceProperties(jsii.String("AWS::Events::EventBusPolicy"), map[string]any{
		"Statement": assertions.Match_ObjectLike(&map[string]any{"Effect": "Allow", "Action": "events:PutEvents", "Principal": map[string]any{"AWS": assertions.Match_AnyValue()}}),
	})
	tpl.HasResourceProperties(jsii.String("AWS::Events::EventBusPolicy"), map[string]any{
		"Statement": assertions.Match_ObjectLike(&map[string]any{
			"Effect": "Deny", "Action": "events:PutEvents", "Principal": map[string]any{"AWS": "*"},
			"Condition": map[string]any{"StringNotEquals": map[string]any{"aws:PrincipalAccount": cdktest.Account}},
		}),
	})
}

func TestEventBusWithoutKeyIsAnError(t *testing.T) {
	stack := cdktest.NewStack("S")
	platform.NewEventBus(stack, "Bus", nil)
	cdktest.RequireContains(t, cdktest.Errors(stack), "event bus needs the data key")
}
