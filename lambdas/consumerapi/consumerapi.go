// Package consumerapi is the contract between the CDK (constructs/consumers,
// constructs/stocktable) and the queue consumer Lambdas (preparar-pedido,
// correo-confirmacion, aviso-erp, movimientos-stock): the environment
// variables the functions read, the names of their dependencies and the
// metrics they emit. It depends on the standard library only, so the CDK app
// imports it without linking any Lambda dependency.
package consumerapi

// Environment variables every consumer reads (lambdas/sqsconsumer). DLQ
// routes arrive in DLQ_URLS (lambdas/sqsbatch/dlqroute, written by
// reliablequeue.AddConsumer) and the breaker's cache in the variables of
// lambdas/breaker/breakerapi.
const (
	// EnvEnvironment is dev, staging or prod (the Entorno metric dimension).
	EnvEnvironment = "ENTORNO"
	// EnvConsumerVersion overrides the build id written to dead-lettered
	// messages (default: the SHA-256 of the running binary, lambdas/internal/buildid).
	EnvConsumerVersion = "CONSUMER_VERSION"
	// EnvBatchConcurrency is how many records (or FIFO groups) one
	// invocation handles at once (default 8, 1..100).
	EnvBatchConcurrency = "BATCH_CONCURRENCY"
	// EnvSupportedVersions lists the major event versions understood
	// (comma-separated, default "1").
	EnvSupportedVersions = "SUPPORTED_VERSIONS"
	// EnvDeadlineMargin is the time kept free before the Lambda deadline
	// (Go duration, default 2s).
	EnvDeadlineMargin = "DEADLINE_MARGIN"
	// EnvMaxReceiveCount is the source queue's redrive maxReceiveCount
	// (lambdas/degrade needs it to know the last receive).
	EnvMaxReceiveCount = "MAX_RECEIVE_COUNT"
)

// Dependencies: the breaker's name and the Dependencia metric dimension
// (Name*), and the prefix of the lambdas/httpdep variables (Prefix*:
// <PREFIX>_URL, <PREFIX>_SECRET_ARN, <PREFIX>_READ_TIMEOUT, <PREFIX>_MAX_ATTEMPTS).
const (
	NameAlmacen            = "almacen"
	PrefixAlmacen          = "ALMACEN"
	NameERP                = "erp"
	PrefixERP              = "ERP"
	NameSES                = "ses"
	NameCorreoSecundario   = "correo-secundario"
	PrefixCorreoSecundario = "CORREO_SECUNDARIO"
)

// Confirmation e-mail (correo-confirmacion).
const (
	// EnvCorreoRemitente is the From address, an address of the
	// environment's verified SES identity.
	EnvCorreoRemitente = "CORREO_REMITENTE"
	// EnvSESConfigurationSet is the SES configuration set every e-mail is
	// sent with.
	EnvSESConfigurationSet = "SES_CONFIGURATION_SET"
	// MetricCorreoEnviado counts confirmation e-mails accepted by a
	// provider (dimension Proveedor: ses or correo-secundario).
	MetricCorreoEnviado = "CorreoEnviado"
	// MetricCorreoAplazado counts e-mails returned to the queue for later
	// because neither provider could take them.
	MetricCorreoAplazado = "CorreoAplazado"
	// MetricCorreoIncierto counts e-mails dead-lettered because SES may
	// have sent them without answering (see lambdas/correo).
	MetricCorreoIncierto = "CorreoIncierto"
	// DimensionProveedor names the e-mail provider.
	DimensionProveedor = "Proveedor"
)

// Stock movements (movimientos-stock) and the table mercadofresco-stock.
const (
	// EnvStockTable is the stock table's name.
	EnvStockTable = "STOCK_TABLE_NAME"
	// StockPartitionKey is the table's partition key: the SKU.
	StockPartitionKey = "sku"
	// StockSortKey is the table's sort key: "stock" for a SKU's totals,
	// "pedido#<pedido_id>" and "ajuste#<referencia>" for the lines whose
	// movements it has applied.
	StockSortKey = "elemento"
)
