package lambdatest

// The outbox's database set up as a deploy does, for
// tests: a private schema, the four roles (named per run, dropped at the
// end) created by CreateRoles as the server's superuser (standing in for
// the cluster's master user), the migrations and grants applied as the
// owner role, and one pool per role.

import (
	"context"
	"github.com/mercadofresco/integration/internal/localaws"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/outbox"
)

// OutboxDatabase is a migrated schema with a pool per role.
type OutboxDatabase struct {
	Schema string
	Roles  lambdaapi.DBRoles
	// Admin is the superuser (the master user's stand-in); Owner, Publisher,
	// Cleanup and Writer are logged in as the roles.
	Admin, Owner, Publisher, Cleanup, Writer *pgxpool.Pool
}

// NewOutboxDatabase creates db if needed and sets up a fresh schema and roles in it.
func NewOutboxDatabase(tb testing.TB, db string) *OutboxDatabase {
	tb.Helper()
	ctx := context.Background()
	if err := localaws.EnsureDatabase(ctx, db); err != nil {
		tb.Fatalf("tests need PostgreSQL at %s: %v", localaws.PostgresServerDSN(), err)
	}
	d := &OutboxDatabase{Schema: localaws.NewSchema(tb, db, "r_")}
	prefix := localaws.UniqueName("mft_") + "_"
	d.Roles = lambdaapi.DBRoles{Owner: prefix + "owner", Publisher: prefix + "pub", Cleanup: prefix + "cln", Writer: prefix + "wri"}
	localaws.DropRolesAtEnd(tb, db, outbox.MigrationLockKey, d.Roles.All()...)
	d.Admin = localaws.NewPool(tb, db, d.Schema, 2)
	if err := outbox.CreateRoles(ctx, d.Admin, d.Roles, outbox.RoleOptions{Schema: d.Schema}); err != nil {
		tb.Fatal(err)
	}
	d.Owner = localaws.PoolAs(tb, db, d.Schema, d.Roles.Owner, 2)
	if _, err := outbox.Migrate(ctx, d.Owner); err != nil {
		tb.Fatal(err)
	}
	if err := outbox.Grant(ctx, d.Owner, d.Roles); err != nil {
		tb.Fatal(err)
	}
	d.Publisher = localaws.PoolAs(tb, db, d.Schema, d.Roles.Publisher, 2)
	d.Cleanup = localaws.PoolAs(tb, db, d.Schema, d.Roles.Cleanup, 2)
	d.Writer = localaws.PoolAs(tb, db, d.Schema, d.Roles.Writer, 2)
	return d
}
