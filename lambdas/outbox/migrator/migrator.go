// Package migrator applies the outbox's schema once per deploy, as the
// handler of a CloudFormation custom resource (through the CDK's custom
// resource provider framework; constructs/outbox creates it), never from a
// function on the hot path.
//
// One Create or Update runs two steps with two different database users:
//
//  1. As the cluster's master user (its Secrets Manager secret, a direct TLS
//     connection to the cluster): outbox.CreateRoles, which creates the
//     login roles, grants rds_iam and hands the owner role the objects an
//     earlier version created. That fixed set of statements is all the
//     master user ever runs; no migration file runs as it.
//  2. As the owner role (IAM authentication through RDS Proxy):
//     outbox.Migrate, then outbox.Grant.
//
// The resource's properties carry the migrations' hash (outboxapi.SchemaHash) and
// the role names, so CloudFormation updates the resource, and this runs
// again, exactly when a deploy changes either. Delete does nothing: the
// data outlives the stack's resource. Every step is idempotent and
// advisory-locked, so a retried or repeated deploy is harmless.
package migrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/aws/aws-lambda-go/cfn"

	"github.com/mercadofresco/integration/lambdas/outbox"
	"github.com/mercadofresco/integration/lambdas/outbox/outboxapi"
)

// Property names of the custom resource (constructs/outbox sets them).
const (
	PropertyHash  = "MigracionesHash"
	PropertyRoles = "Roles"
)

// PhysicalID is the custom resource's physical id: one schema per stack,
// never replaced.
const PhysicalID = "outbox-esquema"

// ErrInvalidRequest wraps every problem with the request itself.
var ErrInvalidRequest = errors.New("migrator: invalid request")

// Conn is an open database pool.
type Conn interface {
	outbox.DB
	Close()
}

// Migrator handles the custom resource's events.
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

// Response is what the provider framework returns to CloudFormation.
type Response struct {
	PhysicalResourceID string         `json:"PhysicalResourceId"`
	Data               map[string]any `json:"Data,omitempty"`
}

// Handle runs one custom resource event.
func (m *Migrator) Handle(ctx context.Context, ev cfn.Event) (Response, error) {
	log := m.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch ev.RequestType {
	case cfn.RequestDelete:
		log.Info("outbox schema kept: the data outlives the resource", "resource", ev.LogicalResourceID)
		return Response{PhysicalResourceID: orDefault(ev.PhysicalResourceID)}, nil
	case cfn.RequestCreate, cfn.RequestUpdate:
	default:
		return Response{}, fmt.Errorf("%w: request type %q", ErrInvalidRequest, ev.RequestType)
	}
	roles, err := parseProperties(ev.ResourceProperties)
	if err != nil {
		return Response{}, err
	}
	admin, err := m.ConnectAdmin(ctx)
	if err != nil {
		return Response{}, fmt.Errorf("migrator: connect as the master user: %w", err)
	}
	err = outbox.CreateRoles(ctx, admin, roles, outbox.RoleOptions{IAM: m.IAM, Schema: m.Schema})
	admin.Close()
	if err != nil {
		return Response{}, err
	}
	owner, err := m.ConnectOwner(ctx, roles.Owner)
	if err != nil {
		return Response{}, fmt.Errorf("migrator: connect as %s: %w", roles.Owner, err)
	}
	defer owner.Close()
	applied, err := outbox.Migrate(ctx, owner)
	if err != nil {
		return Response{}, err
	}
	if err := outbox.Grant(ctx, owner, roles); err != nil {
		return Response{}, err
	}
	log.Info("outbox schema up to date", "aplicadas", applied, "hash", outboxapi.SchemaHash())
	return Response{PhysicalResourceID: PhysicalID, Data: map[string]any{
		"Aplicadas": strings.Join(applied, ","),
		"Hash":      outboxapi.SchemaHash(),
	}}, nil
}

func orDefault(id string) string {
	if id == "" {
		return PhysicalID
	}
	return id
}

// parseProperties checks that the template and this binary agree on the
// migrations (both come from the same source tree; a mismatch means a
// stale asset) and reads the role names.
func parseProperties(props map[string]any) (outboxapi.Roles, error) {
	var roles outboxapi.Roles
	if h, _ := props[PropertyHash].(string); h != outboxapi.SchemaHash() {
		return roles, fmt.Errorf("%w: %s %q is not the hash of this function's migrations %q (stale code asset?)",
			ErrInvalidRequest, PropertyHash, h, outboxapi.SchemaHash())
	}
	raw, err := json.Marshal(props[PropertyRoles])
	if err != nil {
		return roles, fmt.Errorf("%w: %s: %w", ErrInvalidRequest, PropertyRoles, err)
	}
	if err := json.Unmarshal(raw, &roles); err != nil {
		return roles, fmt.Errorf("%w: %s: %w", ErrInvalidRequest, PropertyRoles, err)
	}
	if err := roles.Validate(); err != nil {
		return roles, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return roles, nil
}
