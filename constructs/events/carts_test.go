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

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/events"
	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/internal/schematest"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
)

func checked(id string) *cdktest.Platform {
	p := cdktest.NewPlatform(id)
	awscdk.Aspects_Of(p.App).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	cdktest.Check(p.App)
	return p
}

func TestCreatedTablePipeRuleAndQueue(t *testing.T) {
	p := checked("Carritos")
	bus := awsevents.NewEventBus(p.Stack, jsii.String("Bus"), &awsevents.EventBusProps{EventBusName: jsii.String("bus-mercadofresco")})
	events.NewCarts(p.Stack, "Carritos", &events.CartsProps{Bus: bus, Context: core.Context{DataKey: p.Key, Alerts: p.Alerts}, QueueName: jsii.String(events.QueueName)})
	tpl := assertions.Template_FromStack(p.Stack, nil)
	tpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"DeletionPolicy": "Retain",
		"Properties": map[string]any{
			"TableName":                        events.TableName,
			"KeySchema":                        []any{map[string]any{"AttributeName": eventsapi.CarritosKeyAttribute, "KeyType": "HASH"}},
			"TimeToLiveSpecification":          map[string]any{"AttributeName": eventsapi.CarritosTTLAttribute, "Enabled": true},
			"StreamSpecification":              map[string]any{"StreamViewType": "NEW_AND_OLD_IMAGES"},
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
			"SSESpecification":                 assertions.Match_ObjectLike(&map[string]any{"SSEEnabled": true, "SSEType": "KMS"}),
			"DeletionProtectionEnabled":        true,
		},
	})
	pipes := tpl.FindResources(jsii.String("AWS::Pipes::Pipe"), nil)
	if len(*pipes) != 1 {
		t.Fatalf("%d pipes", len(*pipes))
	}
	for _, raw := range *pipes {
		b, _ := json.Marshal(raw)
		var pipe struct {
			Properties struct {
				Name             string
				KmsKeyIdentifier any
				SourceParameters struct {
					DynamoDBStreamParameters struct {
						StartingPosition          string
						MaximumRetryAttempts      float64
						MaximumRecordAgeInSeconds float64
						OnPartialBatchItemFailure string
						DeadLetterConfig          struct{ Arn any }
					}
					FilterCriteria struct{ Filters []struct{ Pattern string } }
				}
				TargetParameters struct {
					InputTemplate                 string
					EventBridgeEventBusParameters struct{ Source, DetailType string }
				}
				LogConfiguration struct {
					Level                        string
					CloudwatchLogsLogDestination struct{ LogGroupArn any }
				}
			}
		}
		if err := json.Unmarshal(b, &pipe); err != nil {
			t.Fatal(err)
		}
		pp := pipe.Properties
		ddb := pp.SourceParameters.DynamoDBStreamParameters
		if pp.Name != events.PipeName || ddb.MaximumRetryAttempts != events.PipeRetryAttempts || ddb.MaximumRecordAgeInSeconds != events.MaxRecordAge.Seconds() ||
			ddb.DeadLetterConfig.Arn == nil || ddb.OnPartialBatchItemFailure != "AUTOMATIC_BISECT" || pp.LogConfiguration.Level != "ERROR" ||
			pp.LogConfiguration.CloudwatchLogsLogDestination.LogGroupArn == nil {
			t.Fatalf("pipe %+v", pp)
		}
		if pp.KmsKeyIdentifier == nil {
			t.Fatal("the pipe has no KmsKeyIdentifier: its filter and template would be encrypted with an AWS owned key, not the data key")
		}
		if len(pp.SourceParameters.FilterCriteria.Filters) != 1 || pp.SourceParameters.FilterCriteria.Filters[0].Pattern != events.TTLRemovalFilter() {
			t.Fatalf("filter %+v", pp.SourceParameters.FilterCriteria)
		}
		var filter map[string]any
		_ = json.Unmarshal([]byte(events.TTLRemovalFilter()), &filter)
		if !strings.Contains(events.TTLRemovalFilter(), `"REMOVE"`) || !strings.Contains(events.TTLRemovalFilter(), `"dynamodb.amazonaws.com"`) {
			t.Fatalf("filter %s", events.TTLRemovalFilter())
		}
		if pp.TargetParameters.EventBridgeEventBusParameters.Source != eventsapi.SourceCarritos || pp.TargetParameters.EventBridgeEventBusParameters.DetailType != eventsapi.TypeCarritoAbandonado {
			t.Fatalf("target %+v", pp.TargetParameters)
		}
	}
	// The input template renders a stream record into a valid CarritoAbandonado.
	rendered := events.InputTemplate()
	for path, value := range map[string]string{
		"<$.eventID>": "ev-1", "<$.dynamodb.Keys.carrito_id.S>": "K-1",
		"<$.dynamodb.OldImage.cliente_id.S>": "C-1", "<$.dynamodb.OldImage.actualizado_en.S>": "2026-12-01T10:00:00Z",
	} {
		rendered = strings.ReplaceAll(rendered, path, value)
	}
	schematest.Validate(t, eventsapi.TypeCarritoAbandonado, eventsapi.CarritoAbandonadoVersion, []byte(rendered))
	var ev eventsapi.CarritoAbandonado
	if err := json.Unmarshal([]byte(rendered), &ev); err != nil || ev.Validate() != nil || ev.CarritoID != "K-1" || ev.IDEvento != "ev-1" {
		t.Fatalf("template renders %s: %v %v", rendered, err, ev.Validate())
	}
	// The rule to the abandoned-carts queue, with retry policy and DLQ.
	tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
		"EventPattern": map[string]any{"source": []any{eventsapi.SourceCarritos}, "detail-type": []any{eventsapi.TypeCarritoAbandonado}},
		"Targets": []any{assertions.Match_ObjectLike(&map[string]any{
			"RetryPolicy":      map[string]any{"MaximumRetryAttempts": 10, "MaximumEventAgeInSeconds": 7200},
			"DeadLetterConfig": map[string]any{"Arn": assertions.Match_AnyValue()},
		})},
	})
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"QueueName": events.QueueName, "MessageRetentionPeriod": events.RetentionDays * 86400})
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{"MetricName": "ExecutionFailed", "Namespace": "AWS/EventBridge/Pipes"})
	// The pipe's role uses the data key through EventBridge Pipes only.
	tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{"PolicyDocument": map[string]any{
		"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
			"Action":    []any{"kms:Decrypt", "kms:GenerateDataKey", "kms:DescribeKey"},
			"Condition": map[string]any{"StringEquals": map[string]any{"kms:ViaService": assertions.Match_StringLikeRegexp(jsii.String("^pipes\\."))}},
		})}),
	}})
	if errs := cdktest.Errors(p.Stack); len(errs) > 0 {
		t.Fatalf("synthesis errors:\n%s", strings.Join(errs, "\n"))
	}
}

func TestImportedTable(t *testing.T) {
	p := cdktest.NewPlatform("CarritosImport")
	bus := awsevents.NewEventBus(p.Stack, jsii.String("Bus"), nil)
	events.NewCarts(p.Stack, "Carritos", &events.CartsProps{
		Bus: bus, Context: core.Context{DataKey: p.Key, Alerts: p.Alerts},
		Import: &config.CarritosImport{TableName: "mercadofresco-carritos", StreamArn: "arn:aws:dynamodb:eu-west-1:111111111111:table/mercadofresco-carritos/stream/2026-01-01T00:00:00.000"},
	})
	tpl := assertions.Template_FromStack(p.Stack, nil)
	tpl.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(0))
	tpl.HasResourceProperties(jsii.String("AWS::Pipes::Pipe"), map[string]any{
		"Source": "arn:aws:dynamodb:eu-west-1:111111111111:table/mercadofresco-carritos/stream/2026-01-01T00:00:00.000",
	})
	p2 := cdktest.NewPlatform("CarritosMal")
	events.NewCarts(p2.Stack, "Carritos", &events.CartsProps{Import: &config.CarritosImport{TableName: "x"}, RetryAttempts: 500})
	errs := cdktest.Errors(p2.Stack)
	for _, want := range []string{"Bus is required", "DataKey", "Alerts", "StreamArn", "RetryAttempts"} {
		cdktest.RequireContains(t, errs, want)
	}
}
