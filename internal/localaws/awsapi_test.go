package localaws_test

import (
	"context"
	"errors"
	"github.com/mercadofresco/integration/internal/localaws"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
)

type routerFunc func(context.Context, localaws.Event) error

func (f routerFunc) Route(ctx context.Context, e localaws.Event) error { return f(ctx, e) }

type executorFunc func(context.Context, localaws.Execution) error

func (f executorFunc) Start(ctx context.Context, e localaws.Execution) error { return f(ctx, e) }

func cfg(url string) aws.Config {
	return aws.Config{
		Region:       "eu-west-1",
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		BaseEndpoint: aws.String(url),
	}
}

func TestRealSDKClientsAgainstTheFake(t *testing.T) {
	var mu sync.Mutex
	var routed []localaws.Event
	var started []localaws.Execution
	s := localaws.NewEndpoint(t, localaws.NewSQS(localaws.SQSConfig{}))
	s.KnownSecretsOnly = true
	s.Router = routerFunc(func(_ context.Context, e localaws.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if e.DetailType == "Rechazado" {
			return errors.New("no route")
		}
		routed = append(routed, e)
		return nil
	})
	s.Executor = executorFunc(func(_ context.Context, e localaws.Execution) error {
		mu.Lock()
		defer mu.Unlock()
		started = append(started, e)
		return nil
	})
	s.SetSecret("arn:aws:secretsmanager:eu-west-1:111111111111:secret:pasarela", `{"api_key":"k"}`)
	ctx := context.Background()
	c := cfg(s.URL)

	eb := eventbridge.NewFromConfig(c)
	out, err := eb.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{
		{EventBusName: aws.String("bus"), Source: aws.String("mercadofresco.tienda"), DetailType: aws.String("PedidoCreado"), Detail: aws.String(`{"pedido_id":"P1"}`)},
		{EventBusName: aws.String("bus"), Source: aws.String("mercadofresco.tienda"), DetailType: aws.String("Rechazado"), Detail: aws.String(`{}`)},
		{EventBusName: aws.String("bus"), Source: aws.String("mercadofresco.tienda"), DetailType: aws.String("Roto"), Detail: aws.String(`{`)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if out.FailedEntryCount != 2 || aws.ToString(out.Entries[0].EventId) == "" || aws.ToString(out.Entries[2].ErrorCode) != "MalformedDetail" {
		t.Fatalf("PutEvents = %+v", out)
	}
	env := routed[0].Envelope("111111111111", "eu-west-1")
	if env["detail-type"] != "PedidoCreado" || env["detail"].(map[string]any)["pedido_id"] != "P1" {
		t.Fatalf("envelope %v", env)
	}

	sf := sfn.NewFromConfig(c)
	arn := "arn:aws:states:eu-west-1:111111111111:stateMachine:mercadofresco-procesar-pedido"
	first, err := sf.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String("pedido-P1"), Input: aws.String(`{"pedido_id":"P1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(first.ExecutionArn) != "arn:aws:states:eu-west-1:111111111111:execution:mercadofresco-procesar-pedido:pedido-P1" {
		t.Fatalf("execution ARN %s", aws.ToString(first.ExecutionArn))
	}
	_, err = sf.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String("pedido-P1"), Input: aws.String(`{"pedido_id":"P1"}`)})
	var exists *sfntypes.ExecutionAlreadyExists
	if !errors.As(err, &exists) {
		t.Fatalf("second start = %v, want ExecutionAlreadyExists", err)
	}
	if len(started) != 1 {
		t.Fatalf("%d executions started, want 1", len(started))
	}

	sm := secretsmanager.NewFromConfig(c)
	sec, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("arn:aws:secretsmanager:eu-west-1:111111111111:secret:pasarela")})
	if err != nil || aws.ToString(sec.SecretString) != `{"api_key":"k"}` {
		t.Fatalf("GetSecretValue = %v, %v", sec, err)
	}
	if _, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("nope")}); err == nil {
		t.Fatal("unknown secret returned")
	}
}
