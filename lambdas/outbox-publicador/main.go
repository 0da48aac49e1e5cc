// Command outbox-publicador is the outbox publisher Lambda function; the
// function itself (schedule, lease, attempts, environment) is documented in
// lambdas/outbox/publisherfn.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/outbox/publisherfn"
)

func main() {
	env := lambdaenv.New(os.Getenv)
	log := env.Logger("outbox-publisher")
	h, err := publisherfn.FromEnv(context.Background(), env, log)
	if err != nil {
		log.Error("outbox-publisher init", "error", err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}
