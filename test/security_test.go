package test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/constructs/outbox"
	"github.com/mercadofresco/integration/lambdas/outbox/schema"
)

// No deployed function connects as the database master user, in any
// stack of any environment: no function has it in its environment and no
// rds-db:connect statement names it. The functions on the hot path cannot
// read the master secret either (only the schema migration's role can).
func TestNoFunctionConnectsAsTheMasterUser(t *testing.T) {
	s := synthApp(t)
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
				if readsMasterSecret(r["Properties"]) && !strings.Contains(id, "Migraciones") {
					t.Errorf("%s/%s: a role other than the schema migration's reads the master secret: %s", name, id, raw)
				}
			}
		}
	}
}

// readsMasterSecret reports whether a policy's properties hold a
// secretsmanager:GetSecretValue statement on the Aurora cluster's secret
// (its logical id, or an export of it, names ClusterSecret). Other secrets
// (the API keys of the HTTP dependencies) are read by their own consumers.
func readsMasterSecret(props any) bool {
	doc, _ := props.(map[string]any)["PolicyDocument"].(map[string]any)
	statements, _ := doc["Statement"].([]any)
	for _, st := range statements {
		b, _ := json.Marshal(st)
		if strings.Contains(string(b), "secretsmanager:GetSecretValue") && strings.Contains(string(b), "ClusterSecret") {
			return true
		}
	}
	return false
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
				if h := cr["Properties"].(map[string]any)["MigracionesHash"]; h != schema.Hash() {
					t.Errorf("MigracionesHash = %v, want %s", h, schema.Hash())
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

// In prod, the rotation function's security group is admitted to the
// Secrets Manager endpoint of the Network stack on 443 (the rotation could
// not reach Secrets Manager before).
func TestProdRotationReachesSecretsManager(t *testing.T) {
	s := synthApp(t)
	es := s.env(t, "prod")
	found := false
	for _, rule := range s.resources(t, *es.Outbox.StackName(), "AWS::EC2::SecurityGroupIngress") {
		p := rule["Properties"].(map[string]any)
		src, _ := json.Marshal(p["SourceSecurityGroupId"])
		dst, _ := json.Marshal(p["GroupId"])
		if strings.Contains(string(src), "Rotation") && strings.Contains(string(dst), "SecretsManager") && p["FromPort"] == float64(443) {
			found = true
		}
	}
	if !found {
		t.Fatal("no ingress rule admits the prod rotation function to the Secrets Manager endpoint on 443")
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
