package outbox

import (
	"context"
	"errors"
	"github.com/mercadofresco/integration/internal/localaws"
	"testing"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

type migratorFixture struct {
	m            *Migrator
	roles        lambdaapi.DBRoles
	adminOpened  int
	ownerOpened  int
	ownerAsRoles []string
}

// newFixture connects "the master user" as the local superuser and the
// owner as its role, on a private schema, counting the connections.
func newMigratorFixture(t *testing.T) *migratorFixture {
	t.Helper()
	if err := localaws.EnsureDatabase(context.Background(), testDB); err != nil {
		t.Fatalf("tests need PostgreSQL: %v", err)
	}
	schemaName := localaws.NewSchema(t, testDB, "m_")
	prefix := localaws.UniqueName("mft_") + "_"
	f := &migratorFixture{roles: lambdaapi.DBRoles{Owner: prefix + "owner", Publisher: prefix + "pub", Cleanup: prefix + "cln", Writer: prefix + "wri"}}
	localaws.DropRolesAtEnd(t, testDB, MigrationLockKey, f.roles.All()...)
	f.m = &Migrator{
		Schema: schemaName,
		ConnectAdmin: func(context.Context) (Conn, error) {
			f.adminOpened++
			return localaws.NewPool(t, testDB, schemaName, 1), nil
		},
		ConnectOwner: func(_ context.Context, owner string) (Conn, error) {
			f.ownerOpened++
			f.ownerAsRoles = append(f.ownerAsRoles, owner)
			return localaws.PoolAs(t, testDB, schemaName, owner, 1), nil
		},
	}
	return f
}

func (f *migratorFixture) event(typ cfn.RequestType, hash string) cfn.Event {
	return cfn.Event{RequestType: typ, LogicalResourceID: "Esquema", PhysicalResourceID: SchemaID,
		ResourceProperties: map[string]any{
			lambdaapi.MigrationPropertyHash: hash,
			lambdaapi.MigrationPropertyRoles: map[string]any{"owner": f.roles.Owner, "publisher": f.roles.Publisher,
				"cleanup": f.roles.Cleanup, "writer": f.roles.Writer},
		}}
}

// Create applies every migration as the owner role (not the master user)
// after creating the roles; an Update with nothing new applies nothing and
// still succeeds; Delete touches nothing.
func TestCreateUpdateDelete(t *testing.T) {
	ctx := context.Background()
	f := newMigratorFixture(t)
	migs, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.m.Handle(ctx, f.event(cfn.RequestCreate, lambdaapi.SchemaHash()))
	if err != nil {
		t.Fatal(err)
	}
	if res.PhysicalResourceID != SchemaID || res.Data["Hash"] != lambdaapi.SchemaHash() {
		t.Fatalf("response %+v", res)
	}
	if got, _ := res.Data["Aplicadas"].(string); got == "" || len(migs) == 0 {
		t.Fatalf("nothing applied on Create: %+v", res)
	}
	if f.adminOpened != 1 || f.ownerOpened != 1 || f.ownerAsRoles[0] != f.roles.Owner {
		t.Fatalf("connections: admin %d, owner %d as %v", f.adminOpened, f.ownerOpened, f.ownerAsRoles)
	}
	owner := localaws.PoolAs(t, testDB, f.m.Schema, f.roles.Owner, 1)
	var tableOwner string
	if err := owner.QueryRow(ctx, `SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'outbox'::regclass`).Scan(&tableOwner); err != nil || tableOwner != f.roles.Owner {
		t.Fatalf("outbox owned by %q (%v), want the owner role %s", tableOwner, err, f.roles.Owner)
	}

	res, err = f.m.Handle(ctx, f.event(cfn.RequestUpdate, lambdaapi.SchemaHash()))
	if err != nil || res.Data["Aplicadas"] != "" {
		t.Fatalf("Update = %+v, %v; want success with nothing applied", res, err)
	}

	f.adminOpened, f.ownerOpened = 0, 0
	if res, err := f.m.Handle(ctx, f.event(cfn.RequestDelete, lambdaapi.SchemaHash())); err != nil || res.PhysicalResourceID != SchemaID {
		t.Fatalf("Delete = %+v, %v", res, err)
	}
	if f.adminOpened+f.ownerOpened != 0 {
		t.Fatal("Delete connected to the database")
	}
}

// A template whose hash is not this binary's migrations, or whose role
// names are invalid, fails before any connection is opened.
func TestBadRequestsFailBeforeConnecting(t *testing.T) {
	ctx := context.Background()
	f := newMigratorFixture(t)
	stale := f.event(cfn.RequestUpdate, "0000")
	shared := f.event(cfn.RequestCreate, lambdaapi.SchemaHash())
	shared.ResourceProperties[lambdaapi.MigrationPropertyRoles].(map[string]any)["writer"] = f.roles.Publisher
	for name, ev := range map[string]cfn.Event{"stale hash": stale, "shared role name": shared, "unknown type": {RequestType: "Rollback"}} {
		if _, err := f.m.Handle(ctx, ev); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
	if f.adminOpened+f.ownerOpened != 0 {
		t.Fatalf("a bad request connected to the database (%d, %d)", f.adminOpened, f.ownerOpened)
	}
}
