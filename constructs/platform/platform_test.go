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
