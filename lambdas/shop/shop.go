// Package shop is the shop's side of the order flow: it writes an order and
// its PedidoCreado event (eventsapi, version 1) into the outbox in one
// transaction, so there is no dual write; it never calls EventBridge.
// lambdas/pedido-writer is its Lambda main, which the shop runs (this app
// does not deploy it; it creates its database role, mf_tienda).
//
// Writing is idempotent on pedido_id: a retried request returns the first
// attempt's event id and writes no second event. A payment retry (Intento
// >= 2, for an order that exists) writes one more event, once per attempt,
// which the workflow starter runs as an execution of its own; the charge's
// key stays cobro:<pedido_id>. Reasoning: docs/design.md#shop-orders.
package shop

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/outbox"
	"github.com/mercadofresco/integration/lambdas/postgres"
)

// TipoPedidoCreado is the detail-type of the event this function writes.
const TipoPedidoCreado = eventsapi.TypePedidoCreado

// ErrSolicitudInvalida wraps every validation failure of a Solicitud.
var ErrSolicitudInvalida = errors.New("shop: invalid request")

// Linea is one order line.
type Linea = eventsapi.Linea

// Solicitud is the function's input.
type Solicitud struct {
	PedidoID      string  `json:"pedido_id"`
	ClienteID     string  `json:"cliente_id"`
	ClienteEmail  string  `json:"cliente_email"`
	ClienteNombre string  `json:"cliente_nombre,omitempty"`
	Moneda        string  `json:"moneda,omitempty"`
	Lineas        []Linea `json:"lineas"`
	// TokenTarjeta is the payment gateway's card token for this order.
	TokenTarjeta string `json:"token_tarjeta"`
	// Intento is the payment attempt: 0 or 1 for the order itself, 2 and
	// more for a payment retry of an existing order (see the package doc).
	Intento int `json:"intento,omitempty"`
}

// Respuesta is the function's output.
type Respuesta struct {
	PedidoID      string `json:"pedido_id"`
	EventoID      string `json:"id_evento"`
	TotalCentimos int64  `json:"total_centimos"`
	// Duplicado is true when the order already existed (a retry).
	Duplicado bool `json:"duplicado"`
}

// pedidoCreado is the event payload: eventsapi.PedidoCreado version 1
// (the outbox publisher adds id_evento, agregado_id and creado_en).
type pedidoCreado = eventsapi.PedidoCreado

func (s *Solicitud) validar() (total int64, err error) {
	if s.PedidoID == "" || s.ClienteID == "" {
		return 0, fmt.Errorf("%w: pedido_id and cliente_id are required", ErrSolicitudInvalida)
	}
	if len(s.Lineas) == 0 {
		return 0, fmt.Errorf("%w: an order needs at least one line", ErrSolicitudInvalida)
	}
	s.Moneda = cmp.Or(s.Moneda, "EUR") // its form is the event's rule (eventsapi.IsCurrency), checked in CrearPedido
	for _, l := range s.Lineas {
		if l.SKU == "" || l.Cantidad <= 0 || l.PrecioCentimos < 0 || l.Cantidad > 10000 || l.PrecioCentimos > 100_000_000 {
			return 0, fmt.Errorf("%w: bad line %+v", ErrSolicitudInvalida, l)
		}
		total += l.Cantidad * l.PrecioCentimos
	}
	return total, nil
}

// CrearPedido writes the order and its event in one transaction.
func CrearPedido(ctx context.Context, db outbox.DB, s Solicitud) (Respuesta, error) {
	total, err := s.validar()
	if err != nil {
		return Respuesta{}, err
	}
	lineas, err := json.Marshal(s.Lineas)
	if err != nil {
		return Respuesta{}, fmt.Errorf("shop: encode lines: %w", err)
	}
	ev := pedidoCreado{Version: eventsapi.PedidoCreadoVersion, PedidoID: s.PedidoID, ClienteID: s.ClienteID,
		Cliente:       eventsapi.Cliente{ID: s.ClienteID, Email: s.ClienteEmail, Nombre: s.ClienteNombre},
		TotalCentimos: total, Moneda: s.Moneda, Lineas: s.Lineas, TokenTarjeta: s.TokenTarjeta}
	if s.Intento > 1 {
		ev.Intento = s.Intento
	}
	// The event must be one the order workflow accepts: a request it would
	// reject is refused here, before anything is written.
	if err := ev.Validate(); err != nil {
		return Respuesta{}, fmt.Errorf("%w: %v", ErrSolicitudInvalida, err)
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return Respuesta{}, fmt.Errorf("shop: encode event: %w", err)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return Respuesta{}, fmt.Errorf("shop: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	tag, err := tx.Exec(ctx, `INSERT INTO pedidos (pedido_id, cliente_id, lineas, total_centimos, moneda)
		VALUES ($1, $2, $3::jsonb, $4, $5) ON CONFLICT (pedido_id) DO NOTHING`,
		s.PedidoID, s.ClienteID, string(lineas), total, s.Moneda)
	if err != nil {
		return Respuesta{}, fmt.Errorf("shop: insert order: %w", err)
	}
	if tag.RowsAffected() == 0 && s.Intento > 1 {
		return reintentarPago(ctx, tx, s, total, payload)
	}
	if s.Intento > 1 {
		return Respuesta{}, fmt.Errorf("%w: payment retry %d of order %s, which does not exist", ErrSolicitudInvalida, s.Intento, s.PedidoID)
	}
	if tag.RowsAffected() == 0 {
		// A retry: answer with what the first attempt wrote.
		var r Respuesta
		err := tx.QueryRow(ctx, `SELECT p.pedido_id, p.total_centimos, o.id::text
			FROM pedidos p JOIN outbox o ON o.agregado_id = p.pedido_id AND o.tipo = $2
			WHERE p.pedido_id = $1 ORDER BY o.creado_en LIMIT 1`, s.PedidoID, TipoPedidoCreado).Scan(&r.PedidoID, &r.TotalCentimos, &r.EventoID)
		if err != nil {
			return Respuesta{}, fmt.Errorf("shop: read existing order %s: %w", s.PedidoID, err)
		}
		r.Duplicado = true
		return r, nil
	}
	id, err := outbox.Add(ctx, tx, outbox.Event{AggregateID: s.PedidoID, Type: TipoPedidoCreado, Payload: payload})
	if err != nil {
		return Respuesta{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Respuesta{}, fmt.Errorf("shop: commit: %w", err)
	}
	return Respuesta{PedidoID: s.PedidoID, EventoID: id.String(), TotalCentimos: total}, nil
}

// retryNamespace derives the event id of a payment retry from the order and
// the attempt (UUIDv5), so writing the same retry twice writes one event.
var retryNamespace = uuid.MustParse("6f1d2c8e-3b4a-5c6d-8e9f-0a1b2c3d4e5f")

// RetryEventID is the event id of attempt intento of order pedidoID.
func RetryEventID(pedidoID string, intento int) uuid.UUID {
	return uuid.NewSHA1(retryNamespace, []byte(fmt.Sprintf("%s\x00intento=%d", pedidoID, intento)))
}

// reintentarPago writes the PedidoCreado event of a payment retry, once per
// attempt. The order must be the one the first attempt wrote (same total).
func reintentarPago(ctx context.Context, tx pgx.Tx, s Solicitud, total int64, payload []byte) (Respuesta, error) {
	var stored int64
	if err := tx.QueryRow(ctx, `SELECT total_centimos FROM pedidos WHERE pedido_id = $1`, s.PedidoID).Scan(&stored); err != nil {
		return Respuesta{}, fmt.Errorf("shop: read order %s: %w", s.PedidoID, err)
	}
	if stored != total {
		return Respuesta{}, fmt.Errorf("%w: payment retry of order %s for %d cents, the order is %d", ErrSolicitudInvalida, s.PedidoID, total, stored)
	}
	id := RetryEventID(s.PedidoID, s.Intento)
	r := Respuesta{PedidoID: s.PedidoID, EventoID: id.String(), TotalCentimos: total}
	if _, err := outbox.Add(ctx, tx, outbox.Event{ID: id, AggregateID: s.PedidoID, Type: TipoPedidoCreado, Payload: payload}); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			r.Duplicado = true // this attempt was written already
			return r, nil
		}
		return Respuesta{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Respuesta{}, fmt.Errorf("shop: commit: %w", err)
	}
	return r, nil
}

// Function builds the handler of lambdas/pedido-writer from its
// environment: the database's variables (postgres.Open, role mf_tienda).
func Function(ctx context.Context, env *lambdaenv.Env, _ *slog.Logger) (func(context.Context, Solicitud) (Respuesta, error), error) {
	pool, _, err := postgres.Open(ctx, env, postgres.ConnectConfig{ApplicationName: "mf-pedido-writer"})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, s Solicitud) (Respuesta, error) { return CrearPedido(ctx, pool, s) }, nil
}
