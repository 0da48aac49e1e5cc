// Command preparar-pedido is the consumer of cola-mercadofresco-pedidos: it
// sends every confirmed order to the warehouse once
// (sqsconsumer.Preparation).
//
// Environment: IDEMPOTENCY_TABLE_NAME, IDEMPOTENCY_WINDOW, ALMACEN_URL,
// ALMACEN_SECRET_ARN, ALMACEN_READ_TIMEOUT, ALMACEN_MAX_ATTEMPTS,
// the BREAKER_* variables, MAX_RECEIVE_COUNT, DLQ_URLS, ENTORNO
// and the common consumer variables of lambdas/lambdaapi.
package main

import "github.com/mercadofresco/integration/lambdas/sqsconsumer"

// Every confirmed order reaches this consumer once: it measures the
// commit-to-confirmation objective (docs/design.md#slo).
func main() {
	sqsconsumer.Main("preparar-pedido", sqsconsumer.Preparation.FromRuntime, sqsconsumer.MeasureConfirmations)
}
