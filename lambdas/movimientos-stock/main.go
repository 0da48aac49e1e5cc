// Command movimientos-stock is the consumer of the FIFO queue
// mercadofresco-movimientos-stock.fifo: it applies reserva, liberacion and
// ajuste movements to mercadofresco-stock once each, whatever their
// arrival order (lambdas/stock).
//
// Environment: STOCK_TABLE_NAME, DLQ_URLS, ENTORNO and the common consumer
// variables of lambdas/lambdaapi.
package main

import (
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
	"github.com/mercadofresco/integration/lambdas/stock"
)

func main() { sqsconsumer.Main("movimientos-stock", stock.FromRuntime) }
