-- 0003: wake publishers early.
--
-- A statement-level trigger sends one NOTIFY per inserting transaction (PG
-- folds identical notifications of a transaction into one), delivered only
-- at COMMIT, so a listener never wakes for a row it cannot see yet.
-- Publishers connected directly to the database may LISTEN on
-- outbox_pendiente; the Lambda publisher behind RDS Proxy does not (LISTEN
-- pins the proxy connection) and simply polls every second.
CREATE FUNCTION outbox_notificar() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('outbox_pendiente', '');
    RETURN NULL;
END;
$$;

CREATE TRIGGER outbox_notificar
    AFTER INSERT ON outbox
    FOR EACH STATEMENT
    EXECUTE FUNCTION outbox_notificar();
