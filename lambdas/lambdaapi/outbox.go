package lambdaapi

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
)

// The outbox (lambdas/outbox, constructs/outbox, bench/cmd/outbox-bench):
// the schema's migrations and their SchemaHash, which the schema's custom
// resource carries so that a deploy that changes a migration applies them
// again; the database roles; the publisher's schedule (an invocation every
// PublisherPeriod that polls for PublisherPollWindow, so two overlap:
// docs/design.md#outbox-lag), the attempts per event, and the metrics.

// The deployed model.
const (
	// PublisherPeriod between invocations (EventBridge Scheduler's finest rate).
	PublisherPeriod = time.Minute
	// PublisherPollWindow is how long one invocation claims batches.
	PublisherPollWindow = 80 * time.Second
	// PublisherStopMargin is kept free before the deadline: the round in flight
	// (PublishTimeout), the last marks and the metrics flush.
	PublisherStopMargin = 20 * time.Second
	// PublisherTimeout of the function: PublisherPollWindow + PublisherStopMargin.
	PublisherTimeout = PublisherPollWindow + PublisherStopMargin
	// PublisherConcurrency is the invocations that run at once (the overlap).
	PublisherConcurrency = 2
	// PublisherLease and PublishTimeout of the publisher: a healthy publisher marks
	// its rows before its lease ends (PublishTimeout < PublisherLease).
	PublisherLease = 20 * time.Second
	PublishTimeout = 10 * time.Second
	// PublisherRetryBaseDelay of the publisher's backoff between the claims of a
	// failing row.
	PublisherRetryBaseDelay = time.Second
)

// Attempts per event on EventBridge (the MF-ATTEMPTS guardrail multiplies
// the three variables, declared per work item: the claims are counted in
// the row, so retried invocations do not multiply them).
const (
	// EnvOutboxEntryAttempts is the sends of a failed entry within one claim
	// (outbox.Config.EntryRetries + 1; at least 2).
	EnvOutboxEntryAttempts = "OUTBOX_ENTRY_ATTEMPTS"
	// EnvOutboxMaxClaims is the claims of an event EventBridge keeps rejecting
	// before it is parked (outbox.Config.MaxAttempts).
	EnvOutboxMaxClaims = "OUTBOX_MAX_CLAIMS"
	// DefaultOutboxEntryAttempts x DefaultOutboxMaxClaims x the SDK's 2 = 12 <= 15.
	DefaultOutboxEntryAttempts = 2
	DefaultOutboxMaxClaims     = 3
)

// Environment variables of the outbox functions (besides the database's,
// the EnvDB* ones, and EnvEnvironment).
const (
	// EnvBusName and EnvEventSource: where the publisher puts events.
	EnvBusName     = "BUS_NAME"
	EnvEventSource = "EVENT_SOURCE"
	// EnvRetentionDays (default 7) and EnvBatchSize (default 1000): the
	// cleanup's retention of published rows and rows per DELETE.
	EnvRetentionDays = "RETENTION_DAYS"
	EnvBatchSize     = "BATCH_SIZE"
	// EnvDBMasterSecretARN and EnvDBSchema (default public): the migration's
	// master secret and schema.
	EnvDBMasterSecretARN = "DB_MASTER_SECRET_ARN"
	EnvDBSchema          = "DB_SCHEMA"
)

// Metrics of the publisher and the cleanup.
const (
	// MetricOutboxPending is the number of unpublished, unparked rows (gauge).
	MetricOutboxPending = "PendingEvents"
	// MetricOutboxOldestAge is the age in seconds of the oldest pending row (gauge).
	MetricOutboxOldestAge = "OldestPendingAgeSeconds"
	// MetricOutboxParked is the number of parked (poison) rows (gauge).
	MetricOutboxParked = "ParkedEvents"
	// MetricOutboxPublished counts rows marked published.
	MetricOutboxPublished = "PublishedEvents"
	// MetricOutboxFailedAttempts counts rows released after a failed attempt.
	MetricOutboxFailedAttempts = "FailedAttempts"
	// MetricOutboxNewlyParked counts rows parked since the last emission.
	MetricOutboxNewlyParked = "NewlyParkedEvents"
	// MetricOutboxDeleted counts rows removed by the cleanup.
	MetricOutboxDeleted = "DeletedEvents"
)

// Migrations holds the migrations: migrations/NNNN_name.sql.
//
//go:embed migrations/*.sql
var Migrations embed.FS

// MigrationsDir is the directory of the migrations inside Migrations.
const MigrationsDir = "migrations"

// Property names of the schema's custom resource (constructs/outbox sets
// them, outbox.Migrator reads them).
const (
	MigrationPropertyHash  = "MigracionesHash"
	MigrationPropertyRoles = "Roles"
)

// SchemaHash is the SHA-256 (hex) of every migration's name and content, in name
// order (fs.ReadDir's): it changes when a migration is added or edited, and only then.
func SchemaHash() string {
	entries, err := fs.ReadDir(Migrations, MigrationsDir)
	if err != nil {
		panic("lambdaapi: embedded migrations unreadable: " + err.Error()) // impossible: embedded at build time
	}
	h := sha256.New()
	for _, e := range entries {
		n := e.Name()
		body, err := Migrations.ReadFile(MigrationsDir + "/" + n)
		if err != nil {
			panic("lambdaapi: embedded migration unreadable: " + err.Error())
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

// DBRoles names the database roles. Each function connects as its own role,
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
type DBRoles struct {
	Owner     string `json:"owner"`
	Publisher string `json:"publisher"`
	Cleanup   string `json:"cleanup"`
	Writer    string `json:"writer"`
}

// DefaultDBRoles returns the production role names.
func DefaultDBRoles() DBRoles {
	return DBRoles{Owner: DefaultOwner, Publisher: DefaultPublisher, Cleanup: DefaultCleanup, Writer: DefaultWriter}
}

// ErrInvalidDBRoles is wrapped by Validate's errors.
var ErrInvalidDBRoles = errors.New("lambdaapi: invalid role names")

// All returns the four names, owner first.
func (r DBRoles) All() []string { return []string{r.Owner, r.Publisher, r.Cleanup, r.Writer} }

// Applications returns the roles of the functions that are not the owner.
func (r DBRoles) Applications() []string { return []string{r.Publisher, r.Cleanup, r.Writer} }

// Validate reports every problem: each name must be a plain lower-case
// PostgreSQL identifier ([a-z_][a-z0-9_]*, at most 63 bytes), not a
// reserved prefix (pg_, rds), and the four names must differ.
func (r DBRoles) Validate() error {
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
		return fmt.Errorf("%w: %s", ErrInvalidDBRoles, strings.Join(problems, "; "))
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

// The database's environment (lambdas/postgres.FromEnv).
const (
	// EnvDBHost is the RDS Proxy endpoint.
	EnvDBHost = "DB_HOST"
	// EnvDBPort is the port (default DefaultDBPort).
	EnvDBPort = "DB_PORT"
	// EnvDBName is the database.
	EnvDBName = "DB_NAME"
	// EnvDBUser is the database role, authenticated with IAM; without it the
	// credentials of EnvDBSecretARN are used (tools outside Lambda).
	EnvDBUser      = "DB_USER"
	EnvDBSecretARN = "DB_SECRET_ARN"
	// EnvDBSSLMode overrides the TLS mode (default verify-full). The CDK
	// never sets it: it exists for local runs against a PostgreSQL without
	// TLS (the end-to-end run sets "disable").
	EnvDBSSLMode = "DB_SSLMODE"
	// EnvDBMaxConns is the pool's maximum per function instance (required):
	// the construct sets it and MF-DB-CONNECTIONS sums it times the
	// reserved concurrency against the proxy's share
	// (docs/design.md#aurora-connections).
	EnvDBMaxConns = "DB_MAX_CONNS"
)

// DefaultDBPort is PostgreSQL's port, the proxy's and the default of
// EnvDBPort.
const DefaultDBPort = 5432
