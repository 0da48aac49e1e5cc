package localaws

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestStartCreateTableAndConditionalPut(t *testing.T) {
	srv := StartDynalite(t)
	srv.CreateTable(t, "tabla-prueba", "clave", "")
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
	a, b := StartDynalite(t), StartDynalite(t)
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

// A client that goes away in the middle of a request (an invocation's
// deadline, a killed process) leaves dynalite serving the others: the guard
// reports each dropped request, and the process never exits.
func TestServesOnAfterAClientAbortsARequest(t *testing.T) {
	srv := StartDynalite(t)
	host := strings.TrimPrefix(srv.Endpoint, "http://")
	const aborted = 3
	for range aborted {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-amz-json-1.0\r\n"+
			"X-Amz-Target: DynamoDB_20120810.ListTables\r\nContent-Length: 100\r\n\r\n{\"Limit\":", host)
		conn.Close()
	}
	deadline := time.After(dynaliteReady)
	for strings.Count(srv.stderr.String(), "dropped an aborted request") < aborted {
		select {
		case <-srv.done:
			t.Fatalf("dynalite exited after an aborted request: %v: %s", srv.err, srv.stderr.String())
		case <-deadline:
			t.Fatalf("dynalite reported no %d dropped requests within %s: %s", aborted, dynaliteReady, srv.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := srv.Client.ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("after %d aborted requests: %v", aborted, err)
	}
}
