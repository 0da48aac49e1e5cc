-- 0001: the transactional outbox table.
--
-- One row per domain event, inserted in the SAME transaction as the state
-- change it announces (see package outbox). The publisher claims rows with a
-- lease, publishes them to EventBridge and marks them published; the daily
-- cleanup deletes rows published more than 7 days ago.
CREATE TABLE outbox (
    -- Event id. Travels to EventBridge in detail.id_evento so that every
    -- consumer can de-duplicate the (rare) crash replays of the publisher.
    id              uuid        PRIMARY KEY,
    agregado_id     text        NOT NULL,
    -- EventBridge detail-type, e.g. PedidoCreado.
    tipo            text        NOT NULL,
    payload         jsonb       NOT NULL,
    creado_en       timestamptz NOT NULL DEFAULT now(),
    -- NULL = not published yet.
    publicado_en    timestamptz,
    -- Number of times a publisher claimed the row (crashes included; whole
    -- call outages are refunded, see the package doc).
    intentos        integer     NOT NULL DEFAULT 0,
    ultimo_error    text,
    -- Lease: while bloqueado_hasta > now() no other publisher claims the row.
    -- Also used as the retry backoff after a failed attempt.
    bloqueado_hasta timestamptz,
    -- Token of the claim that holds the lease (one random uuid per batch).
    bloqueado_por   uuid,
    -- Parked flag: non-NULL = poison row, never retried automatically.
    aparcado_en     timestamptz,
    CONSTRAINT outbox_tipo_no_vacio CHECK (tipo <> ''),
    CONSTRAINT outbox_agregado_no_vacio CHECK (agregado_id <> ''),
    CONSTRAINT outbox_payload_objeto CHECK (jsonb_typeof(payload) = 'object')
) WITH (
    -- Room on each page so the lease UPDATE (non-indexed columns only) can be
    -- a HOT update, and aggressive autovacuum: this is a queue-like table
    -- with a lot of dead tuples from claims, marks and the daily cleanup.
    fillfactor = 80,
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02
);

-- The publisher and the pending/oldest metrics only ever look at
-- unpublished, unparked rows; a partial index stays as small as the backlog
-- instead of growing with the whole history.
CREATE INDEX outbox_pendientes ON outbox (creado_en)
    WHERE publicado_en IS NULL AND aparcado_en IS NULL;

-- Parked rows: the parked-count metric and the operator's runbook query.
CREATE INDEX outbox_aparcados ON outbox (aparcado_en)
    WHERE aparcado_en IS NOT NULL;

-- The daily cleanup deletes by publication date.
CREATE INDEX outbox_publicados ON outbox (publicado_en)
    WHERE publicado_en IS NOT NULL;
