package events_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/events"
	"github.com/mercadofresco/integration/internal/cdktest"
)

func TestAPIDestinationRateLimitedWithDLQ(t *testing.T) {
	p := cdktest.NewPlatform("ERP")
	awscdk.Aspects_Of(p.App).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	cdktest.Check(p.App)
	bus := awsevents.NewEventBus(p.Stack, jsii.String("Bus"), nil)
	events.NewERPDestination(p.Stack, "ERP", &events.ERPProps{
		Bus: bus, Endpoint: "https://erp.example/webhooks/pedidos", RateLimitPerSecond: 10,
		Context: core.Context{DataKey: p.Key, Alerts: p.Alerts},
	})
	tpl := assertions.Template_FromStack(p.Stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::Events::ApiDestination"), map[string]any{
		"InvocationEndpoint": "https://erp.example/webhooks/pedidos", "InvocationRateLimitPerSecond": 10, "HttpMethod": "POST",
	})
	// The key comes from our secret (a dynamic reference), never the template.
	tpl.HasResourceProperties(jsii.String("AWS::Events::Connection"), map[string]any{
		"AuthorizationType": "API_KEY",
		"AuthParameters": map[string]any{"ApiKeyAuthParameters": map[string]any{
			"ApiKeyName":  events.APIKeyHeader,
			"ApiKeyValue": map[string]any{"Fn::Join": assertions.Match_ArrayWith(&[]any{assertions.Match_ArrayWith(&[]any{assertions.Match_StringLikeRegexp(jsii.String("resolve:secretsmanager"))})})},
		}},
	})
	tpl.HasResourceProperties(jsii.String("AWS::SecretsManager::Secret"), map[string]any{"KmsKeyId": assertions.Match_AnyValue()})
	// The connection's own secret is encrypted with the data key too.
	keyArn := map[string]any{"Fn::GetAtt": []any{*p.Stack.GetLogicalId(p.Key.Node().DefaultChild().(awscdk.CfnElement)), "Arn"}}
	tpl.HasResourceProperties(jsii.String("AWS::Events::Connection"), map[string]any{"KmsKeyIdentifier": keyArn})
	rules := tpl.FindResources(jsii.String("AWS::Events::Rule"), nil)
	for _, r := range *rules {
		b, _ := json.Marshal(r)
		s := string(b)
		for _, want := range []string{`"MaximumRetryAttempts":8`, `"MaximumEventAgeInSeconds":3600`, `"DeadLetterConfig"`, `"Idempotency-Key":"$.detail.id_evento"`, `"prefix":"Pedido"`, `"source":["mercadofresco.tienda"]`, `"intento":[{"exists":false}]`} {
			if !strings.Contains(s, want) {
				t.Errorf("rule misses %s: %s", want, s)
			}
		}
		// The ERP never receives the card token nor the e-mail.
		for _, never := range []string{"token_tarjeta", "email"} {
			if strings.Contains(s, never) {
				t.Errorf("rule sends %s to the ERP: %s", never, s)
			}
		}
	}
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{"MetricName": "FailedInvocations", "Namespace": "AWS/Events"})
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{"MetricName": "InvocationsSentToDlq", "Namespace": "AWS/Events"})
	if errs := cdktest.Errors(p.Stack); len(errs) > 0 {
		t.Fatalf("synthesis errors:\n%s", strings.Join(errs, "\n"))
	}
}

func TestERPInvalidProps(t *testing.T) {
	p := cdktest.NewPlatform("ERPMal")
	events.NewERPDestination(p.Stack, "ERP", &events.ERPProps{Endpoint: "http://erp", RateLimitPerSecond: 500})
	errs := cdktest.Errors(p.Stack)
	for _, want := range []string{"https URL", "RateLimitPerSecond", "Bus is required"} {
		cdktest.RequireContains(t, errs, want)
	}
}
