// Command pedido-writer is the example order-writing function: it inserts
// the order and its PedidoCreado event into the outbox in ONE transaction,
// so there is no dual write (the INSERT-then-PutEvents code that lost 1
// order in 900). It never calls EventBridge; the outbox publisher does.
//
// It is idempotent on pedido_id (chosen by the shop before the first
// attempt): a retried request returns the first attempt's event id and
// writes no second event.
//
// The event is orderevents.PedidoCreado version 1: the order with the
// customer (id, e-mail, name) and the gateway card token the workflow
// charges; a request without them is refused.
//
// Environment: DB_HOST (RDS Proxy endpoint), DB_PORT, DB_NAME, DB_USER (IAM
// authentication; see postgres.FromEnv), AWS_MAX_ATTEMPTS, LOG_LEVEL.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mercadofresco/integration/lambdas/internal/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/orders/orderevents"
	"github.com/mercadofresco/integration/lambdas/outbox"
	"github.com/mercadofresco/integration/lambdas/postgres"
)

// TipoPedidoCreado is the detail-type of the event this function writes.
const TipoPedidoCreado = "PedidoCreado"

// ErrSolicitudInvalida wraps every validation failure of a Solicitud.
var ErrSolicitudInvalida = errors.New("pedido-writer: invalid request")

// Linea is one order line.
type Linea = orderevents.Linea

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
}

// Respuesta is the function's output.
type Respuesta struct {
	PedidoID      string `json:"pedido_id"`
	EventoID      string `json:"id_evento"`
	TotalCentimos int64  `json:"total_centimos"`
	// Duplicado is true when the order already existed (a retry).
	Duplicado bool `json:"duplicado"`
}

// pedidoCreado is the event payload: orderevents.PedidoCreado version 1
// (the outbox publisher adds id_evento, agregado_id and creado_en).
type pedidoCreado = orderevents.PedidoCreado

func (s *Solicitud) validar() (total int64, err error) {
	if s.PedidoID == "" || s.ClienteID == "" {
		return 0, fmt.Errorf("%w: pedido_id and cliente_id are required", ErrSolicitudInvalida)
	}
	if len(s.Lineas) == 0 {
		return 0, fmt.Errorf("%w: an order needs at least one line", ErrSolicitudInvalida)
	}
	if s.Moneda == "" {
		s.Moneda = "EUR"
	}
	if len(s.Moneda) != 3 {
		return 0, fmt.Errorf("%w: moneda %q is not an ISO 4217 code", ErrSolicitudInvalida, s.Moneda)
	}
	for _, l := range s.Lineas {
		if l.SKU == "" || l.Cantidad <= 0 || l.PrecioCentimos < 0 || l.Cantidad > 10000 || l.PrecioCentimos > 100_000_000 {
			return 0, fmt.Errorf("%w: bad line %+v", ErrSolicitudInvalida, l)
		}
		total += l.Cantidad * l.PrecioCentimos
	}
	return total, nil
}

// crearPedido writes the order and its event in one transaction.
func crearPedido(ctx context.Context, db outbox.DB, s Solicitud) (Respuesta, error) {
	total, err := s.validar()
	if err != nil {
		return Respuesta{}, err
	}
	lineas, err := json.Marshal(s.Lineas)
	if err != nil {
		return Respuesta{}, fmt.Errorf("pedido-writer: encode lines: %w", err)
	}
	ev := pedidoCreado{Version: orderevents.Version1, PedidoID: s.PedidoID, ClienteID: s.ClienteID,
		Cliente:       orderevents.Cliente{ID: s.ClienteID, Email: s.ClienteEmail, Nombre: s.ClienteNombre},
		TotalCentimos: total, Moneda: s.Moneda, Lineas: s.Lineas, TokenTarjeta: s.TokenTarjeta}
	// The event must be one the order workflow accepts: a request it would
	// reject is refused here, before anything is written.
	if err := ev.Validate(); err != nil {
		return Respuesta{}, fmt.Errorf("%w: %v", ErrSolicitudInvalida, err)
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return Respuesta{}, fmt.Errorf("pedido-writer: encode event: %w", err)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return Respuesta{}, fmt.Errorf("pedido-writer: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	tag, err := tx.Exec(ctx, `INSERT INTO pedidos (pedido_id, cliente_id, lineas, total_centimos, moneda)
		VALUES ($1, $2, $3::jsonb, $4, $5) ON CONFLICT (pedido_id) DO NOTHING`,
		s.PedidoID, s.ClienteID, string(lineas), total, s.Moneda)
	if err != nil {
		return Respuesta{}, fmt.Errorf("pedido-writer: insert order: %w", err)
	}
	if tag.RowsAffected() == 0 {
		// A retry: answer with what the first attempt wrote.
		var r Respuesta
		err := tx.QueryRow(ctx, `SELECT p.pedido_id, p.total_centimos, o.id::text
			FROM pedidos p JOIN outbox o ON o.agregado_id = p.pedido_id AND o.tipo = $2
			WHERE p.pedido_id = $1 ORDER BY o.creado_en LIMIT 1`, s.PedidoID, TipoPedidoCreado).Scan(&r.PedidoID, &r.TotalCentimos, &r.EventoID)
		if err != nil {
			return Respuesta{}, fmt.Errorf("pedido-writer: read existing order %s: %w", s.PedidoID, err)
		}
		r.Duplicado = true
		return r, nil
	}
	id, err := outbox.Add(ctx, tx, outbox.Event{AggregateID: s.PedidoID, Type: TipoPedidoCreado, Payload: payload})
	if err != nil {
		return Respuesta{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Respuesta{}, fmt.Errorf("pedido-writer: commit: %w", err)
	}
	return Respuesta{PedidoID: s.PedidoID, EventoID: id.String(), TotalCentimos: total}, nil
}

func main() {
	env := lambdaenv.New(os.Getenv)
	log := env.Logger("pedido-writer")
	ctx := context.Background()
	awsCfg, err := env.LoadAWSConfig(ctx)
	if err != nil {
		log.Error("pedido-writer init", "error", err)
		os.Exit(1)
	}
	pool, err := postgres.FromEnv(ctx, env, awsCfg, secretsmanager.NewFromConfig(awsCfg),
		postgres.ConnectConfig{MaxConns: 1, ApplicationName: "mf-pedido-writer"})
	if err != nil {
		log.Error("pedido-writer init", "error", err)
		os.Exit(1)
	}
	lambda.Start(func(ctx context.Context, s Solicitud) (Respuesta, error) {
		return crearPedido(ctx, pool, s)
	})
}
