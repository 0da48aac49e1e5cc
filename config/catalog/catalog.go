// Package catalog names the project's resources: the rule that turns a
// SPEC name into an environment's physical name, and the catalogue of the
// SQS queues (their SPEC names, their dead-letter queues and the consumers
// that read each one). The CDK stacks (through config) and the operator
// tools (cmd/mf-dlq) share it; it depends on the standard library and the
// consumers' contract only, so a tool that imports it links no CDK.
package catalog

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// SPEC names of the queues (prod's physical names; other environments add
// their suffix, see PhysicalName).
const (
	PedidosQueueName        = "cola-mercadofresco-pedidos"
	PedidosDLQName          = "mercadofresco-pedidos-fallidos"
	CorreoQueueName         = "cola-mercadofresco-correo-confirmacion"
	CorreoDLQName           = "mercadofresco-correo-confirmacion-fallidos"
	AvisoERPQueueName       = "cola-mercadofresco-aviso-erp"
	AvisoERPDLQName         = "mercadofresco-aviso-erp-fallidos"
	StockMovementsQueueName = "mercadofresco-movimientos-stock.fifo"
	StockMovementsDLQName   = "mercadofresco-movimientos-stock-fallidos.fifo"
	// The order workflow's starter buffer (stacks/orderflow.go), fed by
	// the PedidoCreado rule.
	InicioQueueName = "cola-mercadofresco-inicio-pedido"
	InicioDLQName   = "mercadofresco-inicio-pedido-fallidos"
)

// Environments are the deployment environments, in promotion order: the
// one list of them (config defines each one's values).
var Environments = []string{"dev", "staging", Production}

// Production is the environment whose physical names are the SPEC names
// themselves; every other environment appends "-<name>".
const Production = "prod"

// ValidEnvironment reports whether env is one of Environments.
func ValidEnvironment(env string) error {
	if !slices.Contains(Environments, env) {
		return fmt.Errorf("catalog: unknown environment %q (known: %s)", env, strings.Join(Environments, ", "))
	}
	return nil
}

// Suffix returns the physical-name suffix of an environment: "" for
// Production, "-<env>" otherwise.
func Suffix(env string) string {
	if env == Production {
		return ""
	}
	return "-" + env
}

// PhysicalName is the name of the resource with SPEC name base in env:
// base plus the environment's Suffix; FIFO names keep ".fifo" last
// ("mercadofresco-movimientos-stock-dev.fifo").
func PhysicalName(base, env string) string {
	if stem, ok := strings.CutSuffix(base, ".fifo"); ok {
		return stem + Suffix(env) + ".fifo"
	}
	return base + Suffix(env)
}

// Consumer is a deployed function that reads a queue.
type Consumer struct {
	// Function is the SPEC name of the function (environments add their suffix).
	Function string
	// IdempotencyKey is the shape of the key its effect is recorded under
	// ("preparacion:<pedido_id>" in mercadofresco-idempotencia).
	IdempotencyKey string
	// Window is its replay window: it refuses (dead-letters as
	// expired-idempotency-window) a message whose event is older than this,
	// measured from the body's CreatedAtKey, and its records live as long,
	// so a redriven duplicate inside the window is recognised. 0: no
	// window, its records never expire.
	Window time.Duration
	// CreatedAtKey is the dotted path of the event's creation time
	// (RFC 3339) in the body.
	CreatedAtKey string
	// SupportedVersions are the major event versions it accepts: the
	// contract's list (eventsapi.AcceptedVersions), which its code checks.
	SupportedVersions []int
	// VersionKey is the dotted path of the version in the body; "" means
	// "version".
	VersionKey string
	// RequiredKeys are the body keys without which it dead-letters a message.
	RequiredKeys []string
}

// Queue is one source queue with its dead-letter queue.
type Queue struct {
	// Logical is the queue's name in the Messaging stack (its construct id
	// and MessagingStack field), e.g. "Pedidos".
	Logical string
	// Name and DLQName are SPEC names (see PhysicalName).
	Name, DLQName string
	// FIFO reports a FIFO queue (its DLQ is FIFO too).
	FIFO bool
	// Consumers are the deployed readers of the queue; empty while the
	// queue has none.
	Consumers []Consumer
}

// Queues is every source queue of the Messaging stack, and the order
// workflow's starter buffer (OrderFlow stack).
var Queues = []Queue{
	{
		Logical: "Pedidos", Name: PedidosQueueName, DLQName: PedidosDLQName,
		Consumers: []Consumer{{
			Function:          "mf-preparar-pedido",
			IdempotencyKey:    "preparacion:<pedido_id>",
			Window:            lambdaapi.WindowPreparacion,
			CreatedAtKey:      lambdaapi.KeyConfirmadoEn,
			SupportedVersions: eventsapi.AcceptedVersions(eventsapi.TypePedidoConfirmado),
			// lineas: the preparation's Validate refuses an order without lines.
			RequiredKeys: append(lambdaapi.RequiredKeysConfirmado(), "lineas"),
		}},
	},
	{
		Logical: "Correo", Name: CorreoQueueName, DLQName: CorreoDLQName,
		Consumers: []Consumer{{
			Function:          "mf-correo-confirmacion",
			IdempotencyKey:    "correo-confirmacion:<pedido_id>",
			Window:            lambdaapi.WindowCorreo,
			CreatedAtKey:      lambdaapi.KeyConfirmadoEn,
			SupportedVersions: eventsapi.AcceptedVersions(eventsapi.TypePedidoConfirmado),
			RequiredKeys:      lambdaapi.RequiredKeysCorreo(),
		}},
	},
	{
		Logical: "AvisoERP", Name: AvisoERPQueueName, DLQName: AvisoERPDLQName,
		Consumers: []Consumer{{
			Function:          "mf-aviso-erp",
			IdempotencyKey:    "aviso-erp:<pedido_id>",
			Window:            lambdaapi.WindowAvisoERP,
			CreatedAtKey:      lambdaapi.KeyConfirmadoEn,
			SupportedVersions: eventsapi.AcceptedVersions(eventsapi.TypePedidoConfirmado),
			// referencia_cobro, lineas: the notice's Validate refuses an
			// order without them.
			RequiredKeys: append(lambdaapi.RequiredKeysConfirmado(), "referencia_cobro", "lineas"),
		}},
	},
	{
		Logical: "StockMovements", Name: StockMovementsQueueName, DLQName: StockMovementsDLQName, FIFO: true,
		Consumers: []Consumer{{
			// The line items of mercadofresco-stock, which never expire: a
			// movement is applied only if its secuencia is newer.
			Function:          "mf-movimientos-stock",
			IdempotencyKey:    "reserva:<pedido_id>:<sku> (liberacion:, ajuste:<referencia>:<sku>)",
			SupportedVersions: eventsapi.AcceptedVersions(eventsapi.TypeMovimientoStock),
			RequiredKeys:      lambdaapi.RequiredKeysStock(),
		}},
	},
	{
		// The EventBridge events of PedidoCreado (lambdas/orderstart):
		// the window is Step Functions' 90-day name retention less a day.
		Logical: "Inicio", Name: InicioQueueName, DLQName: InicioDLQName,
		Consumers: []Consumer{{
			Function:          "mf-iniciar-pedido",
			IdempotencyKey:    "the execution name of the order (orderstart.ExecutionNameFor; Step Functions keeps it 90 days)",
			Window:            eventsapi.StarterWindow,
			CreatedAtKey:      eventsapi.KeyCreadoEn,
			SupportedVersions: eventsapi.AcceptedVersions(eventsapi.TypePedidoCreado),
			VersionKey:        "detail.version",
			RequiredKeys:      lambdaapi.RequiredKeysInicio(),
		}},
	},
}

// Find returns the queue whose logical name, SPEC name or SPEC DLQ name
// (case-insensitive for the logical name) is name, and whether name named
// the DLQ.
func Find(name string) (q Queue, isDLQ bool, ok bool) {
	for _, q := range Queues {
		switch {
		case strings.EqualFold(q.Logical, name), q.Name == name:
			return q, false, true
		case q.DLQName == name:
			return q, true, true
		}
	}
	return Queue{}, false, false
}

// FindPhysical returns the queue one of whose physical names in some
// environment is name (the queue's or its DLQ's), with that environment.
func FindPhysical(name string) (q Queue, env string, isDLQ bool, ok bool) {
	for _, env := range Environments {
		for _, q := range Queues {
			if PhysicalName(q.Name, env) == name {
				return q, env, false, true
			}
			if PhysicalName(q.DLQName, env) == name {
				return q, env, true, true
			}
		}
	}
	return Queue{}, "", false, false
}

// Logicals returns the logical names, for error messages.
func Logicals() []string {
	out := make([]string, 0, len(Queues))
	for _, q := range Queues {
		out = append(out, q.Logical)
	}
	return out
}
