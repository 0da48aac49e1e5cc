package outbox

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// MigrationLockKey is the pg_advisory_xact_lock key that serialises
// concurrent migrators, role creators and granters (two deploys, or a
// deploy and a test run), so a migration is never applied twice and two
// GRANTs never race on one catalog row.
const MigrationLockKey int64 = 0x6d665f6f7574626f // "mf_outbo"

// ErrMigrationChanged reports that a migration already applied to the
// database differs from the file embedded in this binary. Applied migrations
// are immutable: write a new one instead of editing an old one.
var ErrMigrationChanged = errors.New("outbox: applied migration differs from embedded file")

// Migration is one versioned SQL file embedded in the binary.
type Migration struct {
	Version  int
	Name     string
	SQL      string
	Checksum string
}

// Migrations returns the embedded migrations in version order. File names
// are NNNN_name.sql; versions must be unique.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(lambdaapi.Migrations, lambdaapi.MigrationsDir)
	if err != nil {
		return nil, fmt.Errorf("outbox: read embedded migrations: %w", err)
	}
	var out []Migration
	seen := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		prefix, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			return nil, fmt.Errorf("outbox: migration %q: want NNNN_name.sql", e.Name())
		}
		v, err := strconv.Atoi(prefix)
		if err != nil {
			return nil, fmt.Errorf("outbox: migration %q: bad version: %w", e.Name(), err)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("outbox: migrations %q and %q share version %d", other, e.Name(), v)
		}
		seen[v] = e.Name()
		body, err := lambdaapi.Migrations.ReadFile(path.Join(lambdaapi.MigrationsDir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("outbox: read migration %q: %w", e.Name(), err)
		}
		sum := sha256.Sum256(body)
		out = append(out, Migration{Version: v, Name: e.Name(), SQL: string(body), Checksum: hex.EncodeToString(sum[:])})
	}
	slices.SortFunc(out, func(a, b Migration) int { return cmp.Compare(a.Version, b.Version) })
	return out, nil
}

// Migrate applies the embedded migrations that the database does not have
// yet, each in its own transaction together with its bookkeeping row in
// outbox_migraciones, and returns the names of those it applied. It is safe
// to run concurrently and repeatedly. It fails with ErrMigrationChanged if an
// applied migration was edited afterwards.
func Migrate(ctx context.Context, db DB) ([]string, error) {
	migs, err := Migrations()
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS outbox_migraciones (
		version     integer     PRIMARY KEY,
		nombre      text        NOT NULL,
		checksum    text        NOT NULL,
		aplicada_en timestamptz NOT NULL DEFAULT now())`); err != nil {
		// Two migrators racing on CREATE TABLE IF NOT EXISTS can collide on
		// the catalog's unique index; the loser simply retries once.
		if _, err2 := db.Exec(ctx, `SELECT 1 FROM outbox_migraciones LIMIT 1`); err2 != nil {
			return nil, fmt.Errorf("outbox: create outbox_migraciones: %w", err)
		}
	}
	var applied []string
	for _, m := range migs {
		done, err := applyMigration(ctx, db, m)
		if err != nil {
			return applied, err
		}
		if done {
			applied = append(applied, m.Name)
		}
	}
	return applied, nil
}

func applyMigration(ctx context.Context, db DB, m Migration) (applied bool, err error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("outbox: migration %s: begin: %w", m.Name, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if _, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, MigrationLockKey); err != nil {
		return false, fmt.Errorf("outbox: migration %s: lock: %w", m.Name, err)
	}
	var checksum string
	err = tx.QueryRow(ctx, `SELECT checksum FROM outbox_migraciones WHERE version = $1`, m.Version).Scan(&checksum)
	switch {
	case err == nil:
		if checksum != m.Checksum {
			return false, fmt.Errorf("%w: %s (database %s, binary %s)", ErrMigrationChanged, m.Name, checksum[:12], m.Checksum[:12])
		}
		return false, tx.Rollback(ctx)
	case errors.Is(err, pgx.ErrNoRows):
	default:
		return false, fmt.Errorf("outbox: migration %s: read state: %w", m.Name, err)
	}
	// No arguments: pgx sends the file with the simple protocol, so a file
	// may hold several statements.
	if _, err = tx.Exec(ctx, m.SQL); err != nil {
		return false, fmt.Errorf("outbox: migration %s: %w", m.Name, err)
	}
	if _, err = tx.Exec(ctx, `INSERT INTO outbox_migraciones (version, nombre, checksum) VALUES ($1, $2, $3)`,
		m.Version, m.Name, m.Checksum); err != nil {
		return false, fmt.Errorf("outbox: migration %s: record: %w", m.Name, err)
	}
	if err = tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("outbox: migration %s: commit: %w", m.Name, err)
	}
	return true, nil
}
