package test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/constructs/dependency"
	"github.com/mercadofresco/integration/constructs/orderflow"
	"github.com/mercadofresco/integration/constructs/platform"
	"github.com/mercadofresco/integration/constructs/queues"
)

// TestKeyWatchNamesTheAuditTrail walks every environment's platform
// template: the data key's watch names, in its rule's description, the
// trail of the configuration (config AuditTrail) through which alone it
// sees the key's calls.
func TestKeyWatchNamesTheAuditTrail(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			env := es.Env
			if env.AuditTrail == "" {
				t.Fatal("the environment names no audit trail")
			}
			found := false
			for _, r := range s.resources(t, env.StackName("Platform"), "AWS::Events::Rule") {
				props, _ := r["Properties"].(map[string]any)
				if props["Name"] != env.PhysicalName(platform.KeyWatchRule) {
					continue
				}
				found = true
				if d, _ := props["Description"].(string); !strings.Contains(d, "trail "+env.AuditTrail) {
					t.Errorf("the key watch's description %q does not name the trail %s", d, env.AuditTrail)
				}
			}
			if !found {
				t.Errorf("no rule %s", env.PhysicalName(platform.KeyWatchRule))
			}
		})
	}
}

// TestEveryAPIKeyIsReadOnlyByItsReaders walks every environment's
// templates: every secret that holds an API key (every secret but the
// database's) has a resource policy, BlockPublicPolicy on, whose only
// statement denies secretsmanager:GetSecretValue to every principal whose
// aws:PrincipalArn is not one of the roles the templates let read it (the
// ERP's key: the deployment role, which resolves the connection's
// reference to it).
func TestEveryAPIKeyIsReadOnlyByItsReaders(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			w := walkProducers(t, s, es)
			granted := map[string][]string{} // stack/secret id -> role ARNs
			for _, p := range w.app.Resources("AWS::IAM::Policy") {
				for _, d := range policyDocs(t, w, p) {
					for _, st := range statements(d.doc) {
						if st["Effect"] != "Allow" || !slices.Contains(asStrings(st["Action"]), "secretsmanager:GetSecretValue") {
							continue
						}
						resources, ok := st["Resource"].([]any)
						if !ok {
							resources = []any{st["Resource"]}
						}
						for _, res := range resources {
							if id := refOf(res); id != "" {
								granted[p.Stack+"/"+id] = append(granted[p.Stack+"/"+id], d.roles...)
							}
						}
					}
				}
			}
			keys := 0
			for _, sec := range w.app.Resources("AWS::SecretsManager::Secret") {
				if d, _ := sec.Properties["Description"].(string); !strings.Contains(d, "API key") {
					continue
				}
				keys++
				want := slices.Compact(slices.Sorted(slices.Values(granted[sec.Stack+"/"+sec.LogicalID])))
				if strings.Contains(sec.Properties["Description"].(string), "EventBridge connection") {
					want = []string{deploymentRole(es.Env)}
				}
				if len(want) == 0 {
					t.Errorf("%s: no role reads the API key", sec.Path())
				}
				var policies []map[string]any
				for _, rp := range w.app.Resources("AWS::SecretsManager::ResourcePolicy") {
					if rp.Stack == sec.Stack && refOf(rp.Properties["SecretId"]) == sec.LogicalID {
						policies = append(policies, rp.Properties)
					}
				}
				if len(policies) != 1 {
					t.Errorf("%s: %d resource policies, want 1", sec.Path(), len(policies))
					continue
				}
				if policies[0]["BlockPublicPolicy"] != true {
					t.Errorf("%s: BlockPublicPolicy is not on", sec.Path())
				}
				sts := statements(policies[0]["ResourcePolicy"])
				if len(sts) != 1 {
					t.Errorf("%s: %d statements, want the one Deny", sec.Path(), len(sts))
					continue
				}
				st := sts[0]
				principal, _ := json.Marshal(st["Principal"])
				if st["Sid"] != dependency.SidOnlyReaders || st["Effect"] != "Deny" || string(principal) != `{"AWS":"*"}` ||
					!slices.Equal(asStrings(st["Action"]), []string{"secretsmanager:GetSecretValue"}) {
					t.Errorf("%s: statement %v is not the Deny of GetSecretValue to everyone", sec.Path(), st)
					continue
				}
				cond, _ := dig(st, "Condition", "ArnNotEquals", "aws:PrincipalArn").([]any)
				var got []string
				for _, e := range cond {
					got = append(got, w.roleArn(t, sec.Stack, e))
				}
				if got := slices.Sorted(slices.Values(got)); !slices.Equal(got, want) {
					t.Errorf("%s: readers %v, want %v", sec.Path(), got, want)
				}
			}
			if keys != 5 {
				t.Errorf("found %d API-key secrets, want 5 (gateway, warehouse, e-mail, ERP notice, ERP connection)", keys)
			}
		})
	}
}

// TestOnCallRoleSendsOnlyInAnElevatedSession walks every environment's
// templates: every queue whose known-producers guard admits the on-call
// role (config Roles.Operator; the DLQ redrive) also denies it
// sqs:SendMessage in a session with neither MFA nor the redrive session
// tag, so its standing credentials send nothing; and a rule on the
// default bus alerts on each of its sends.
func TestOnCallRoleSendsOnlyInAnElevatedSession(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			env := es.Env
			operator := env.RoleArn(env.Roles.Operator)
			w := walkProducers(t, s, es)
			admitted, elevated := 0, 0
			for _, qp := range w.app.Resources("AWS::SQS::QueuePolicy") {
				doc, err := w.app.Resolve(qp.Stack, qp.Properties["PolicyDocument"], w.phys)
				if err != nil {
					t.Fatal(err)
				}
				admits, denies := false, false
				for _, st := range statements(doc) {
					switch st["Sid"] {
					case queues.StatementSid:
						admits = slices.Contains(asStrings(dig(st, "Condition", queues.Operator, queues.KeyPrincipalArn)), operator)
					case queues.SidElevatedSession:
						denies = st["Effect"] == "Deny" && dig(st, "Principal", "AWS") == "*" && st["Action"] == queues.ActionSend &&
							dig(st, "Condition", "ArnLike", queues.KeyPrincipalArn) == operator &&
							dig(st, "Condition", "BoolIfExists", queues.KeyMFA) == "false" &&
							dig(st, "Condition", "Null", "aws:PrincipalTag/"+queues.SessionTag) == "true" &&
							len(st["Condition"].(map[string]any)) == 3
						if !denies {
							t.Errorf("%s: elevation statement %v is not the Deny for the on-call role without MFA or tag", qp.Path(), st)
						}
					}
				}
				if admits {
					admitted++
					if !denies {
						t.Errorf("%s admits the on-call role %s in any session", qp.Path(), operator)
					}
				}
				if denies {
					elevated++
				}
			}
			if admitted < 4 || elevated != admitted {
				t.Errorf("%d queues admit the on-call role, %d deny it unelevated: want the order buffer and the consumer queues, all denying", admitted, elevated)
			}
			found := false
			for _, r := range s.resources(t, env.StackName("Platform"), "AWS::Events::Rule") {
				props, _ := r["Properties"].(map[string]any)
				if props["Name"] != env.PhysicalName(platform.SendWatchRule) {
					continue
				}
				found = slices.Equal(asStrings(dig(props, "EventPattern", "detail", "userIdentity", "sessionContext", "sessionIssuer", "arn")), []string{operator}) &&
					slices.Equal(asStrings(dig(props, "EventPattern", "detail", "eventName")), platform.WatchedSendCalls()) &&
					strings.Contains(fmt.Sprint(props["Description"]), env.AuditTrail)
			}
			if !found {
				t.Errorf("no rule %s alerting on the on-call role's sends, naming the trail", env.PhysicalName(platform.SendWatchRule))
			}
		})
	}
}

// TestEveryTopicRefusesEveryCallWithoutTLS walks every environment's
// templates: every topic policy denies each action a topic policy can name
// (not only sns:Publish, all the CDK's enforceSSL denies) when the request
// is not over TLS.
func TestEveryTopicRefusesEveryCallWithoutTLS(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			topics := 0
			for _, st := range es.Stacks() {
				for id, tp := range s.resources(t, *st.StackName(), "AWS::SNS::TopicPolicy") {
					topics++
					covered := map[string]bool{}
					for _, stm := range statements(dig(tp, "Properties", "PolicyDocument")) {
						if stm["Effect"] == "Deny" && dig(stm, "Condition", "Bool", "aws:SecureTransport") == "false" && dig(stm, "Principal", "AWS") == "*" {
							for _, a := range asStrings(stm["Action"]) {
								covered[a] = true
							}
						}
					}
					for _, a := range queues.TopicActions() {
						if !covered[a] {
							t.Errorf("%s/%s: %s is not denied without TLS", *st.StackName(), id, a)
						}
					}
				}
			}
			if topics < 3 {
				t.Errorf("found %d topic policies, want the alerts, the key alerts and the confirmed-order topics", topics)
			}
		})
	}
}

// TestServiceRolesTrustOnlyThisAccount walks every environment's
// templates: the roles the flow logs, the RDS proxy and the ERP rule's
// EventBridge assume trust their service only for this account's
// resources (aws:SourceAccount and aws:SourceArn), so that no other
// account's flow log, proxy or rule can act through them.
func TestServiceRolesTrustOnlyThisAccount(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			env := es.Env
			want := map[string]string{ // service -> aws:SourceArn pattern
				"vpc-flow-logs.amazonaws.com": "arn:aws:ec2:" + env.Region + ":" + env.Account + ":vpc-flow-log/*",
				"rds.amazonaws.com":           "arn:aws:rds:" + env.Region + ":" + env.Account + ":db-proxy:*",
				"events.amazonaws.com":        "arn:aws:events:" + env.Region + ":" + env.Account + ":rule/*",
			}
			found := map[string]int{}
			w := walkProducers(t, s, es)
			for _, r := range w.app.Resources("AWS::IAM::Role") {
				desc, _ := r.Properties["Description"].(string)
				for _, st := range statements(r.Properties["AssumeRolePolicyDocument"]) {
					svc, _ := dig(st, "Principal", "Service").(string)
					pattern, watched := want[svc]
					if !watched || svc == "events.amazonaws.com" && !strings.Contains(desc, "invoke the ERP API destination") {
						continue
					}
					found[svc]++
					account := w.str(t, r.Stack, dig(st, "Condition", "StringEquals", "aws:SourceAccount"))
					source := w.str(t, r.Stack, dig(st, "Condition", "ArnLike", "aws:SourceArn"))
					if account != env.Account || source != pattern {
						t.Errorf("%s trusts %s with aws:SourceAccount %q and aws:SourceArn %q, want %s and %s", r.Path(), svc, account, source, env.Account, pattern)
					}
				}
			}
			for svc := range want {
				if found[svc] == 0 {
					t.Errorf("no role trusted by %s found", svc)
				}
			}
		})
	}
}

// TestAuroraKeepsTheConfiguredBackupsAndProdLogsEveryFlow walks every environment's outbox
// template: the cluster keeps DatabaseBackupDays of automated backups
// (35 in prod, Aurora's maximum), and the VPC's flow log records ALL
// traffic where FlowLogsAllTraffic says so (prod).
func TestAuroraKeepsTheConfiguredBackupsAndProdLogsEveryFlow(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			env := es.Env
			clusters := s.resources(t, env.StackName("Outbox"), "AWS::RDS::DBCluster")
			if len(clusters) != 1 {
				t.Fatalf("%d clusters, want 1", len(clusters))
			}
			for id, c := range clusters {
				if got := dig(c, "Properties", "BackupRetentionPeriod"); got != env.DatabaseBackupDays {
					t.Errorf("%s keeps %v days of backups, want %v", id, got, env.DatabaseBackupDays)
				}
			}
			if env.Name == "prod" && (env.DatabaseBackupDays != 35 || !env.FlowLogsAllTraffic) {
				t.Errorf("prod: %v days of backups, all flows %v; want 35 and true", env.DatabaseBackupDays, env.FlowLogsAllTraffic)
			}
			want := "REJECT"
			if env.FlowLogsAllTraffic {
				want = "ALL"
			}
			logs := s.resources(t, env.StackName("Network"), "AWS::EC2::FlowLog")
			for id, fl := range logs {
				if got := dig(fl, "Properties", "TrafficType"); got != want {
					t.Errorf("%s records %v, want %s", id, got, want)
				}
			}
			if len(logs) != 1 {
				t.Errorf("%d flow logs, want 1", len(logs))
			}
		})
	}
}

// TestRotationFunctionLogsToAKeyedRetainedGroup walks every environment's
// outbox template: the Aurora secret's rotation function (a serverless
// application's, outside the template's functions) logs to a group the
// template defines under its name, with a retention and the data key, kept
// where the environment keeps its data.
func TestRotationFunctionLogsToAKeyedRetainedGroup(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			stack := es.Env.StackName("Outbox")
			apps := s.resources(t, stack, "AWS::Serverless::Application")
			if len(apps) != 1 {
				t.Fatalf("%d serverless applications, want the rotation", len(apps))
			}
			groups := s.resources(t, stack, "AWS::Logs::LogGroup")
			for id, app := range apps {
				name := "/aws/lambda/" + fmt.Sprint(dig(app, "Properties", "Parameters", "functionName"))
				found := false
				for _, g := range groups {
					if dig(g, "Properties", "LogGroupName") != name {
						continue
					}
					found = true
					if dig(g, "Properties", "RetentionInDays") == nil || dig(g, "Properties", "KmsKeyId") == nil {
						t.Errorf("%s: %s has no retention or key", id, name)
					}
					if es.Env.Name == "prod" && g["DeletionPolicy"] != "Retain" {
						t.Errorf("%s: %s is not retained in prod (%v)", id, name, g["DeletionPolicy"])
					}
				}
				if !found {
					t.Errorf("%s: no log group %s", id, name)
				}
			}
		})
	}
}

// TestWorkflowRoleUsesTheKeyThroughServicesOnly walks every environment's
// order-flow template: the workflow role's policy denies kms:Decrypt and
// kms:GenerateDataKey* on the data key outside SNS, SQS and Step
// Functions (kms:ViaService), which bounds the CDK's unconditioned grant of
// both to its publish and send tasks.
func TestWorkflowRoleUsesTheKeyThroughServicesOnly(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			env := es.Env
			found := false
			for id, p := range s.resources(t, env.StackName("OrderFlow"), "AWS::IAM::Policy") {
				if !strings.HasPrefix(id, "ProcesarPedidoStateMachineRole") {
					continue
				}
				for _, st := range statements(dig(p, "Properties", "PolicyDocument")) {
					if st["Sid"] != orderflow.SidKeyThroughServices {
						continue
					}
					found = st["Effect"] == "Deny" &&
						slices.Equal(asStrings(st["Action"]), []string{"kms:Decrypt", "kms:GenerateDataKey*"}) &&
						slices.Equal(asStrings(dig(st, "Condition", "StringNotEquals", "kms:ViaService")), orderflow.KeyServices(env.Region)) &&
						strings.Contains(fmt.Sprint(st["Resource"]), "DataKey")
				}
			}
			if !found {
				t.Errorf("the workflow role has no Deny %s of the data key outside %v", orderflow.SidKeyThroughServices, orderflow.KeyServices(env.Region))
			}
		})
	}
}
