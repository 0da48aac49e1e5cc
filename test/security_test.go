package test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/constructs/outbox"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// No deployed function connects as the database master user, in any
// stack of any environment: no function has it in its environment and no
// rds-db:connect statement names it. The functions on the hot path cannot
// read the master secret either (only the schema migration's role can).
func TestNoFunctionConnectsAsTheMasterUser(t *testing.T) {
	s := synthApp(t)
	// The database secrets: those of the outbox stacks. Other secrets (the
	// payment gateway's and the ERP's API keys) are read by their own
	// functions.
	var dbSecrets []string
	for name, tpl := range s.templates {
		if !strings.Contains(name, "-Outbox-") {
			continue
		}
		res, _ := tpl["Resources"].(map[string]any)
		for id, r := range res {
			// A secret is read through its ARN or its target attachment's.
			if typ := r.(map[string]any)["Type"]; typ == "AWS::SecretsManager::Secret" || typ == "AWS::SecretsManager::SecretTargetAttachment" {
				dbSecrets = append(dbSecrets, id)
			}
		}
	}
	if len(dbSecrets) == 0 {
		t.Fatal("no database secret found in the outbox stacks")
	}
	migrationReads := false
	readsDBSecret := func(raw []byte) bool {
		var doc struct {
			PolicyDocument struct{ Statement []map[string]any }
		}
		_ = json.Unmarshal(raw, &doc)
		for _, st := range doc.PolicyDocument.Statement {
			actions, _ := json.Marshal(st["Action"])
			resources, _ := json.Marshal(st["Resource"])
			if !strings.Contains(string(actions), "secretsmanager:GetSecretValue") {
				continue
			}
			for _, id := range dbSecrets {
				if strings.Contains(string(resources), id) {
					return true
				}
			}
		}
		return false
	}
	for name, tpl := range s.templates {
		res, _ := tpl["Resources"].(map[string]any)
		for id, r := range res {
			r := r.(map[string]any)
			raw, _ := json.Marshal(r["Properties"])
			switch r["Type"] {
			case "AWS::Lambda::Function":
				env, _ := json.Marshal(r["Properties"].(map[string]any)["Environment"])
				if strings.Contains(string(env), outbox.DefaultMasterUser) {
					t.Errorf("%s/%s: the master user in a function's environment: %s", name, id, env)
				}
			case "AWS::IAM::Policy", "AWS::IAM::Role", "AWS::IAM::ManagedPolicy":
				if strings.Contains(string(raw), "rds-db:connect") && strings.Contains(string(raw), "/"+outbox.DefaultMasterUser) {
					t.Errorf("%s/%s: rds-db:connect as the master user: %s", name, id, raw)
				}
				if readsDBSecret(raw) && strings.Contains(id, "Migraciones") {
					migrationReads = true
				}
				if readsDBSecret(raw) && !strings.Contains(id, "Migraciones") {
					t.Errorf("%s/%s: a role other than the schema migration's reads a database secret: %s", name, id, raw)
				}
			}
		}
	}
	// The check sees what it looks for: the migration does read it.
	if !migrationReads {
		t.Error("the schema migration's role does not read the database secret: the check above would see nothing")
	}
}

// The outbox schema is migrated once per deploy by a custom resource that
// carries the migrations' hash, before the publisher and the cleanup (which
// no longer migrate) are deployed; the master secret is retained in prod
// with the cluster.
func TestOutboxSchemaMigratedByTheDeploy(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			stack := *es.Outbox.StackName()
			crs := s.resources(t, stack, outbox.MigrationResourceType)
			if len(crs) != 1 {
				t.Fatalf("%d %s resources, want 1", len(crs), outbox.MigrationResourceType)
			}
			var crID string
			for id, cr := range crs {
				crID = id
				if h := cr["Properties"].(map[string]any)["MigracionesHash"]; h != lambdaapi.SchemaHash() {
					t.Errorf("MigracionesHash = %v, want %s", h, lambdaapi.SchemaHash())
				}
			}
			for id, fn := range s.resources(t, stack, "AWS::Lambda::Function") {
				props := fn["Properties"].(map[string]any)
				name, _ := props["FunctionName"].(string)
				env, _ := json.Marshal(props["Environment"])
				if strings.Contains(string(env), "MIGRATE_ON_START") {
					t.Errorf("%s still migrates at start", id)
				}
				if name == es.Env.PhysicalName("mf-outbox-publicador") || name == es.Env.PhysicalName("mf-outbox-limpieza") {
					deps, _ := json.Marshal(fn["DependsOn"])
					if !strings.Contains(string(deps), crID) {
						t.Errorf("%s deploys without waiting for the schema (%s): %s", name, crID, deps)
					}
				}
			}
			if es.Env.Name != "prod" {
				return
			}
			for id, sec := range s.resources(t, stack, "AWS::SecretsManager::Secret") {
				if sec["DeletionPolicy"] != "Retain" || sec["UpdateReplacePolicy"] != "Retain" {
					t.Errorf("prod secret %s: DeletionPolicy %v, UpdateReplacePolicy %v; want Retain with the cluster", id, sec["DeletionPolicy"], sec["UpdateReplacePolicy"])
				}
			}
		})
	}
}

// Every Lambda function of every stack, custom resource handlers included,
// logs to a log group of the same template with a retention and a KMS key
// (a log group Lambda creates by itself has neither).
func TestEveryFunctionLogsToAKeyedRetainedGroup(t *testing.T) {
	s := synthApp(t)
	checked := 0
	defer func() {
		if checked < 3*6 { // per environment at least the outbox's four and the network's one
			t.Errorf("checked only %d functions", checked)
		}
	}()
	for name, tpl := range s.templates {
		res, _ := tpl["Resources"].(map[string]any)
		for id, r := range res {
			r := r.(map[string]any)
			if r["Type"] != "AWS::Lambda::Function" {
				continue
			}
			checked++
			lc, _ := r["Properties"].(map[string]any)["LoggingConfig"].(map[string]any)
			ref, _ := lc["LogGroup"].(map[string]any)
			groupID, _ := ref["Ref"].(string)
			group, _ := res[groupID].(map[string]any)
			if group == nil || group["Type"] != "AWS::Logs::LogGroup" {
				t.Errorf("%s/%s logs to a group this template does not define: %v", name, id, lc)
				continue
			}
			gp := group["Properties"].(map[string]any)
			if gp["RetentionInDays"] == nil || gp["KmsKeyId"] == nil {
				t.Errorf("%s/%s logs to %s without retention or key: %v", name, id, groupID, gp)
			}
		}
	}
}
