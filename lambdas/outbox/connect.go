package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/rds/auth"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SecretGetter is the Secrets Manager call ConnectFromSecret needs;
// *secretsmanager.Client implements it.
type SecretGetter interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// ConnectConfig says where and how to connect.
type ConnectConfig struct {
	// SecretARN is the Aurora credentials secret (the JSON RDS generates:
	// username, password, host, port, dbname), for ConnectFromSecret.
	SecretARN string
	// User, Port and Region are for ConnectIAM (Port defaults to 5432).
	User   string
	Port   int
	Region string
	// Host overrides the secret's host: the RDS Proxy endpoint, so that
	// Lambda concurrency never opens more than the proxy's share of
	// Aurora's connections.
	Host string
	// Database overrides the secret's dbname.
	Database string
	// MaxConns per Lambda instance. Default 2: while a backlog drains,
	// Publisher.Run claims a batch on one connection while the previous
	// batch's verdicts are recorded on the other; the metrics query waits
	// for a free one.
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
	return openPool(ctx, pc)
}

// IAMPoolConfig builds a pool configuration that authenticates with an IAM
// database authentication token, generated (signed locally, no network
// call) before every new connection: the Lambda functions hold no password,
// so rotating the database secret that RDS Proxy uses never breaks them,
// and access is granted with rds-db:connect on the proxy for one user.
// TLS and exec mode are as in PoolConfigFromSecret.
func IAMPoolConfig(cfg ConnectConfig, creds aws.CredentialsProvider) (*pgxpool.Config, error) {
	if cfg.Host == "" || cfg.User == "" || cfg.Database == "" || cfg.Region == "" || creds == nil {
		return nil, fmt.Errorf("%w: IAM connection needs Host, User, Database, Region and credentials", ErrInvalidConfig)
	}
	port := cfg.Port
	if port == 0 {
		port = 5432
	}
	sslmode := cfg.SSLMode
	if sslmode == "" {
		sslmode = "verify-full"
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(cfg.User),
		Host:     cfg.Host + ":" + strconv.Itoa(port),
		Path:     "/" + cfg.Database,
		RawQuery: url.Values{"sslmode": {sslmode}, "application_name": {"mercadofresco-outbox"}}.Encode(),
	}
	pc, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, fmt.Errorf("outbox: database config: %w", err)
	}
	endpoint := cfg.Host + ":" + strconv.Itoa(port)
	pc.BeforeConnect = func(ctx context.Context, cc *pgx.ConnConfig) error {
		token, err := auth.BuildAuthToken(ctx, endpoint, cfg.Region, cfg.User, creds)
		if err != nil {
			return fmt.Errorf("outbox: IAM auth token: %w", err)
		}
		cc.Password = token
		return nil
	}
	pc.MaxConns = cfg.MaxConns
	if pc.MaxConns == 0 {
		pc.MaxConns = 2
	}
	pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	return pc, nil
}

// ConnectIAM opens a pool with IAMPoolConfig (connections are opened
// lazily, on first use).
func ConnectIAM(ctx context.Context, cfg ConnectConfig, creds aws.CredentialsProvider) (*pgxpool.Pool, error) {
	pc, err := IAMPoolConfig(cfg, creds)
	if err != nil {
		return nil, err
	}
	return openPool(ctx, pc)
}

// openPool opens a pool from pc (connections are opened lazily).
func openPool(ctx context.Context, pc *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("outbox: open pool: %w", err)
	}
	return pool, nil
}

// ConnectFromEnv opens the pool of a Lambda function from its environment:
// DB_HOST (the RDS Proxy endpoint), DB_PORT (default 5432), DB_NAME,
// DB_USER, and AWS_REGION (set by Lambda), with IAM authentication. If
// DB_USER is empty and DB_SECRET_ARN is set it falls back to the secret's
// password (for tools outside Lambda).
func ConnectFromEnv(ctx context.Context, awsCfg aws.Config, sm SecretGetter, maxConns int32, getenv func(string) string) (*pgxpool.Pool, error) {
	cfg := ConnectConfig{
		Host:     getenv("DB_HOST"),
		Database: getenv("DB_NAME"),
		User:     getenv("DB_USER"),
		Region:   awsCfg.Region,
		MaxConns: maxConns,
	}
	if p := getenv("DB_PORT"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("%w: DB_PORT=%q", ErrInvalidConfig, p)
		}
		cfg.Port = n
	}
	if cfg.User == "" && getenv("DB_SECRET_ARN") != "" {
		cfg.SecretARN = getenv("DB_SECRET_ARN")
		return ConnectFromSecret(ctx, sm, cfg)
	}
	return ConnectIAM(ctx, cfg, awsCfg.Credentials)
}
