package eventsapi

import (
	"fmt"
	"slices"
)

// TypeMovimientoStock names a stock movement (MovimientoStock) on the FIFO
// queue mercadofresco-movimientos-stock.fifo, where it has no detail-type:
// the name is the contract's, used by the declarations and the schemas.
const TypeMovimientoStock = "MovimientoStock"

// The version each producer of this app writes today. A producer takes its
// version from here and declares it (constructs/core), so the synth rule
// MF-CONTRACT compares it with what every consumer on its routes accepts
// (docs/design.md#event-contracts).
const (
	// PedidoCreadoVersion is written by the shop (lambdas/shop) into the
	// outbox, and published by the outbox publisher.
	PedidoCreadoVersion = Version1
	// PedidoConfirmadoVersion is written by the workflow's Confirmar task.
	PedidoConfirmadoVersion = Version1
	// MovimientoStockVersion is written by the workflow's stock
	// reservations and releases.
	MovimientoStockVersion = Version1
	// CarritoAbandonadoVersion is written by the carts pipe's input template.
	CarritoAbandonadoVersion = Version1
)

// accepted is the one list of the major versions the consumers of this app
// accept, per event type: the Parse functions and Validate methods check
// it, the queue consumers give it to their batch version check, the
// constructs declare it to the synth rule, and mf-dlq classify reads it.
// Accept a new major version here (and deploy the consumers) before any
// producer writes it.
var accepted = map[string][]int{
	TypePedidoCreado:      {Version1},
	TypePedidoConfirmado:  {Version1},
	TypeMovimientoStock:   {Version1},
	TypeCarritoAbandonado: {Version1},
}

// TiposMovimiento lists every TipoMovimiento (the enum of the schema).
func TiposMovimiento() []TipoMovimiento { return []TipoMovimiento{Reserva, Liberacion, Ajuste} }

// AcceptedVersions returns the major versions this app's consumers accept
// for eventType (a copy; nil for an unknown type).
func AcceptedVersions(eventType string) []int {
	return slices.Clone(accepted[eventType])
}

// checkVersion wraps ErrUnsupportedVersion when v is not accepted for eventType.
func checkVersion(eventType string, v int) error {
	if slices.Contains(accepted[eventType], v) {
		return nil
	}
	return fmt.Errorf("%w: %s version %d (supported: %v)", ErrUnsupportedVersion, eventType, v, accepted[eventType])
}
