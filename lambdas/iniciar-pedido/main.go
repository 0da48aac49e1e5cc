// Command iniciar-pedido starts the order workflow mercadofresco-procesar-pedido
// once per order: it consumes the buffer queue that the PedidoCreado rule
// of bus-mercadofresco fills, and calls StartExecution with the execution
// name derived from the order (lambdas/orders/starter). The event source
// mapping's MaximumConcurrency is the valve that limits how many orders
// enter the workflow at once.
//
// Environment:
//
//	STATE_MACHINE_ARN   the workflow (required)
//	DLQ_URLS            JSON {source queue name: DLQ URL} (lambdas/sqsbatch/dlqroute)
//	CONSUMER_VERSION    build identifier written to dead-lettered messages (default: the binary's hash)
//	AWS_MAX_ATTEMPTS    SDK attempts per StartExecution (set by the CDK)
//	LOG_LEVEL           DEBUG, INFO, WARN or ERROR (default INFO)
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mercadofresco/integration/lambdas/internal/buildid"
	"github.com/mercadofresco/integration/lambdas/internal/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/orders/starter"
	"github.com/mercadofresco/integration/lambdas/queue"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/sqsbatch/dlqroute"
)

func main() {
	env := lambdaenv.New(os.Getenv)
	log := env.Logger("iniciar-pedido")
	p, err := build(context.Background(), env, log)
	if err != nil {
		log.Error("iniciar-pedido: cannot start", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(p.Process)
}

func build(ctx context.Context, env *lambdaenv.Env, log *slog.Logger) (*sqsbatch.Processor, error) {
	arn := env.Required("STATE_MACHINE_ARN")
	version := env.String("CONSUMER_VERSION", "")
	routes, rerr := dlqroute.Parse(os.Getenv(dlqroute.Env))
	if err := errors.Join(env.Err(), rerr); err != nil {
		return nil, err
	}
	if version == "" {
		version = "unknown"
		if id, err := buildid.Executable(); err == nil {
			version = id
		}
	}
	awsCfg, err := env.LoadAWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	s, err := starter.New(sfn.NewFromConfig(awsCfg), arn, log)
	if err != nil {
		return nil, err
	}
	cfg := starter.BatchConfig(s)
	cfg.ConsumerVersion = version
	cfg.DLQ = queue.New(sqs.NewFromConfig(awsCfg))
	cfg.DLQRoutes = routes
	cfg.Logger = log
	return sqsbatch.New(cfg)
}
