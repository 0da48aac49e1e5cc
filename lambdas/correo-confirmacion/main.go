// Command correo-confirmacion is the consumer of
// cola-mercadofresco-correo-confirmacion: it sends each confirmed order's
// e-mail once, through SES or the secondary provider (lambdas/confirmationmail).
//
// Environment: IDEMPOTENCY_TABLE_NAME, IDEMPOTENCY_WINDOW, CORREO_REMITENTE,
// SES_CONFIGURATION_SET, CORREO_SECUNDARIO_URL, CORREO_SECUNDARIO_SECRET_ARN,
// CORREO_SECUNDARIO_READ_TIMEOUT, CORREO_SECUNDARIO_MAX_ATTEMPTS,
// the BREAKER_* variables, MAX_RECEIVE_COUNT, DLQ_URLS, ENTORNO
// and the common consumer variables of lambdas/lambdaapi.
package main

import (
	"github.com/mercadofresco/integration/lambdas/confirmationmail"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
)

func main() { sqsconsumer.Main("correo-confirmacion", confirmationmail.FromRuntime) }
