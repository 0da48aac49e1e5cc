package datastore_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/datastore"
	"github.com/mercadofresco/integration/internal/cdktest"
)

func TestStockTable(t *testing.T) {
	p := cdktest.NewPlatform("Datos")
	tbl := datastore.NewStock(p.Stack, "Stock", &datastore.TableProps{TableName: jsii.String("mercadofresco-stock"), Context: core.Context{DataKey: p.Key, Alerts: p.Alerts}})
	role := awsiam.NewRole(p.Stack, jsii.String("Consumidor"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	tbl.GrantConsumer(role)
	if errs := cdktest.Errors(p.Stack); len(errs) > 0 {
		t.Fatal(errs)
	}
	tpl := assertions.Template_FromStack(p.Stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"TableName":                        "mercadofresco-stock",
		"KeySchema":                        []any{map[string]any{"AttributeName": "sku", "KeyType": "HASH"}, map[string]any{"AttributeName": "elemento", "KeyType": "RANGE"}},
		"BillingMode":                      "PAY_PER_REQUEST",
		"SSESpecification":                 map[string]any{"SSEEnabled": true, "SSEType": "KMS", "KMSMasterKeyId": assertions.Match_AnyValue()},
		"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
		"DeletionProtectionEnabled":        true,
	})
	tpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{"DeletionPolicy": "Retain"})
	tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(2))
	b, _ := json.Marshal(tpl.FindResources(jsii.String("AWS::IAM::Policy"), nil))
	doc := string(b)
	if !strings.Contains(doc, `"dynamodb:GetItem","dynamodb:PutItem","dynamodb:UpdateItem"`) || strings.Contains(doc, "dynamodb:Scan") ||
		strings.Contains(doc, "DeleteItem") || !strings.Contains(doc, "dynamodb.eu-west-1.amazonaws.com") {
		t.Fatalf("consumer grant: %s", doc)
	}
}

func TestStockTableRequiresKeyAndTopic(t *testing.T) {
	p := cdktest.NewPlatform("Mal")
	datastore.NewStock(p.Stack, "Stock", nil)
	errs := cdktest.Errors(p.Stack)
	cdktest.RequireContains(t, errs, "DataKey is required")
	cdktest.RequireContains(t, errs, "Alerts is required")
}
