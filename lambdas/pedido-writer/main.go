// Command pedido-writer is the shop's order-writing function: it writes an
// order and its PedidoCreado event in one transaction (lambdas/shop),
// and payment retries of existing orders.
//
// Environment: DB_HOST (RDS Proxy endpoint), DB_PORT, DB_NAME, DB_USER (IAM
// authentication; see postgres.FromEnv), AWS_MAX_ATTEMPTS, LOG_LEVEL.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/postgres"
	"github.com/mercadofresco/integration/lambdas/shop"
)

func main() {
	env := lambdaenv.New(os.Getenv)
	log := env.Logger("pedido-writer")
	ctx := context.Background()
	awsCfg, err := env.LoadAWSConfig(ctx)
	if err != nil {
		log.Error("pedido-writer init", "error", err)
		os.Exit(1)
	}
	pool, err := postgres.FromEnv(ctx, env, awsCfg, secretsmanager.NewFromConfig(awsCfg),
		postgres.ConnectConfig{MaxConns: 1, ApplicationName: "mf-pedido-writer"})
	if err != nil {
		log.Error("pedido-writer init", "error", err)
		os.Exit(1)
	}
	lambda.Start(func(ctx context.Context, s shop.Solicitud) (shop.Respuesta, error) {
		return shop.CrearPedido(ctx, pool, s)
	})
}
