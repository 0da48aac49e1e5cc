// Package postgres opens the pgx connection pools of the project's Lambda
// functions and tools on Aurora PostgreSQL through RDS Proxy: TLS
// (verify-full) always, IAM database authentication (a token signed locally
// before every new connection, so no function holds a password) or the
// credentials of a Secrets Manager secret (tools outside Lambda), and the
// proxy-friendly exec mode (unnamed prepared statements, which do not pin a
// proxy connection to one backend).
package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/rds/auth"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
)

// ErrInvalidConfig is wrapped by every error caused by a configuration that
// cannot work (missing host, user or database; a secret without them).
var ErrInvalidConfig = errors.New("postgres: invalid connection config")

// DefaultApplicationName is the application_name sessions report to
// PostgreSQL (pg_stat_activity) when ConnectConfig.ApplicationName is empty.
const DefaultApplicationName = "mercadofresco"

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
	// MaxConns per instance, default 2; FromEnv takes it from DB_MAX_CONNS.
	MaxConns int32
	// SSLMode defaults to verify-full: RDS Proxy requires TLS and presents
	// an ACM certificate that the system roots of provided.al2023 trust.
	SSLMode string
	// ApplicationName is reported to PostgreSQL (pg_stat_activity, logs).
	// Empty means DefaultApplicationName.
	ApplicationName string
}

func (c ConnectConfig) sslMode() string { return cmp.Or(c.SSLMode, "verify-full") }

// poolConfig parses the pool configuration of user on hostPort/db, with
// c's TLS mode and application name and the settings every pool of the
// project shares.
func (c ConnectConfig) poolConfig(user *url.Userinfo, hostPort, db string) (*pgxpool.Config, error) {
	u := url.URL{
		Scheme:   "postgres",
		User:     user,
		Host:     hostPort,
		Path:     "/" + db,
		RawQuery: url.Values{"sslmode": {c.sslMode()}, "application_name": {cmp.Or(c.ApplicationName, DefaultApplicationName)}}.Encode(),
	}
	pc, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, fmt.Errorf("postgres: database config: %w", err)
	}
	pc.MaxConns = cmp.Or(c.MaxConns, 2)
	pc.MinConns = 0
	pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	return pc, nil
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
		return nil, fmt.Errorf("postgres: database secret is not JSON: %w", err)
	}
	host, db := cmp.Or(cfg.Host, s.Host), cmp.Or(cfg.Database, s.DBName)
	port := 5432
	if p := string(s.Port); p != "" && p != "null" {
		n, err := strconv.Atoi(strings.Trim(p, `"`))
		if err != nil {
			return nil, fmt.Errorf("postgres: database secret port %s: %w", p, err)
		}
		port = n
	}
	if s.Username == "" || host == "" || db == "" {
		return nil, fmt.Errorf("%w: database secret lacks username, host or dbname", ErrInvalidConfig)
	}
	return cfg.poolConfig(url.UserPassword(s.Username, s.Password), host+":"+strconv.Itoa(port), db)
}

// ConnectFromSecret reads the secret and opens a pool (connections are
// opened lazily, on first use).
func ConnectFromSecret(ctx context.Context, sm SecretGetter, cfg ConnectConfig) (*pgxpool.Pool, error) {
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(cfg.SecretARN)})
	if err != nil {
		return nil, fmt.Errorf("postgres: read database secret: %w", err)
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
	endpoint := cfg.Host + ":" + strconv.Itoa(cmp.Or(cfg.Port, 5432))
	pc, err := cfg.poolConfig(url.User(cfg.User), endpoint, cfg.Database)
	if err != nil {
		return nil, err
	}
	pc.BeforeConnect = func(ctx context.Context, cc *pgx.ConnConfig) error {
		token, err := auth.BuildAuthToken(ctx, endpoint, cfg.Region, cfg.User, creds)
		if err != nil {
			return fmt.Errorf("postgres: IAM auth token: %w", err)
		}
		cc.Password = token
		return nil
	}
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
		return nil, fmt.Errorf("postgres: open pool: %w", err)
	}
	return pool, nil
}

// FromEnv opens the pool of a Lambda function from its environment: DB_HOST
// (the RDS Proxy endpoint), DB_PORT (default 5432), DB_NAME, DB_MAX_CONNS
// (the pool's maximum), DB_USER, with IAM
// authentication in awsCfg's region. Without DB_USER, DB_SECRET_ARN's
// credentials are used instead (tools outside Lambda). Every missing or
// malformed variable is reported at once.
func FromEnv(ctx context.Context, env *lambdaenv.Env, awsCfg aws.Config, sm SecretGetter, cfg ConnectConfig) (*pgxpool.Pool, error) {
	cfg.Host = env.Required(lambdaapi.EnvDBHost)
	cfg.Database = env.Required(lambdaapi.EnvDBName)
	cfg.Port = env.Int(lambdaapi.EnvDBPort, lambdaapi.DefaultDBPort, 1, 65535)
	env.Required(lambdaapi.EnvDBMaxConns)
	cfg.MaxConns = int32(env.Int(lambdaapi.EnvDBMaxConns, 1, 1, 100))
	cfg.User = env.String(lambdaapi.EnvDBUser, "")
	cfg.SecretARN = env.String(lambdaapi.EnvDBSecretARN, "")
	cfg.SSLMode = env.OneOf(lambdaapi.EnvDBSSLMode, cfg.sslMode(), "verify-full", "verify-ca", "require", "disable")
	cfg.Region = awsCfg.Region
	if cfg.User == "" && cfg.SecretARN == "" {
		env.Required(lambdaapi.EnvDBUser)
	}
	if err := env.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if cfg.User == "" {
		return ConnectFromSecret(ctx, sm, cfg)
	}
	return ConnectIAM(ctx, cfg, awsCfg.Credentials)
}

// Open loads the SDK configuration (lambdaenv) and opens the pool with
// FromEnv and a Secrets Manager client, as a deployed function does.
func Open(ctx context.Context, env *lambdaenv.Env, cfg ConnectConfig) (*pgxpool.Pool, aws.Config, error) {
	awsCfg, err := env.LoadAWSConfig(ctx)
	if err != nil {
		return nil, awsCfg, err
	}
	pool, err := FromEnv(ctx, env, awsCfg, secretsmanager.NewFromConfig(awsCfg), cfg)
	return pool, awsCfg, err
}
