// Command reembolso is the refund task of the order workflow's
// compensation: it refunds the order's charge once (lambdas/payment,
// ReembolsoFunction; the same environment as cobro).
package main

import (
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/payment"
)

func main() { lambdaenv.Main("reembolso", payment.ReembolsoFunction) }
