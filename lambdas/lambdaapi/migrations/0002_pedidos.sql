-- 0002: example domain table written together with its outbox row.
CREATE TABLE pedidos (
    -- Chosen by the shop before the first write attempt, so a retried
    -- request is recognised (the idempotency keys downstream,
    -- cobro:<pedido_id> etc., derive from it).
    pedido_id      text        PRIMARY KEY,
    cliente_id     text        NOT NULL,
    lineas         jsonb       NOT NULL,
    total_centimos bigint      NOT NULL CHECK (total_centimos >= 0),
    moneda         char(3)     NOT NULL DEFAULT 'EUR',
    estado         text        NOT NULL DEFAULT 'CREADO',
    creado_en      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT pedidos_id_no_vacio CHECK (pedido_id <> ''),
    CONSTRAINT pedidos_lineas_array CHECK (jsonb_typeof(lineas) = 'array')
);
