package lambdaapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The queue consumers (lambdas/sqsconsumer and the functions built on it):
// their environment, their dependencies' names, their metrics, their
// tables' keys, their replay windows and deferral numbers.

// Environment variables every consumer reads (lambdas/sqsconsumer), with
// EnvEnvironment, EnvDLQRoutes and the breaker's.
const (
	// EnvConsumerVersion overrides the build id written to dead-lettered
	// messages (default: the SHA-256 of the running binary, sqsbatch.Config.ConsumerVersion).
	EnvConsumerVersion = "CONSUMER_VERSION"
	// EnvBatchConcurrency is how many records (or FIFO groups) one
	// invocation handles at once (default 8, 1..100).
	EnvBatchConcurrency = "BATCH_CONCURRENCY"
	// EnvDeadlineMargin is the time kept free before the Lambda deadline
	// (Go duration, default 2s).
	EnvDeadlineMargin = "DEADLINE_MARGIN"
	// EnvMaxReceiveCount is the source queue's redrive maxReceiveCount
	// (sqsconsumer.Plan needs it to know the last receive).
	EnvMaxReceiveCount = "MAX_RECEIVE_COUNT"
	// EnvVisibilityTimeout is the source queue's visibility timeout (Go
	// duration): a failed record comes back after half to all of it.
	EnvVisibilityTimeout = "VISIBILITY_TIMEOUT"
)

// EnvStateMachineARN is the order workflow the starter (lambdas/orderstart,
// the consumer of the starter's buffer queue) starts.
const EnvStateMachineARN = "STATE_MACHINE_ARN"

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
	// have sent them without answering (see lambdas/confirmationmail).
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

// Replay windows (docs/design.md#replay-windows): a consumer refuses a
// message older than its window and keeps its records at least that long.
const (
	// EnvIdempotencyWindow is the consumer's window (a Go duration, e.g.
	// "1080h"): how old a message may be and still be processed, and how
	// long its idempotency records live.
	EnvIdempotencyWindow = "IDEMPOTENCY_WINDOW"
	// KeyConfirmadoEn is the creation time (RFC 3339) of the fan-out's
	// PedidoConfirmado, whose age the window bounds.
	KeyConfirmadoEn = "confirmado_en"
	// ReasonExpiredWindow is in the reason (mf-failure-reason, class
	// permanent) of a message a consumer refused for being older than its
	// window: cmd/mf-dlq classifies such messages as expired.
	ReasonExpiredWindow = "expired-idempotency-window"
	// AttrReadmision is the message attribute (String, RFC 3339 time) with
	// which `mf-dlq redrive --readmit-expired` re-admits an expired
	// message: the consumer processes it while the mark is younger than
	// ReadmissionValidity. Not an mf-* name: consumers ignore incoming mf-*
	// attributes, and this one is set by a producer (the on-call's redrive).
	AttrReadmision = "readmitido-en"
	// ReadmissionValidity bounds how long a re-admission mark admits its
	// message: a source queue's retention (4 days), below every window.
	ReadmissionValidity = 4 * 24 * time.Hour
)

// FormatWindow is the value of EnvIdempotencyWindow for a window of whole
// hours ("1080h").
func FormatWindow(d time.Duration) string {
	return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
}

// Windows of the fan-out's consumers: 45 days each, covering their queue's
// longest legitimate pass (constructs/queues checks it at synth;
// docs/design.md#replay-windows).
const (
	WindowPreparacion = 45 * 24 * time.Hour
	WindowCorreo      = 45 * 24 * time.Hour
	WindowAvisoERP    = 45 * 24 * time.Hour
)

// Deferral numbers of sqsconsumer.Plan: a message whose dependency's circuit
// is open is copied with a delay of DeferralDelay on every receive that
// meets it, at most MaxDeferrals × maxReceiveCount times (the copies
// lengthen a queue's longest pass, which constructs/queues counts).
const (
	DeferralDelay = 300 * time.Second
	MaxDeferrals  = 72
)

// The idempotency table (constructs/datastore.NewIdempotency) and the
// library that writes its records (lambdas/idempotency).
const (
	// IdempotencyKeyAttribute is the table's partition key attribute.
	IdempotencyKeyAttribute = "clave"
	// IdempotencyTTLAttribute is the table's TimeToLiveSpecification
	// attribute.
	IdempotencyTTLAttribute = "expira_en"
	// EnvIdempotencyTable is the variable that hands the table name to a
	// function.
	EnvIdempotencyTable = "IDEMPOTENCY_TABLE_NAME"
)

// EnvDLQRoutes carries, as a JSON object, the name of each source queue a
// consumer reads mapped to its DLQ's URL (written by
// queues.AddConsumer): one variable, so that a function that
// consumes several queues sends each poison message to the DLQ of the queue
// it came from.
const EnvDLQRoutes = "DLQ_URLS"

// ErrInvalidDLQRoutes is wrapped by ParseDLQRoutes errors.
var ErrInvalidDLQRoutes = errors.New("lambdaapi: invalid DLQ routes")

// DLQRoutes maps a source queue name to its DLQ URL.
type DLQRoutes map[string]string

// ParseDLQRoutes reads EnvDLQRoutes's value. An empty value is no routes.
func ParseDLQRoutes(s string) (DLQRoutes, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DLQRoutes{}, nil
	}
	var r DLQRoutes
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("%w: %s is not a JSON object of queue name to DLQ URL: %w", ErrInvalidDLQRoutes, EnvDLQRoutes, err)
	}
	for name, u := range r {
		pu, err := url.Parse(u)
		if name == "" || err != nil || pu.Scheme != "https" || pu.Host == "" || strings.Count(strings.Trim(pu.Path, "/"), "/") != 1 {
			return nil, fmt.Errorf("%w: %s: %q -> %q is not a queue name and an SQS queue URL (https://<host>/<account>/<queue>)", ErrInvalidDLQRoutes, EnvDLQRoutes, name, u)
		}
	}
	return r, nil
}

// For returns the DLQ URL of the queue an event source ARN names
// (arn:aws:sqs:<region>:<account>:<name>).
func (r DLQRoutes) For(eventSourceARN string) (string, bool) {
	name := eventSourceARN[strings.LastIndex(eventSourceARN, ":")+1:]
	u, ok := r[name]
	return u, ok
}
