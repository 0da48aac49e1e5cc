// Command cobro is the charge task of the order workflow
// (mercadofresco-procesar-pedido): it charges the order's card once, through
// the payment gateway client, the gateway's shared circuit breaker and the
// idempotency table (key cobro:<pedido_id>, also the gateway's
// Idempotency-Key), and returns referencia_cobro. Failures carry the error
// names of lambdas/payment/paymentapi as their errorType.
//
// Environment (names in paymentapi and breakerapi): GATEWAY_URL,
// GATEWAY_SECRET_ARN, GATEWAY_MAX_ATTEMPTS (default 3), GATEWAY_BACKOFF_BASE,
// GATEWAY_BACKOFF_CAP, GATEWAY_READ_TIMEOUT (default 30s),
// IDEMPOTENCY_TABLE_NAME, ENTORNO, BREAKER_REDIS_ADDR, BREAKER_REDIS_TLS
// (default true), BREAKER_FAILURE_THRESHOLD (default 20),
// BREAKER_OPEN_PERIOD (default 30s), AWS_MAX_ATTEMPTS, LOG_LEVEL.
package main

import "github.com/mercadofresco/integration/lambdas/payment"

func main() { payment.Main("cobro") }
