// Command outbox-migraciones is the handler of the outbox schema's custom
// resource, run by CloudFormation when a deploy changes the migrations or
// the role names (lambdas/outbox, MigratorFunction).
package main

import (
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/outbox"
)

func main() { lambdaenv.Main("outbox-migrate", outbox.MigratorFunction) }
