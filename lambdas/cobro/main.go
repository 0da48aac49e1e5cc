// Command cobro is the charge task of the order workflow: it charges the
// order's card once (lambdas/payment, CobroFunction; environment in
// lambdas/lambdaapi).
package main

import (
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/payment"
)

func main() { lambdaenv.Main("cobro", payment.CobroFunction) }
