// Command outbox-migrate applies the outbox's embedded SQL migrations
// (lambdas/lambdaapi/migrations) to a PostgreSQL database and lists what
// it applied. It is idempotent and safe to run concurrently (advisory lock).
// Deployed environments are migrated by the deploy itself (the custom
// resource backed by lambdas/outbox-migraciones, which also creates the roles and
// grants); this tool is for local databases and CI.
//
//	outbox-migrate -dsn 'postgres://postgres@127.0.0.1:5432/mf_outbox?sslmode=disable'
//	outbox-migrate -list
//
// The DSN may also come from $DATABASE_URL.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mercadofresco/integration/lambdas/outbox"
)

func main() {
	dsn := flag.String("dsn", os.Getenv("DATABASE_URL"), "PostgreSQL connection string (default $DATABASE_URL)")
	list := flag.Bool("list", false, "only list the embedded migrations")
	timeout := flag.Duration("timeout", 2*time.Minute, "give up after this long")
	flag.Parse()
	if err := run(*dsn, *list, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "outbox-migrate:", err)
		os.Exit(1)
	}
}

func run(dsn string, list bool, timeout time.Duration) error {
	if list {
		migs, err := outbox.Migrations()
		if err != nil {
			return err
		}
		for _, m := range migs {
			fmt.Printf("%04d  %s  %s\n", m.Version, m.Checksum[:12], m.Name)
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
		fmt.Println("applied", name)
	}
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Println("up to date")
	}
	return nil
}
