// Command reembolso is the refund task of the order workflow's compensation
// path: it refunds the order's charge once, through the payment gateway
// client, the gateway's shared circuit breaker and the idempotency table
// (key reembolso:<pedido_id>, also the gateway's Idempotency-Key), and
// returns referencia_reembolso. Failures carry the error names of
// lambdas/payment/paymentapi as their errorType.
//
// Environment: the same as cobro (see lambdas/cobro).
package main

import "github.com/mercadofresco/integration/lambdas/payment"

func main() { payment.Main("reembolso") }
