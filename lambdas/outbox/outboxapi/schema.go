package outboxapi

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// Migrations holds the migrations: migrations/NNNN_name.sql.
//
//go:embed migrations/*.sql
var Migrations embed.FS

// MigrationsDir is the directory of the migrations inside Migrations.
const MigrationsDir = "migrations"

// SchemaHash is the SHA-256 (hex) of every migration's name and content, in name
// order (fs.ReadDir's): it changes when a migration is added or edited, and only then.
func SchemaHash() string {
	entries, err := fs.ReadDir(Migrations, MigrationsDir)
	if err != nil {
		panic("outboxapi: embedded migrations unreadable: " + err.Error()) // impossible: embedded at build time
	}
	h := sha256.New()
	for _, e := range entries {
		n := e.Name()
		body, err := Migrations.ReadFile(MigrationsDir + "/" + n)
		if err != nil {
			panic("outboxapi: embedded migration unreadable: " + err.Error())
		}
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(body))
		h.Write(body)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Default role names (docs/design.md#database-roles).
const (
	DefaultOwner     = "mf_migrador"
	DefaultPublisher = "mf_publicador"
	DefaultCleanup   = "mf_limpieza"
	DefaultWriter    = "mf_tienda"
)

// Roles names the database roles. Each function connects as its own role,
// never as the cluster's master user:
//
//   - Owner owns the tables and runs the migrations and the grants (the
//     deploy-time migration function only).
//   - Publisher claims, marks and parks outbox rows and reads the gauges:
//     SELECT on outbox, UPDATE of the bookkeeping columns only.
//   - Cleanup deletes published rows and reads the gauges: DELETE on
//     outbox, SELECT of the date columns only (never the payloads).
//   - Writer is the shop: INSERT into pedidos and outbox (the event's own
//     columns only, so it cannot write a row as already published) and
//     SELECT of the columns its idempotent re-read needs.
type Roles struct {
	Owner     string `json:"owner"`
	Publisher string `json:"publisher"`
	Cleanup   string `json:"cleanup"`
	Writer    string `json:"writer"`
}

// DefaultRoles returns the production role names.
func DefaultRoles() Roles {
	return Roles{Owner: DefaultOwner, Publisher: DefaultPublisher, Cleanup: DefaultCleanup, Writer: DefaultWriter}
}

// ErrInvalidRoles is wrapped by Validate's errors.
var ErrInvalidRoles = errors.New("outboxapi: invalid role names")

// All returns the four names, owner first.
func (r Roles) All() []string { return []string{r.Owner, r.Publisher, r.Cleanup, r.Writer} }

// Applications returns the roles of the functions that are not the owner.
func (r Roles) Applications() []string { return []string{r.Publisher, r.Cleanup, r.Writer} }

// Validate reports every problem: each name must be a plain lower-case
// PostgreSQL identifier ([a-z_][a-z0-9_]*, at most 63 bytes), not a
// reserved prefix (pg_, rds), and the four names must differ.
func (r Roles) Validate() error {
	var problems []string
	seen := map[string]bool{}
	for _, n := range r.All() {
		switch {
		case !plainIdentifier(n):
			problems = append(problems, fmt.Sprintf("%q is not a lower-case identifier of at most 63 bytes", n))
		case strings.HasPrefix(n, "pg_") || strings.HasPrefix(n, "rds"):
			problems = append(problems, fmt.Sprintf("%q uses a reserved prefix", n))
		case seen[n]:
			problems = append(problems, fmt.Sprintf("%q is used for two roles", n))
		}
		seen[n] = true
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidRoles, strings.Join(problems, "; "))
	}
	return nil
}

func plainIdentifier(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c == '_':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
