// Command pedido-writer is the shop's order-writing function: it writes an
// order and its PedidoCreado event in one transaction, and payment retries
// of existing orders (lambdas/shop, Function).
package main

import (
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/shop"
)

func main() { lambdaenv.Main("pedido-writer", shop.Function) }
