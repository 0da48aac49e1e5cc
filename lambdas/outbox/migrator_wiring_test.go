package outbox_test

import (
	"context"
	"github.com/mercadofresco/integration/internal/lambdatest"
	"github.com/mercadofresco/integration/internal/localaws"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/outbox"
)

// The deployed migrator, built as its main builds it (outbox.MigratorFunction,
// lambdas/outbox-migraciones) from mf-outbox-migraciones's environment in
// the prod template, its database variables pointed at a fresh database of
// the local PostgreSQL (TLS verify-full): a Create reads the master secret
// of DB_MASTER_SECRET_ARN from Secrets Manager, creates the roles with
// rds_iam as the master user, then, logged in as the owner role with its
// IAM token, creates the schema owned by it and grants the publisher its
// privileges. The roles are uniquely named (they belong to the server).
// Replacing the Secrets Manager client or either database connection with
// one that does nothing fails it.
func TestDeployedMigratorCreatesSchemaAndRoles(t *testing.T) {
	env := lambdatest.DeployedEnv(t, "MercadoFresco-Outbox-prod", "mf-outbox-migraciones")
	aws := localaws.NewEndpoint(t, nil)
	db := lambdatest.NewDatabase(t, env)
	lambdatest.EnsureRoles(t, db, "NOLOGIN", "rds_iam") // Aurora's role for IAM logins
	aws.SetSecret(env["DB_MASTER_SECRET_ARN"], `{"username":"postgres","password":"-","host":"localhost","port":5432,"dbname":"tienda"}`)
	prefix := localaws.UniqueName("mfw_") + "_"
	roles := lambdaapi.DBRoles{Owner: prefix + "migrador", Publisher: prefix + "publicador", Cleanup: prefix + "limpieza", Writer: prefix + "tienda"}
	localaws.DropRolesAtEnd(t, db.Name, outbox.MigrationLockKey, roles.All()...)
	lambdatest.Setenv(t, env, aws.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	handle, err := outbox.MigratorFunction(ctx, lambdaenv.New(os.Getenv), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	res, err := handle(ctx, cfn.Event{RequestType: cfn.RequestCreate, LogicalResourceID: "MigracionesEsquema",
		ResourceProperties: map[string]any{lambdaapi.MigrationPropertyHash: lambdaapi.SchemaHash(), lambdaapi.MigrationPropertyRoles: map[string]any{
			"owner": roles.Owner, "publisher": roles.Publisher, "cleanup": roles.Cleanup, "writer": roles.Writer}}})
	if err != nil || res.PhysicalResourceID != outbox.SchemaID {
		t.Fatalf("Create = %+v, %v", res, err)
	}
	localaws.WantRequest(t, aws, "secretsmanager.GetSecretValue", env["DB_MASTER_SECRET_ARN"])
	var tableOwner string
	var iam, canClaim bool
	err = db.Super.QueryRow(ctx, `SELECT pg_get_userbyid(relowner), pg_has_role($1, 'rds_iam', 'MEMBER'),
		has_column_privilege($2, 'public.outbox', 'publicado_en', 'UPDATE')
		FROM pg_class WHERE oid = 'public.outbox'::regclass`, roles.Owner, roles.Publisher).Scan(&tableOwner, &iam, &canClaim)
	if err != nil || tableOwner != roles.Owner || !iam || !canClaim {
		t.Fatalf("outbox owned by %q, owner in rds_iam %v, publisher may mark %v (%v); want the owner's table, rds_iam, the grant",
			tableOwner, iam, canClaim, err)
	}
}
