package localaws

// PostgreSQL (standing in for Aurora behind RDS Proxy): each test gets its own corner of the machine's PostgreSQL:
// a database that is created on first use and a private schema per test,
// dropped when the test ends, so test binaries and parallel tests never see
// each other's rows.
//
// The server is postgres://postgres@127.0.0.1:5432 (trust auth, as on CI),
// or $OUTBOX_TEST_DSN (without a database name) when set.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresServerDSN is the PostgreSQL server the tests use, without a database.
func PostgresServerDSN() string {
	if v := os.Getenv("OUTBOX_TEST_DSN"); v != "" {
		return strings.TrimRight(v, "/")
	}
	return "postgres://postgres@127.0.0.1:5432"
}

// PostgresDSN is the connection string of db, with search_path set to schema when
// schema is not empty.
func PostgresDSN(db, schema string) string {
	s := PostgresServerDSN() + "/" + db + "?sslmode=disable"
	if schema != "" {
		s += "&search_path=" + schema
	}
	return s
}

// EnsureDatabase creates the database name unless it exists.
func EnsureDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, PostgresDSN("postgres", ""))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42P04" || pgErr.Code == "23505") {
		return nil // exists (or a parallel test binary just created it)
	}
	return err
}

// NewSchema creates a private schema named prefix + a random suffix in db and
// drops it (with everything in it) when the test ends.
func NewSchema(tb testing.TB, db, prefix string) string {
	tb.Helper()
	ctx := context.Background()
	name := UniqueName(prefix)
	conn, err := pgx.Connect(ctx, PostgresDSN(db, ""))
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), PostgresDSN(db, ""))
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{name}.Sanitize()+" CASCADE")
	})
	return name
}

// NewPostgresDatabase creates a database named prefix + a random suffix and drops
// it (WITH (FORCE)) when the test ends; a failed drop fails the test.
func NewPostgresDatabase(tb testing.TB, prefix string) string {
	tb.Helper()
	name := UniqueName(prefix)
	if err := EnsureDatabase(context.Background(), name); err != nil {
		tb.Fatalf("tests need PostgreSQL at %s: %v", PostgresServerDSN(), err)
	}
	tb.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, PostgresDSN("postgres", ""))
		if err != nil {
			tb.Logf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			tb.Errorf("drop database %s: %v", name, err)
		}
	})
	return name
}

// NewPool opens a pool of at most maxConns connections on db with schema as
// search_path, closed when the test ends.
func NewPool(tb testing.TB, db, schema string, maxConns int32) *pgxpool.Pool {
	tb.Helper()
	return openPool(tb, PostgresDSN(db, schema), "", maxConns)
}

// openPool opens a pool on dsn (as user, unless empty), closed when the
// test ends.
func openPool(tb testing.TB, dsn, user string, maxConns int32) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	if user != "" {
		cfg.ConnConfig.User = user
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// SchemaPool is the usual combination: db created if needed, a fresh private
// schema named with prefix, and a pool on it.
func SchemaPool(tb testing.TB, db, prefix string, maxConns int32) *pgxpool.Pool {
	tb.Helper()
	if err := EnsureDatabase(context.Background(), db); err != nil {
		tb.Fatalf("tests need PostgreSQL at %s: %v", PostgresServerDSN(), err)
	}
	return NewPool(tb, db, NewSchema(tb, db, prefix), maxConns)
}

// UniqueName returns prefix + 10 random hex digits: roles are global to the
// PostgreSQL server (not to a database or schema), so tests that create
// roles name them per run.
func UniqueName(prefix string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// PoolAs is NewPool logged in as user (the server trusts local
// connections, as on CI).
func PoolAs(tb testing.TB, db, schema, user string, maxConns int32) *pgxpool.Pool {
	tb.Helper()
	return openPool(tb, PostgresDSN(db, schema), user, maxConns)
}

// DropRolesAtEnd drops roles when the test ends, after what they own in db
// and their privileges there (DROP OWNED), so the server keeps no role of a
// finished test. It holds the advisory lock lockKey meanwhile: pass the key
// the code that GRANTs takes, so that a revoke and a grant on the same
// catalog row (the database's CONNECT) never run at once. Register it
// before opening pools as those roles: cleanups run last-registered first,
// so the pools close before the roles go.
func DropRolesAtEnd(tb testing.TB, db string, lockKey int64, roles ...string) {
	tb.Helper()
	tb.Cleanup(func() {
		ctx := context.Background()
		c, err := pgx.Connect(ctx, PostgresDSN(db, ""))
		if err != nil {
			tb.Logf("drop roles %v: %v", roles, err)
			return
		}
		defer c.Close(ctx)
		err = pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey); err != nil {
				return err
			}
			var existing []string // a test may end before creating them
			if err := tx.QueryRow(ctx, "SELECT coalesce(array_agg(rolname::text), '{}') FROM pg_roles WHERE rolname = ANY($1)", roles).Scan(&existing); err != nil {
				return err
			}
			if len(existing) == 0 {
				return nil
			}
			var ids []string
			for _, r := range existing {
				ids = append(ids, pgx.Identifier{r}.Sanitize())
			}
			list := strings.Join(ids, ", ")
			for _, s := range []string{"DROP OWNED BY " + list + " CASCADE", "DROP ROLE " + list} {
				if _, err := tx.Exec(ctx, s); err != nil {
					return fmt.Errorf("%s: %w", s, err)
				}
			}
			return nil
		})
		if err != nil {
			tb.Errorf("drop roles %v: %v", roles, err)
		}
	})
}
