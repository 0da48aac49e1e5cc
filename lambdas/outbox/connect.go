package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SecretGetter is the Secrets Manager call ConnectFromSecret needs;
// *secretsmanager.Client implements it.
type SecretGetter interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// ConnectConfig says where the Lambda functions connect.
type ConnectConfig struct {
	// SecretARN is the Aurora credentials secret (the JSON RDS generates:
	// username, password, host, port, dbname).
	SecretARN string
	// Host overrides the secret's host: the RDS Proxy endpoint, so that
	// Lambda concurrency never opens more than the proxy's share of
	// Aurora's connections.
	Host string
	// Database overrides the secret's dbname.
	Database string
	// MaxConns per Lambda instance. Default 2 (one round at a time plus
	// the metrics query).
	MaxConns int32
	// SSLMode defaults to verify-full: RDS Proxy requires TLS and presents
	// an ACM certificate that the system roots of provided.al2023 trust.
	SSLMode string
}

type dbSecret struct {
	Username string          `json:"username"`
	Password string          `json:"password"`
	Host     string          `json:"host"`
	Port     json.RawMessage `json:"port"` // RDS writes a number; humans write strings
	DBName   string          `json:"dbname"`
}

// PoolConfigFromSecret builds the pgx pool configuration from the secret's
// JSON. Statements run in QueryExecModeExec (unnamed prepared statements):
// pgx's default statement cache uses named prepared statements, which pin
// every connection to one backend in RDS Proxy and defeat its multiplexing.
func PoolConfigFromSecret(secretJSON string, cfg ConnectConfig) (*pgxpool.Config, error) {
	var s dbSecret
	if err := json.Unmarshal([]byte(secretJSON), &s); err != nil {
		return nil, fmt.Errorf("outbox: database secret is not JSON: %w", err)
	}
	host, db := s.Host, s.DBName
	if cfg.Host != "" {
		host = cfg.Host
	}
	if cfg.Database != "" {
		db = cfg.Database
	}
	port := 5432
	if p := string(s.Port); p != "" && p != "null" {
		n, err := strconv.Atoi(trimQuotes(p))
		if err != nil {
			return nil, fmt.Errorf("outbox: database secret port %s: %w", p, err)
		}
		port = n
	}
	if s.Username == "" || host == "" || db == "" {
		return nil, fmt.Errorf("%w: database secret lacks username, host or dbname", ErrInvalidConfig)
	}
	sslmode := cfg.SSLMode
	if sslmode == "" {
		sslmode = "verify-full"
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(s.Username, s.Password),
		Host:     host + ":" + strconv.Itoa(port),
		Path:     "/" + db,
		RawQuery: url.Values{"sslmode": {sslmode}, "application_name": {"mercadofresco-outbox"}}.Encode(),
	}
	pc, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, fmt.Errorf("outbox: database config: %w", err)
	}
	pc.MaxConns = cfg.MaxConns
	if pc.MaxConns == 0 {
		pc.MaxConns = 2
	}
	pc.MinConns = 0
	pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	return pc, nil
}

func trimQuotes(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

// ConnectFromSecret reads the secret and opens a pool (connections are
// opened lazily, on first use).
func ConnectFromSecret(ctx context.Context, sm SecretGetter, cfg ConnectConfig) (*pgxpool.Pool, error) {
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(cfg.SecretARN)})
	if err != nil {
		return nil, fmt.Errorf("outbox: read database secret: %w", err)
	}
	pc, err := PoolConfigFromSecret(aws.ToString(out.SecretString), cfg)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("outbox: open pool: %w", err)
	}
	return pool, nil
}
