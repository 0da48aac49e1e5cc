// Command outbox-limpieza is the daily outbox cleanup: it deletes the rows
// published more than RETENTION_DAYS ago (lambdas/outbox, CleanupFunction).
package main

import (
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/outbox"
)

func main() { lambdaenv.Main("outbox-cleanup", outbox.CleanupFunction) }
