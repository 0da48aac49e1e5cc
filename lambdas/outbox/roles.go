package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// ErrUnsafeRole reports a role that already exists with an attribute none
// of the outbox's roles may have (superuser, CREATEROLE, CREATEDB,
// REPLICATION, BYPASSRLS). CreateRoles refuses to use it rather than
// quietly hand a function more than it needs.
var ErrUnsafeRole = errors.New("outbox: existing role has attributes it must not have")

// RoleOptions configures CreateRoles.
type RoleOptions struct {
	// IAM grants rds_iam to every role: on Aurora and RDS such a role logs
	// in with IAM authentication tokens only (through RDS Proxy's
	// end-to-end IAM authentication), never with a password.
	IAM bool
	// Schema holds the outbox's tables. Default "public".
	Schema string
}

// adoptable are the objects of the migrations that an earlier version
// created as the master user (when the publisher migrated at start-up);
// CreateRoles hands them to the owner role.
var adoptable = []struct{ kind, name string }{
	{"TABLE", "outbox_migraciones"}, {"TABLE", "outbox"}, {"TABLE", "pedidos"},
	{"FUNCTION", "outbox_notificar()"},
}

// CreateRoles creates the outbox's login roles, idempotently, and gives
// them what they need before the first migration: CONNECT on the current
// database, USAGE on the schema (and CREATE for the owner), rds_iam with
// opts.IAM. It must run as a role allowed to create roles and grant rds_iam
// (the cluster's master user): it is the only work the master user does,
// and it runs these fixed statements only, never a migration file. Objects
// of the migrations that already exist under another owner (created by an
// earlier version, which migrated as the master user) are handed to the
// owner role. Safe to run concurrently and repeatedly (advisory lock, one
// transaction).
func CreateRoles(ctx context.Context, db DB, roles lambdaapi.DBRoles, opts RoleOptions) (err error) {
	if err := roles.Validate(); err != nil {
		return err
	}
	opts.Schema = cmp.Or(opts.Schema, "public")
	return lockedTx(ctx, db, "create roles", func(tx pgx.Tx) error { return createRoles(ctx, tx, roles, opts) })
}

func createRoles(ctx context.Context, tx pgx.Tx, roles lambdaapi.DBRoles, opts RoleOptions) (err error) {
	var database string
	if err = tx.QueryRow(ctx, `SELECT current_database()`).Scan(&database); err != nil {
		return err
	}
	var stmts []string
	for _, name := range roles.All() {
		var unsafe bool
		err = tx.QueryRow(ctx, `SELECT rolsuper OR rolcreaterole OR rolcreatedb OR rolreplication OR rolbypassrls
			FROM pg_roles WHERE rolname = $1`, name).Scan(&unsafe)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			// Default attributes: NOSUPERUSER NOCREATEDB NOCREATEROLE
			// NOREPLICATION NOBYPASSRLS, no password.
			stmts = append(stmts, "CREATE ROLE "+ident(name)+" LOGIN")
		case err != nil:
			return fmt.Errorf("read role %s: %w", name, err)
		case unsafe:
			return fmt.Errorf("%w: %s", ErrUnsafeRole, name)
		default:
			stmts = append(stmts, "ALTER ROLE "+ident(name)+" LOGIN")
		}
		if opts.IAM {
			stmts = append(stmts, "GRANT rds_iam TO "+ident(name))
		}
		stmts = append(stmts, "GRANT CONNECT ON DATABASE "+ident(database)+" TO "+ident(name))
	}
	stmts = append(stmts,
		"GRANT USAGE, CREATE ON SCHEMA "+ident(opts.Schema)+" TO "+ident(roles.Owner),
		"GRANT USAGE ON SCHEMA "+ident(opts.Schema)+" TO "+strings.Join(quoteAll(roles.Applications()), ", "))
	if err := execAll(ctx, tx, stmts); err != nil {
		return err
	}
	return adopt(ctx, tx, roles.Owner, opts.Schema)
}

// lockedTx runs fn in a transaction holding MigrationLockKey, and commits
// it if fn succeeds.
func lockedTx(ctx context.Context, db DB, what string, fn func(pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, MigrationLockKey); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		return fn(tx)
	})
	if err != nil {
		return fmt.Errorf("outbox: %s: %w", what, err)
	}
	return nil
}

// adopt hands the migrations' existing objects in schema to owner.
func adopt(ctx context.Context, tx pgx.Tx, owner, schemaName string) error {
	granted := false
	for _, o := range adoptable {
		qualified := ident(schemaName) + "." + o.name
		if o.kind == "TABLE" {
			qualified = ident(schemaName) + "." + ident(o.name)
		}
		var current *string
		err := tx.QueryRow(ctx, `SELECT CASE $1::text
				WHEN 'TABLE' THEN (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = to_regclass($2))
				ELSE (SELECT pg_get_userbyid(proowner) FROM pg_proc WHERE oid = to_regprocedure($2)) END`,
			o.kind, qualified).Scan(&current)
		if err != nil {
			return fmt.Errorf("owner of %s: %w", qualified, err)
		}
		if current == nil || *current == owner {
			continue
		}
		if !granted {
			// ALTER ... OWNER TO needs membership of the new owner; the
			// creator of a role may grant it (PostgreSQL 16: ADMIN OPTION).
			if _, err := tx.Exec(ctx, "GRANT "+ident(owner)+" TO CURRENT_USER"); err != nil {
				return fmt.Errorf("join %s to adopt %s: %w", owner, qualified, err)
			}
			granted = true
		}
		if _, err := tx.Exec(ctx, "ALTER "+o.kind+" "+qualified+" OWNER TO "+ident(owner)); err != nil {
			return fmt.Errorf("adopt %s: %w", qualified, err)
		}
	}
	return nil
}

// ident quotes a PostgreSQL identifier.
func ident(s string) string { return pgx.Identifier{s}.Sanitize() }

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = ident(n)
	}
	return out
}

// execAll runs stmts in order, stopping at the first that fails.
func execAll(ctx context.Context, tx pgx.Tx, stmts []string) error {
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// grants are the privileges of each function's role, exactly: Grant first
// revokes everything else. Column lists keep each role to the columns its
// statements use (docs/design.md#database-roles); a migration that adds a
// column a function needs must add it here too.
func grants(r lambdaapi.DBRoles) []string {
	pub, cln, wri := ident(r.Publisher), ident(r.Cleanup), ident(r.Writer)
	return []string{
		// Publisher: claim (FOR UPDATE needs UPDATE on some column), mark,
		// park, gauges. It can change no event's content, identity or date.
		"GRANT SELECT ON outbox TO " + pub,
		"GRANT UPDATE (intentos, ultimo_error, bloqueado_hasta, bloqueado_por, aparcado_en, publicado_en) ON outbox TO " + pub,
		// Cleanup: the batched DELETE and the gauges; never the payloads.
		"GRANT SELECT (id, creado_en, publicado_en, aparcado_en) ON outbox TO " + cln,
		"GRANT DELETE ON outbox TO " + cln,
		// Writer: the order and its event, and the columns of its
		// idempotent re-read; an event is always inserted unpublished.
		"GRANT INSERT (id, agregado_id, tipo, payload) ON outbox TO " + wri,
		"GRANT SELECT (id, agregado_id, tipo, creado_en) ON outbox TO " + wri,
		"GRANT INSERT (pedido_id, cliente_id, lineas, total_centimos, moneda) ON pedidos TO " + wri,
		"GRANT SELECT (pedido_id, total_centimos) ON pedidos TO " + wri,
	}
}

// Grant sets the privileges of the function roles on the migrated tables
// to exactly those they use, in one transaction: everything is revoked
// from PUBLIC and from the three roles, then granted again. Run it as the
// owner role, after Migrate, on every deploy (it is idempotent).
func Grant(ctx context.Context, db DB, roles lambdaapi.DBRoles) error {
	if err := roles.Validate(); err != nil {
		return err
	}
	grantees := "PUBLIC, " + strings.Join(quoteAll(roles.Applications()), ", ")
	stmts := append([]string{"REVOKE ALL ON outbox, pedidos, outbox_migraciones FROM " + grantees}, grants(roles)...)
	return lockedTx(ctx, db, "grant", func(tx pgx.Tx) error { return execAll(ctx, tx, stmts) })
}
