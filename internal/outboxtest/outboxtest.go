// Package outboxtest sets up the outbox's database as a deploy does, for
// tests: a private schema, the four roles (named per run, dropped at the
// end) created by CreateRoles as the server's superuser (standing in for
// the cluster's master user), the migrations and grants applied as the
// owner role, and one pool per role.
package outboxtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercadofresco/integration/internal/pgtest"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/outbox"
)

// Database is a migrated schema with a pool per role.
type Database struct {
	Schema string
	Roles  lambdaapi.DBRoles
	// Admin is the superuser (the master user's stand-in); Owner, Publisher,
	// Cleanup and Writer are logged in as the roles.
	Admin, Owner, Publisher, Cleanup, Writer *pgxpool.Pool
}

// New creates db if needed and sets up a fresh schema and roles in it.
func New(tb testing.TB, db string) *Database {
	tb.Helper()
	ctx := context.Background()
	if err := pgtest.EnsureDatabase(ctx, db); err != nil {
		tb.Fatalf("tests need PostgreSQL at %s: %v", pgtest.ServerDSN(), err)
	}
	d := &Database{Schema: pgtest.NewSchema(tb, db, "r_")}
	prefix := pgtest.UniqueName("mft_") + "_"
	d.Roles = lambdaapi.DBRoles{Owner: prefix + "owner", Publisher: prefix + "pub", Cleanup: prefix + "cln", Writer: prefix + "wri"}
	pgtest.DropRolesAtEnd(tb, db, outbox.MigrationLockKey, d.Roles.All()...)
	d.Admin = pgtest.NewPool(tb, db, d.Schema, 2)
	if err := outbox.CreateRoles(ctx, d.Admin, d.Roles, outbox.RoleOptions{Schema: d.Schema}); err != nil {
		tb.Fatal(err)
	}
	d.Owner = pgtest.PoolAs(tb, db, d.Schema, d.Roles.Owner, 2)
	if _, err := outbox.Migrate(ctx, d.Owner); err != nil {
		tb.Fatal(err)
	}
	if err := outbox.Grant(ctx, d.Owner, d.Roles); err != nil {
		tb.Fatal(err)
	}
	d.Publisher = pgtest.PoolAs(tb, db, d.Schema, d.Roles.Publisher, 2)
	d.Cleanup = pgtest.PoolAs(tb, db, d.Schema, d.Roles.Cleanup, 2)
	d.Writer = pgtest.PoolAs(tb, db, d.Schema, d.Roles.Writer, 2)
	return d
}
