package dynalitetest

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestStartCreateTableAndConditionalPut(t *testing.T) {
	srv := Start(t)
	srv.CreateTable(t, "tabla-prueba", "clave")
	ctx := context.Background()
	put := &dynamodb.PutItemInput{
		TableName:           aws.String("tabla-prueba"),
		Item:                map[string]types.AttributeValue{"clave": &types.AttributeValueMemberS{Value: "k"}},
		ConditionExpression: aws.String("attribute_not_exists(clave)"),
	}
	if _, err := srv.Client.PutItem(ctx, put); err != nil {
		t.Fatalf("first put: %v", err)
	}
	_, err := srv.Client.PutItem(ctx, put)
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("second put: want ConditionalCheckFailedException, got %v", err)
	}
}

func TestTwoServersGetDistinctPortsAndCloseIsIdempotent(t *testing.T) {
	a, b := Start(t), Start(t)
	if a.Endpoint == b.Endpoint {
		t.Fatalf("both servers on %s", a.Endpoint)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Client.ListTables(context.Background(), &dynamodb.ListTablesInput{}); err == nil {
		t.Fatal("closed server still answers")
	}
	if _, err := b.Client.ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("second server: %v", err)
	}
}
