package outbox_test

import (
	"context"
	"encoding/json"
	"github.com/mercadofresco/integration/internal/lambdatest"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/outbox"
	"github.com/mercadofresco/integration/lambdas/signing"
	"log/slog"
	"os"
	"testing"
	"time"
)

// deployedOutbox sets function's environment from the prod template, with
// the database variables pointed at a fresh migrated database on the local
// PostgreSQL (lambdatest.NewDatabase: DB_HOST, DB_PORT, DB_NAME; DB_USER
// stays the template's role), granted as the migrator grants.
func deployedOutbox(t *testing.T, function string) (map[string]string, *localaws.Endpoint, *lambdatest.Database) {
	t.Helper()
	env := lambdatest.DeployedEnv(t, "MercadoFresco-Outbox-prod", function)
	aws := localaws.NewEndpoint(t, nil)
	db := lambdatest.NewDatabase(t, env)
	roles := lambdaapi.DefaultDBRoles()
	lambdatest.EnsureRoles(t, db, "LOGIN", roles.All()...)
	ctx := context.Background()
	if _, err := outbox.Migrate(ctx, db.Super); err != nil {
		t.Fatal(err)
	}
	if err := outbox.Grant(ctx, db.Super, roles); err != nil {
		t.Fatal(err)
	}
	lambdatest.Setenv(t, env, aws.URL)
	return env, aws, db
}

// The deployed outbox publisher, built as its main builds it
// (outbox.PublisherFunction, lambdas/outbox-publicador) from
// mf-outbox-publicador's environment in the prod template, its database
// variables pointed at the local PostgreSQL (TLS verify-full, IAM token as
// DB_USER): a pending row reaches EventBridge as a PutEvents entry on
// BUS_NAME from EVENT_SOURCE carrying the row's event, signed with the key
// of SIGNING_SECRET_ARN, and the row is marked published. Replacing the EventBridge client or the database pool
// with one that does nothing fails it.
func TestDeployedPublisherReachesEventBridge(t *testing.T) {
	env, aws, db := deployedOutbox(t, "mf-outbox-publicador")
	ctx := context.Background()
	const id = "7d5a0c58-1f0e-4b8e-9a51-6f1f3c2b9d01"
	if _, err := db.Super.Exec(ctx, `INSERT INTO outbox (id, agregado_id, tipo, payload)
		VALUES ($1, 'P-61', 'PedidoCreado', '{"version":1,"pedido_id":"P-61","total_centimos":4820,"moneda":"EUR","token_tarjeta":"tok"}')`, id); err != nil {
		t.Fatal(err)
	}
	handle, err := outbox.PublisherFunction(ctx, lambdaenv.New(os.Getenv), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	// One invocation whose deadline leaves a second after the stop margin.
	ictx, cancel := context.WithTimeout(ctx, lambdaapi.PublisherStopMargin+time.Second)
	defer cancel()
	res, err := handle(ictx)
	if err != nil || res.Publicados != 1 {
		t.Fatalf("invocation %+v, %v; want one published", res, err)
	}
	localaws.WantRequest(t, aws, "AWSEvents.PutEvents", `"EventBusName":"`+env["BUS_NAME"]+`"`,
		`"Source":"`+env["EVENT_SOURCE"]+`"`, `"DetailType":"PedidoCreado"`, "P-61", id)
	wantSigned(t, aws, env["SIGNING_SECRET_ARN"], id)
	var published bool
	if err := db.Super.QueryRow(ctx, `SELECT publicado_en IS NOT NULL FROM outbox WHERE id = $1`, id).Scan(&published); err != nil || !published {
		t.Fatalf("row published %v (%v), want marked published", published, err)
	}
}

// The deployed outbox cleanup, built as its main builds it
// (outbox.CleanupFunction, lambdas/outbox-limpieza) from
// mf-outbox-limpieza's environment in the prod template, its database
// variables pointed at the local PostgreSQL (TLS verify-full, IAM token as
// DB_USER): of a row published eight days ago, one published yesterday and
// a pending one, only the first is deleted (RETENTION_DAYS defaults to 7).
// Replacing the database pool with one that does nothing fails it.
func TestDeployedCleanupDeletesOldPublishedRows(t *testing.T) {
	_, _, db := deployedOutbox(t, "mf-outbox-limpieza")
	ctx := context.Background()
	if _, err := db.Super.Exec(ctx, `INSERT INTO outbox (id, agregado_id, tipo, payload, creado_en, publicado_en) VALUES
		('00000000-0000-4000-8000-000000000001', 'P-1', 'PedidoCreado', '{}', now() - interval '9 days', now() - interval '8 days'),
		('00000000-0000-4000-8000-000000000002', 'P-2', 'PedidoCreado', '{}', now() - interval '2 days', now() - interval '1 day'),
		('00000000-0000-4000-8000-000000000003', 'P-3', 'PedidoCreado', '{}', now() - interval '9 days', NULL)`); err != nil {
		t.Fatal(err)
	}
	handle, err := outbox.CleanupFunction(ctx, lambdaenv.New(os.Getenv), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	res, err := handle(ctx)
	if err != nil || res.Borrados != 1 {
		t.Fatalf("invocation %+v, %v; want one deleted", res, err)
	}
	var left []string
	rows, _ := db.Super.Query(ctx, `SELECT agregado_id FROM outbox ORDER BY agregado_id`)
	for rows.Next() {
		var a string
		_ = rows.Scan(&a)
		left = append(left, a)
	}
	if rows.Err() != nil || len(left) != 2 || left[0] != "P-2" || left[1] != "P-3" {
		t.Fatalf("rows left %v (%v), want P-2 and P-3", left, rows.Err())
	}
}

// wantSigned fails the test unless the PutEvents entry of event id carries
// a firma that verifies, with the key the endpoint serves for secretARN,
// over the charge its detail describes.
func wantSigned(t *testing.T, aws *localaws.Endpoint, secretARN, id string) {
	t.Helper()
	key := signing.Key{ID: localaws.SecretVersion, Secret: []byte(aws.Secret(secretARN))}
	for _, r := range aws.Requests("AWSEvents.PutEvents") {
		var in struct{ Entries []struct{ Detail string } }
		r.JSON(t, &in)
		for _, e := range in.Entries {
			var p eventsapi.PedidoCreado
			if err := json.Unmarshal([]byte(e.Detail), &p); err != nil || p.IDEvento != id {
				continue
			}
			c := signing.Charge{EventID: p.IDEvento, OrderID: p.PedidoID, AmountCents: p.TotalCentimos, Currency: p.Moneda, CardToken: p.TokenTarjeta}
			if err := signing.Verify([]signing.Key{key}, c, p.Firma); err != nil {
				t.Fatalf("published %s: firma %q does not verify with the signing key: %v", id, p.Firma, err)
			}
			return
		}
	}
	t.Fatalf("no PutEvents entry of event %s", id)
}
