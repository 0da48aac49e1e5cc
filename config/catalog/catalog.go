// Package catalog names the project's resources: the rule that turns a
// SPEC name into an environment's physical name, and the catalogue of the
// SQS queues (their SPEC names, their dead-letter queues and the function
// that reads each one; what that function requires of a message is its
// entry in lambdas/consumers). The CDK stacks (through config) and the
// operator tools (cmd/mf-dlq) share it; it depends on the standard library
// only, so a tool that imports it links no CDK.
package catalog

import (
	"fmt"
	"slices"
	"strings"
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

// Queue is one source queue with its dead-letter queue.
type Queue struct {
	// Logical is the queue's name in the Messaging stack (its construct id
	// and MessagingStack field), e.g. "Pedidos".
	Logical string
	// Name and DLQName are SPEC names (see PhysicalName).
	Name, DLQName string
	// FIFO reports a FIFO queue (its DLQ is FIFO too).
	FIFO bool
	// Function is the SPEC name of the deployed function that reads the
	// queue (lambdas/consumers has its entry).
	Function string
}

// Queues is every source queue of the Messaging stack, and the order
// workflow's starter buffer (OrderFlow stack).
var Queues = []Queue{
	{Logical: "Pedidos", Name: PedidosQueueName, DLQName: PedidosDLQName, Function: "mf-preparar-pedido"},
	{Logical: "Correo", Name: CorreoQueueName, DLQName: CorreoDLQName, Function: "mf-correo-confirmacion"},
	{Logical: "AvisoERP", Name: AvisoERPQueueName, DLQName: AvisoERPDLQName, Function: "mf-aviso-erp"},
	{Logical: "StockMovements", Name: StockMovementsQueueName, DLQName: StockMovementsDLQName, FIFO: true, Function: "mf-movimientos-stock"},
	// The EventBridge events of PedidoCreado (lambdas/orderstart).
	{Logical: "Inicio", Name: InicioQueueName, DLQName: InicioDLQName, Function: "mf-iniciar-pedido"},
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
