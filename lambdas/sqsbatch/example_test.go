package sqsbatch_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// A consumer main package wires its handler once and passes Process to
// lambda.Start. Here a fake SQS stands in for the DLQ.
func Example() {
	sqs := localaws.NewSQS(localaws.SQSConfig{})
	dlqURL, _ := sqs.CreateQueue("mercadofresco-pedidos-fallidos", localaws.QueueConfig{})

	type pedidoConfirmado struct {
		PedidoID string `json:"pedido_id"`
	}
	p, err := sqsbatch.New(sqsbatch.Config{
		ConsumerVersion: "preparar-pedido@1.4.0",
		DLQ:             sqs,
		DLQRoutes:       lambdaapi.DLQRoutes{"cola-mercadofresco-pedidos": dlqURL},
		Envelope:        sqsbatch.EnvelopeRules{RequiredKeys: []string{"pedido_id"}},
		IdempotencyKey: func(rec *sqsbatch.Record) (string, error) {
			var ev pedidoConfirmado
			err := rec.Decode(&ev)
			return "preparacion:" + ev.PedidoID, err
		},
		Logger: slog.New(slog.DiscardHandler),
		Handler: sqsbatch.JSON(func(ctx context.Context, rec *sqsbatch.Record, ev *pedidoConfirmado) error {
			if ev.PedidoID == "P-2" {
				return fmt.Errorf("almacen: 503") // transient: comes back
			}
			return nil
		}),
	})
	if err != nil {
		panic(err)
	}
	// lambda.Start(p.Process) in a real main.
	arn := "arn:aws:sqs:eu-west-1:000000000000:cola-mercadofresco-pedidos"
	resp, _ := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", EventSourceARN: arn, Body: `{"version":1,"pedido_id":"P-1"}`},
		{MessageId: "m2", EventSourceARN: arn, Body: `{"version":1,"pedido_id":"P-2"}`},
		{MessageId: "m3", EventSourceARN: arn, Body: `{"version":2,"pedido_id":"P-3"}`},
	}})
	fmt.Println("retry:", resp.BatchItemFailures)
	dead, _ := sqs.Inspect(dlqURL)
	fmt.Println("dead-lettered:", *dead[0].MessageAttributes[sqsbatch.AttrOriginalMessageID].StringValue,
		"-", *dead[0].MessageAttributes[sqsbatch.AttrFailureReason].StringValue)
	// Output:
	// retry: [{m2}]
	// dead-lettered: m3 - poison: unknown major version 2 (this consumer supports 1): deploy the consumer before the producer
}
