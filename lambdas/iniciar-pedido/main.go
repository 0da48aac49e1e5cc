// Command iniciar-pedido starts the order workflow mercadofresco-procesar-pedido
// once per order: it consumes the buffer queue that the PedidoCreado rule
// of bus-mercadofresco fills, and calls StartExecution with the execution
// name derived from the order (lambdas/orderstart). The event source
// mapping's MaximumConcurrency is the valve that limits how many orders
// enter the workflow at once.
//
// Environment:
//
//	STATE_MACHINE_ARN   the workflow (required)
//	DLQ_URLS            JSON {source queue name: DLQ URL} (lambdas/sqsbatch/sqsbatchapi)
//	CONSUMER_VERSION    build identifier written to dead-lettered messages (default: the binary's hash)
//	IDEMPOTENCY_WINDOW  events older than this (from detail.creado_en) are refused (default and maximum 89 days)
//	AWS_MAX_ATTEMPTS    SDK attempts per StartExecution (set by the CDK)
//	LOG_LEVEL           DEBUG, INFO, WARN or ERROR (default INFO)
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/orderstart"
)

func main() {
	env := lambdaenv.New(os.Getenv)
	log := env.Logger("iniciar-pedido")
	p, err := orderstart.ProcessorFromEnv(context.Background(), env, log)
	if err != nil {
		log.Error("iniciar-pedido: cannot start", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(p.Process)
}
