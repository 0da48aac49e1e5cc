package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/mercadofresco/integration/internal/lambdatest"
	"github.com/mercadofresco/integration/internal/localaws"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/outbox"
)

const rolesDB = "mf_outbox_test"

// denied reports whether err is PostgreSQL's insufficient_privilege (which
// is also what DROP of a table one does not own raises).
func denied(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501"
}

// Each function's role is refused everything it does not use: the
// publisher cannot DROP, DELETE or rewrite an event, the cleanup cannot
// UPDATE or read payloads, the writer cannot UPDATE or DELETE or insert an
// already published event. Every statement runs in a transaction that is
// rolled back.
func TestRolesAreRefusedWhatTheyDoNotUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := lambdatest.NewOutboxDatabase(t, rolesDB)
	tx, err := db.Admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := outbox.Add(ctx, tx, outbox.Event{AggregateID: "ped-1", Type: "PedidoCreado", Payload: json.RawMessage(`{"version":1}`)}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	pools := map[string]*pgxpool.Pool{"publisher": db.Publisher, "cleanup": db.Cleanup, "writer": db.Writer}
	tests := []struct{ role, stmt string }{
		{"publisher", `DROP TABLE outbox`},
		{"publisher", `DELETE FROM outbox`},
		{"publisher", `TRUNCATE outbox`},
		{"publisher", `UPDATE outbox SET payload = '{"version": 2}'`},
		{"publisher", `UPDATE outbox SET id = gen_random_uuid()`},
		{"publisher", `INSERT INTO outbox (id, agregado_id, tipo, payload) VALUES (gen_random_uuid(), 'x', 'y', '{}')`},
		{"publisher", `SELECT * FROM pedidos`},
		{"publisher", `SELECT * FROM outbox_migraciones`},
		{"publisher", `ALTER TABLE outbox DROP CONSTRAINT outbox_payload_sin_metadatos`},
		{"cleanup", `UPDATE outbox SET publicado_en = now()`},
		{"cleanup", `UPDATE outbox SET aparcado_en = NULL`},
		{"cleanup", `SELECT payload FROM outbox`},
		{"cleanup", `INSERT INTO outbox (id, agregado_id, tipo, payload) VALUES (gen_random_uuid(), 'x', 'y', '{}')`},
		{"cleanup", `DROP TABLE outbox`},
		{"cleanup", `DELETE FROM pedidos`},
		{"writer", `UPDATE outbox SET publicado_en = now()`},
		{"writer", `UPDATE pedidos SET total_centimos = 0`},
		{"writer", `DELETE FROM outbox`},
		{"writer", `DELETE FROM pedidos`},
		{"writer", `INSERT INTO outbox (id, agregado_id, tipo, payload, publicado_en) VALUES (gen_random_uuid(), 'x', 'y', '{}', now())`},
		{"writer", `SELECT payload FROM outbox`},
		{"writer", `DROP TABLE pedidos`},
	}
	for _, tc := range tests {
		t.Run(tc.role+": "+tc.stmt, func(t *testing.T) {
			tx, err := pools[tc.role].Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			_, err = tx.Exec(ctx, tc.stmt)
			if !denied(err) {
				t.Fatalf("%s may run %q (err %v); want permission denied", tc.role, tc.stmt, err)
			}
		})
	}
}

type acceptAll struct{ n int }

func (s *acceptAll) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	s.n += len(in.Entries)
	return &eventbridge.PutEventsOutput{Entries: make([]types.PutEventsResultEntry, len(in.Entries))}, nil
}

// The grants are enough for the real work: the writer inserts an order and
// its event (and re-reads them), the publisher claims, publishes and marks
// it and reads the gauges, the cleanup deletes it once old and reads the
// gauges.
func TestRolesSufficeForTheirWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := lambdatest.NewOutboxDatabase(t, rolesDB)

	tx, err := db.Writer.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO pedidos (pedido_id, cliente_id, lineas, total_centimos, moneda)
		VALUES ('ped-1', 'cli-1', '[]', 100, 'EUR') ON CONFLICT (pedido_id) DO NOTHING`); err != nil {
		t.Fatalf("writer insert order: %v", err)
	}
	id, err := outbox.Add(ctx, tx, outbox.Event{AggregateID: "ped-1", Type: "PedidoCreado", Payload: json.RawMessage(`{"version":1}`)})
	if err != nil {
		t.Fatalf("writer Add: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var again string
	if err := db.Writer.QueryRow(ctx, `SELECT o.id::text FROM pedidos p JOIN outbox o ON o.agregado_id = p.pedido_id AND o.tipo = 'PedidoCreado'
		WHERE p.pedido_id = 'ped-1' ORDER BY o.creado_en LIMIT 1`).Scan(&again); err != nil || again != id.String() {
		t.Fatalf("writer re-read = %q, %v; want %s", again, err, id)
	}

	sink := &acceptAll{}
	pub, err := outbox.NewPublisher(db.Publisher, sink, outbox.Config{BusName: "bus", Source: "src"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := pub.PublishOnce(ctx)
	if err != nil || res.Published != 1 || sink.n != 1 {
		t.Fatalf("publisher round = %+v, %v (sink %d); want 1 published", res, err, sink.n)
	}
	if g, err := outbox.ReadGauges(ctx, db.Publisher); err != nil || g.Pending != 0 {
		t.Fatalf("publisher gauges = %+v, %v", g, err)
	}

	if _, err := db.Admin.Exec(ctx, `UPDATE outbox SET publicado_en = now() - interval '8 days'`); err != nil {
		t.Fatal(err)
	}
	n, err := outbox.Cleanup(ctx, db.Cleanup, outbox.CleanupConfig{})
	if err != nil || n != 1 {
		t.Fatalf("cleanup = %d, %v; want 1 deleted", n, err)
	}
	if _, err := outbox.ReadGauges(ctx, db.Cleanup); err != nil {
		t.Fatalf("cleanup gauges: %v", err)
	}
}

// CreateRoles and Grant run on every deploy: running them again changes
// nothing and fails nothing. A role that exists with a dangerous attribute
// is refused, not used.
func TestCreateRolesIsIdempotentAndRefusesUnsafeRoles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := lambdatest.NewOutboxDatabase(t, rolesDB)
	opts := outbox.RoleOptions{Schema: db.Schema}
	if err := outbox.CreateRoles(ctx, db.Admin, db.Roles, opts); err != nil {
		t.Fatalf("second CreateRoles: %v", err)
	}
	if err := outbox.Grant(ctx, db.Owner, db.Roles); err != nil {
		t.Fatalf("second Grant: %v", err)
	}
	unsafe := db.Roles
	unsafe.Writer = localaws.UniqueName("mft_") + "_creadb"
	localaws.DropRolesAtEnd(t, rolesDB, outbox.MigrationLockKey, unsafe.Writer)
	if _, err := db.Admin.Exec(ctx, "CREATE ROLE "+pgx.Identifier{unsafe.Writer}.Sanitize()+" LOGIN CREATEDB"); err != nil {
		t.Fatal(err)
	}
	if err := outbox.CreateRoles(ctx, db.Admin, unsafe, opts); !errors.Is(err, outbox.ErrUnsafeRole) {
		t.Fatalf("CreateRoles with a CREATEDB role = %v, want ErrUnsafeRole", err)
	}
	bad := db.Roles
	bad.Cleanup = bad.Publisher
	if err := outbox.CreateRoles(ctx, db.Admin, bad, opts); !errors.Is(err, lambdaapi.ErrInvalidDBRoles) {
		t.Fatalf("CreateRoles with a shared name = %v, want ErrInvalidRoles", err)
	}
}

// An environment deployed before the roles existed has its tables owned by
// the master user (the publisher migrated at start-up): CreateRoles hands
// them to the owner role, which can then migrate and grant.
func TestCreateRolesAdoptsTablesOfTheMasterUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schemaName := localaws.NewSchema(t, rolesDB, "a_")
	admin := localaws.NewPool(t, rolesDB, schemaName, 2)
	if _, err := outbox.Migrate(ctx, admin); err != nil { // as the old publisher did
		t.Fatal(err)
	}
	prefix := localaws.UniqueName("mft_") + "_"
	roles := lambdaapi.DBRoles{Owner: prefix + "owner", Publisher: prefix + "pub", Cleanup: prefix + "cln", Writer: prefix + "wri"}
	localaws.DropRolesAtEnd(t, rolesDB, outbox.MigrationLockKey, roles.All()...)
	if err := outbox.CreateRoles(ctx, admin, roles, outbox.RoleOptions{Schema: schemaName}); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"outbox", "pedidos", "outbox_migraciones"} {
		var owner string
		if err := admin.QueryRow(ctx, `SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = to_regclass($1)`,
			schemaName+"."+table).Scan(&owner); err != nil || owner != roles.Owner {
			t.Fatalf("owner of %s = %q, %v; want %s", table, owner, err, roles.Owner)
		}
	}
	owner := localaws.PoolAs(t, rolesDB, schemaName, roles.Owner, 1)
	if _, err := outbox.Migrate(ctx, owner); err != nil {
		t.Fatalf("Migrate as the owner after adoption: %v", err)
	}
	if err := outbox.Grant(ctx, owner, roles); err != nil {
		t.Fatalf("Grant as the owner after adoption: %v", err)
	}
	writer := localaws.PoolAs(t, rolesDB, schemaName, roles.Writer, 1)
	tx, err := writer.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := outbox.Add(ctx, tx, outbox.Event{ID: uuid.New(), AggregateID: "ped-1", Type: "PedidoCreado", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatalf("writer Add after adoption: %v", err)
	}
}
