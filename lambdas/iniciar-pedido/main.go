// Command iniciar-pedido starts the order workflow once per order: it
// consumes the buffer queue the PedidoCreado rule fills and calls
// StartExecution with a name derived from the order (lambdas/orderstart,
// Function).
package main

import (
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/orderstart"
)

func main() { lambdaenv.Main("iniciar-pedido", orderstart.Function) }
