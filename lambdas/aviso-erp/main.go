// Command aviso-erp is the consumer of cola-mercadofresco-aviso-erp: it
// notifies the ERP of every confirmed order once, and lets notices wait
// while the ERP's circuit is open (sqsconsumer.ERPNotice).
//
// Environment: IDEMPOTENCY_TABLE_NAME, IDEMPOTENCY_WINDOW, ERP_URL,
// ERP_SECRET_ARN, ERP_READ_TIMEOUT, ERP_MAX_ATTEMPTS, the BREAKER_* variables,
// MAX_RECEIVE_COUNT, DLQ_URLS, ENTORNO and the common consumer variables of
// lambdas/lambdaapi.
package main

import "github.com/mercadofresco/integration/lambdas/sqsconsumer"

func main() { sqsconsumer.Main("aviso-erp", sqsconsumer.ERPNotice.FromRuntime) }
