package datastore_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/stacks"
)

// TestDataStackPerEnvironment checks the data stack as every environment
// synthesises it: physical name, deletion protection and removal policy
// from config, and the platform's key and alerts topic.
func TestDataStackPerEnvironment(t *testing.T) {
	envs, err := config.All()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		name   string
		dp     bool
		policy string
	}{
		"dev":     {"mercadofresco-idempotencia-dev", false, "Delete"},
		"staging": {"mercadofresco-idempotencia-staging", false, "Retain"},
		"prod":    {"mercadofresco-idempotencia", true, "Retain"},
	}
	for _, env := range envs {
		t.Run(env.Name, func(t *testing.T) {
			w, ok := want[env.Name]
			if !ok {
				t.Fatalf("no expectation for environment %q", env.Name)
			}
			app := awscdk.NewApp(nil)
			platform := stacks.NewPlatformStack(app, env)
			data := stacks.NewDataStack(app, platform.Shared(env, nil))
			if data.Table == nil {
				t.Fatal("DataStack.Table not set")
			}
			tpl := assertions.Template_FromStack(data.Stack, nil)
			// The idempotency table and the stock table (datastore.NewStock).
			tpl.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(2))
			tpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
				"DeletionPolicy":      w.policy,
				"UpdateReplacePolicy": w.policy,
				"Properties": map[string]any{
					"TableName":                        w.name,
					"DeletionProtectionEnabled":        w.dp,
					"BillingMode":                      "PAY_PER_REQUEST",
					"TimeToLiveSpecification":          map[string]any{"AttributeName": "expira_en", "Enabled": true},
					"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
					"SSESpecification": map[string]any{
						"SSEEnabled": true, "SSEType": "KMS",
						// The platform stack's data key, by cross-stack reference.
						"KMSMasterKeyId": map[string]any{"Fn::ImportValue": assertions.Match_StringLikeRegexp(jsii.String("MercadoFresco-Platform-" + env.Name + ":.*DataKey.*"))},
					},
				},
			})
			alarms := *tpl.FindResources(jsii.String("AWS::CloudWatch::Alarm"), nil)
			if len(alarms) != 4 {
				t.Fatalf("%d alarms, want 4 (throttles and system errors of each table)", len(alarms))
			}
			for id, a := range alarms {
				actions := toJSON(t, (*a)["Properties"].(map[string]any)["AlarmActions"])
				if !strings.Contains(actions, "Fn::ImportValue") || !strings.Contains(actions, "Alerts") {
					t.Errorf("alarm %s does not notify the platform's alerts topic: %s", id, actions)
				}
			}
			tpl.HasOutput(jsii.String("IdempotencyTableName"), map[string]any{})
			if errs := assertions.Annotations_FromStack(data.Stack).FindError(jsii.String("*"), assertions.Match_AnyValue()); len(*errs) != 0 {
				t.Fatalf("errors: %s", toJSON(t, errs))
			}
		})
	}
}
