package lambdatest

import (
	"context"
	"errors"
	"github.com/mercadofresco/integration/internal/localaws"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Database is a fresh database on the local PostgreSQL for one test.
type Database struct {
	// Name is the database's name (DB_NAME).
	Name string
	// Super is a pool on it as the server's superuser (the tests' own
	// access: set-up and checks).
	Super *pgxpool.Pool
}

// NewDatabase creates a database with a unique name, dropped when the test
// ends, and points env at it the way RDS Proxy is reached: DB_HOST
// "localhost" (the name the server's certificate carries), DB_PORT 5432,
// DB_NAME the new database, DB_MAX_CONNS 2. The function keeps its TLS verify-full: the
// test trusts the server's certificate through PGSSLROOTCERT, libpq's
// variable that pgx reads (a Lambda trusts the proxy's ACM certificate
// through the system roots). The local server trusts local connections,
// so the IAM token a function signs is accepted as its password.
func NewDatabase(t *testing.T, env map[string]string) *Database {
	t.Helper()
	name := localaws.NewPostgresDatabase(t, "mf_wiring_")
	env["DB_HOST"], env["DB_PORT"], env["DB_NAME"], env["DB_MAX_CONNS"] = "localhost", "5432", name, "2"
	t.Setenv("PGSSLROOTCERT", localaws.ServerCert)
	return &Database{Name: name, Super: localaws.NewPool(t, name, "", 2)}
}

// EnsureRoles creates each role (with attrs: "LOGIN", "NOLOGIN") unless it
// exists (roles belong to
// the server, not to a database: the template's fixed names, such as
// mf_publicador, are created once and kept, owning nothing once the
// test's database is gone). Two test processes may race: the loser's
// duplicate is ignored.
func EnsureRoles(t testing.TB, db *Database, attrs string, names ...string) {
	t.Helper()
	for _, n := range names {
		_, err := db.Super.Exec(context.Background(), "CREATE ROLE "+pgx.Identifier{n}.Sanitize()+" "+attrs)
		var pgErr *pgconn.PgError
		if err != nil && !(errors.As(err, &pgErr) && (pgErr.Code == "42710" || pgErr.Code == "23505")) {
			t.Fatalf("create role %s: %v", n, err)
		}
	}
}
