package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mercadofresco/integration/lambdas/outbox"
)

// runMigrate applies the outbox's embedded SQL migrations
// (lambdas/lambdaapi/migrations) to a PostgreSQL database and lists what it
// applied; it is idempotent and safe to run concurrently (advisory lock).
// Deployed environments are migrated by the deploy itself (the custom
// resource backed by lambdas/outbox-migraciones, which also creates the
// roles and grants); this is for local databases and CI.
func runMigrate(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("migrate", "[-dsn DSN] [-list] [-timeout D]", stderr)
	dsn := fs.String("dsn", os.Getenv("DATABASE_URL"), "PostgreSQL connection string (default $DATABASE_URL)")
	list := fs.Bool("list", false, "only list the embedded migrations")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	if code, done := parse(fs, args); done {
		return code
	}
	if err := migrate(stdout, *dsn, *list, *timeout); err != nil {
		return fail(stderr, "migrate", err, 1)
	}
	return 0
}

func migrate(stdout io.Writer, dsn string, list bool, timeout time.Duration) error {
	if list {
		migs, err := outbox.Migrations()
		if err != nil {
			return err
		}
		for _, m := range migs {
			fmt.Fprintf(stdout, "%04d  %s  %s\n", m.Version, m.Checksum[:12], m.Name)
		}
		return nil
	}
	if dsn == "" {
		return fmt.Errorf("no -dsn and no $DATABASE_URL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	applied, err := outbox.Migrate(ctx, conn)
	for _, name := range applied {
		fmt.Fprintln(stdout, "applied", name)
	}
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(stdout, "up to date")
	}
	return nil
}
