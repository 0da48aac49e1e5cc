// Command outbox-migraciones is the handler of the outbox schema's custom
// resource: CloudFormation runs it (through the CDK provider framework)
// when a deploy creates or changes the migrations or the role names, never
// anything on the hot path. See package migrator for the two steps and the
// two database users.
//
// Environment: DB_HOST (RDS Proxy endpoint, for the owner role's IAM
// connection), DB_PORT, DB_NAME, DB_MASTER_SECRET_ARN (the cluster's master
// secret: step 1 connects directly to the cluster it names, TLS
// verify-full), DB_SCHEMA (default public), AWS_MAX_ATTEMPTS, LOG_LEVEL.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/outbox/migrator"
	"github.com/mercadofresco/integration/lambdas/postgres"
)

const appName = "mf-outbox-migrate"

func main() {
	env := lambdaenv.New(os.Getenv)
	log := env.Logger("outbox-migrate")
	ctx := context.Background()
	host := env.Required(postgres.EnvHost)
	port := env.Int(postgres.EnvPort, 5432, 1, 65535)
	database := env.Required(postgres.EnvName)
	secretARN := env.Required("DB_MASTER_SECRET_ARN")
	schemaName := env.String("DB_SCHEMA", "public")
	awsCfg, err := env.LoadAWSConfig(ctx)
	if err == nil {
		err = env.Err()
	}
	if err != nil {
		log.Error("outbox-migrate: cannot start", "error", err)
		os.Exit(1)
	}
	sm := secretsmanager.NewFromConfig(awsCfg)
	m := &migrator.Migrator{
		ConnectAdmin: func(ctx context.Context) (migrator.Conn, error) {
			return postgres.ConnectFromSecret(ctx, sm, postgres.ConnectConfig{
				SecretARN: secretARN, Database: database, MaxConns: 1, ApplicationName: appName,
			})
		},
		ConnectOwner: func(ctx context.Context, owner string) (migrator.Conn, error) {
			return postgres.ConnectIAM(ctx, postgres.ConnectConfig{
				Host: host, Port: port, Database: database, User: owner, Region: awsCfg.Region,
				MaxConns: 1, ApplicationName: appName,
			}, awsCfg.Credentials)
		},
		Schema: schemaName,
		IAM:    true,
		Log:    log,
	}
	lambda.Start(m.Handle)
}
