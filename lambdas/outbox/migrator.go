package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/postgres"
)

// SchemaID is the physical id of the schema's custom resource: one schema
// per stack, never replaced.
const SchemaID = "outbox-esquema"

// ErrInvalidRequest wraps every problem with a custom resource request.
var ErrInvalidRequest = errors.New("outbox: invalid migration request")

// Conn is an open database pool.
type Conn interface {
	DB
	Close()
}

// Migrator applies the schema once per deploy, as the handler of a
// CloudFormation custom resource (constructs/outbox), never from a function
// on the hot path. A Create or Update runs two steps: as the cluster's
// master user, CreateRoles (all the master user ever runs); as the owner
// role, Migrate and Grant. Delete does nothing. The properties carry the
// migrations' hash and the role names, so it runs again exactly when a
// deploy changes either; every step is idempotent and advisory-locked.
// Reasoning: docs/design.md#database-roles.
type Migrator struct {
	// ConnectAdmin opens the master user's connection (step 1).
	ConnectAdmin func(ctx context.Context) (Conn, error)
	// ConnectOwner opens a connection as the owner role (step 2).
	ConnectOwner func(ctx context.Context, owner string) (Conn, error)
	// Schema holds the tables (RoleOptions.Schema); IAM grants rds_iam.
	Schema string
	IAM    bool
	// Log defaults to discarding.
	Log *slog.Logger
}

// MigratorFunction builds the custom resource's handler from the function's
// environment (the outbox-migraciones main): DB_HOST (the RDS Proxy, for
// the owner's IAM connection), DB_PORT, DB_NAME, DB_MAX_CONNS (its pool
// through the proxy), DB_MASTER_SECRET_ARN (the
// master secret: step 1 connects directly to the cluster it names, TLS
// verify-full) and DB_SCHEMA (default public).
func MigratorFunction(ctx context.Context, env *lambdaenv.Env, log *slog.Logger) (func(context.Context, cfn.Event) (MigratorResponse, error), error) {
	host := env.Required(lambdaapi.EnvDBHost)
	port := env.Int(lambdaapi.EnvDBPort, lambdaapi.DefaultDBPort, 1, 65535)
	database := env.Required(lambdaapi.EnvDBName)
	secretARN := env.Required(lambdaapi.EnvDBMasterSecretARN)
	schemaName := env.String(lambdaapi.EnvDBSchema, "public")
	env.Required(lambdaapi.EnvDBMaxConns)
	poolMax := int32(env.Int(lambdaapi.EnvDBMaxConns, 1, 1, 100))
	awsCfg, err := env.LoadAWSConfig(ctx)
	err = cmp.Or(err, env.Err())
	if err != nil {
		return nil, err
	}
	sm := secretsmanager.NewFromConfig(awsCfg)
	m := &Migrator{
		ConnectAdmin: func(ctx context.Context) (Conn, error) {
			return postgres.ConnectFromSecret(ctx, sm, postgres.ConnectConfig{
				SecretARN: secretARN, Database: database, MaxConns: 1, ApplicationName: "mf-outbox-migrate",
			})
		},
		ConnectOwner: func(ctx context.Context, owner string) (Conn, error) {
			return postgres.ConnectIAM(ctx, postgres.ConnectConfig{
				Host: host, Port: port, Database: database, User: owner, Region: awsCfg.Region,
				MaxConns: poolMax, ApplicationName: "mf-outbox-migrate",
			}, awsCfg.Credentials)
		},
		Schema: schemaName,
		IAM:    true,
		Log:    log,
	}
	return m.Handle, nil
}

// MigratorResponse is what the provider framework returns to CloudFormation.
type MigratorResponse struct {
	PhysicalResourceID string         `json:"PhysicalResourceId"`
	Data               map[string]any `json:"Data,omitempty"`
}

// Handle runs one custom resource event.
func (m *Migrator) Handle(ctx context.Context, ev cfn.Event) (MigratorResponse, error) {
	log := cmp.Or(m.Log, slog.New(slog.NewTextHandler(io.Discard, nil)))
	switch ev.RequestType {
	case cfn.RequestDelete:
		log.Info("outbox schema kept: the data outlives the resource", "resource", ev.LogicalResourceID)
		return MigratorResponse{PhysicalResourceID: cmp.Or(ev.PhysicalResourceID, SchemaID)}, nil
	case cfn.RequestCreate, cfn.RequestUpdate:
	default:
		return MigratorResponse{}, fmt.Errorf("%w: request type %q", ErrInvalidRequest, ev.RequestType)
	}
	roles, err := parseProperties(ev.ResourceProperties)
	if err != nil {
		return MigratorResponse{}, err
	}
	admin, err := m.ConnectAdmin(ctx)
	if err != nil {
		return MigratorResponse{}, fmt.Errorf("outbox: migration: connect as the master user: %w", err)
	}
	err = CreateRoles(ctx, admin, roles, RoleOptions{IAM: m.IAM, Schema: m.Schema})
	admin.Close()
	if err != nil {
		return MigratorResponse{}, err
	}
	owner, err := m.ConnectOwner(ctx, roles.Owner)
	if err != nil {
		return MigratorResponse{}, fmt.Errorf("outbox: migration: connect as %s: %w", roles.Owner, err)
	}
	defer owner.Close()
	applied, err := Migrate(ctx, owner)
	if err != nil {
		return MigratorResponse{}, err
	}
	if err := Grant(ctx, owner, roles); err != nil {
		return MigratorResponse{}, err
	}
	log.Info("outbox schema up to date", "aplicadas", applied, "hash", lambdaapi.SchemaHash())
	return MigratorResponse{PhysicalResourceID: SchemaID, Data: map[string]any{
		"Aplicadas": strings.Join(applied, ","),
		"Hash":      lambdaapi.SchemaHash(),
	}}, nil
}

// parseProperties checks that the template and this binary agree on the
// migrations (both come from the same source tree; a mismatch means a
// stale asset) and reads the role names.
func parseProperties(props map[string]any) (lambdaapi.DBRoles, error) {
	var roles lambdaapi.DBRoles
	if h, _ := props[lambdaapi.MigrationPropertyHash].(string); h != lambdaapi.SchemaHash() {
		return roles, fmt.Errorf("%w: %s %q is not the hash of this function's migrations %q (stale code asset?)",
			ErrInvalidRequest, lambdaapi.MigrationPropertyHash, h, lambdaapi.SchemaHash())
	}
	raw, err := json.Marshal(props[lambdaapi.MigrationPropertyRoles])
	if err != nil {
		return roles, fmt.Errorf("%w: %s: %w", ErrInvalidRequest, lambdaapi.MigrationPropertyRoles, err)
	}
	if err := json.Unmarshal(raw, &roles); err != nil {
		return roles, fmt.Errorf("%w: %s: %w", ErrInvalidRequest, lambdaapi.MigrationPropertyRoles, err)
	}
	if err := roles.Validate(); err != nil {
		return roles, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return roles, nil
}
