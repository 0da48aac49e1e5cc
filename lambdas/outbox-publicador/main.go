// Command outbox-publicador is the outbox publisher: it moves outbox rows
// to bus-mercadofresco (lambdas/outbox, PublisherFunction).
package main

import (
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/outbox"
)

func main() { lambdaenv.Main("outbox-publisher", outbox.PublisherFunction) }
