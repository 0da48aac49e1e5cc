// Package postgresapi is the contract between the CDK (constructs/outbox)
// and the functions that connect to Aurora through lambdas/postgres: the
// environment variables postgres.FromEnv reads. It depends on nothing, so
// the CDK app imports it without linking pgx.
package postgresapi

// Environment variables read by postgres.FromEnv.
const (
	// EnvHost is the RDS Proxy endpoint.
	EnvHost = "DB_HOST"
	// EnvPort is the port (default DefaultPort).
	EnvPort = "DB_PORT"
	// EnvName is the database.
	EnvName = "DB_NAME"
	// EnvUser is the database role, authenticated with IAM; without it the
	// credentials of EnvSecretARN are used (tools outside Lambda).
	EnvUser      = "DB_USER"
	EnvSecretARN = "DB_SECRET_ARN"
	// EnvSSLMode overrides the TLS mode (default verify-full). The CDK never
	// sets it: it exists for local runs against a PostgreSQL without TLS
	// (the end-to-end run sets "disable").
	EnvSSLMode = "DB_SSLMODE"
)

// DefaultPort is PostgreSQL's port, the proxy's and the default of EnvPort.
const DefaultPort = 5432
