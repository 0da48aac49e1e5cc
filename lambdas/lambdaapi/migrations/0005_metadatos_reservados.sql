-- 0005: the event metadata belongs to the publisher.
--
-- The publisher writes id_evento, agregado_id and creado_en at the top level
-- of every EventBridge detail, from the row's own columns. A payload with
-- one of those keys would put a second, different value beside it, and most
-- JSON decoders keep the last one: a writer could forge the event id that
-- consumers de-duplicate on. outbox.Add refuses such payloads; this
-- constraint refuses them from any other writer too. NOT VALID: rows
-- written before it are not re-checked (that would lock the table and fail
-- the deploy on a legacy row); the publisher drops those keys from them
-- anyway (encodeDetail).
ALTER TABLE outbox
    ADD CONSTRAINT outbox_payload_sin_metadatos
    CHECK (NOT (payload ?| ARRAY['id_evento', 'agregado_id', 'creado_en']))
    NOT VALID;
