package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is the subset of *pgxpool.Pool and *pgx.Conn the package uses.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ErrInvalidEvent is returned (wrapped) by Add for an event that can never
// be published: empty type or aggregate id, payload that is not a JSON object.
var ErrInvalidEvent = errors.New("outbox: invalid event")

// ErrEventTooLarge reports an event bigger than one PutEvents entry may be.
// Add refuses such payloads; the publisher parks rows that still exceed the
// limit once wrapped in the detail envelope.
var ErrEventTooLarge = errors.New("outbox: event larger than the EventBridge entry limit")

// Event is a domain event to be published after the transaction commits.
type Event struct {
	// ID is the event id. Leave it zero and Add generates a UUIDv7 (time
	// ordered, so the primary key index stays append-mostly). Consumers
	// de-duplicate on it.
	ID uuid.UUID
	// AggregateID identifies the entity the event is about, e.g. the pedido_id.
	AggregateID string
	// Type becomes the EventBridge detail-type, e.g. "PedidoCreado".
	Type string
	// Payload is the event body, a JSON object. It becomes the EventBridge
	// detail, with the Detail keys (ReservedDetailKeys) added. By project
	// convention it carries a "version" field and evolves additively.
	Payload json.RawMessage
}

func (e Event) validate() error {
	switch {
	case e.Type == "":
		return fmt.Errorf("%w: empty type", ErrInvalidEvent)
	case e.AggregateID == "":
		return fmt.Errorf("%w: empty aggregate id", ErrInvalidEvent)
	case len(e.Payload) > MaxEntryBytes:
		return fmt.Errorf("%w: payload of %d bytes (limit %d)", ErrEventTooLarge, len(e.Payload), MaxEntryBytes)
	case !json.Valid(e.Payload):
		return fmt.Errorf("%w: payload is not valid JSON", ErrInvalidEvent)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(e.Payload, &top); err != nil {
		return fmt.Errorf("%w: payload is not a JSON object", ErrInvalidEvent)
	}
	for _, k := range ReservedDetailKeys {
		if _, clash := top[k]; clash {
			return fmt.Errorf("%w: payload uses the reserved key %q", ErrInvalidEvent, k)
		}
	}
	return nil
}

// Add inserts e into the outbox inside the caller's transaction tx and
// returns its id. The event exists if and only if tx commits: this is what
// removes the dual write (INSERT, then PutEvents, with a crash in between)
// that lost 1 order in 900.
func Add(ctx context.Context, tx pgx.Tx, e Event) (uuid.UUID, error) {
	if tx == nil {
		return uuid.Nil, fmt.Errorf("%w: nil transaction", ErrInvalidEvent)
	}
	if err := e.validate(); err != nil {
		return uuid.Nil, err
	}
	id := e.ID
	if id == uuid.Nil {
		var err error
		if id, err = uuid.NewV7(); err != nil {
			return uuid.Nil, fmt.Errorf("outbox: generate event id: %w", err)
		}
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO outbox (id, agregado_id, tipo, payload) VALUES ($1::uuid, $2, $3, $4::jsonb)`,
		id.String(), e.AggregateID, e.Type, string(e.Payload)); err != nil {
		return uuid.Nil, fmt.Errorf("outbox: insert event %s: %w", id, err)
	}
	return id, nil
}
