package test

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/platform"
	"github.com/mercadofresco/integration/stacks"
	"github.com/mercadofresco/integration/synthesized/eventpattern"
)

// cryptoActions are the KMS actions that use a key (or hand out its use):
// no administrator may have one, and no principal of the account may call
// one except through a service.
var cryptoActions = []string{
	"kms:Decrypt", "kms:Encrypt", "kms:ReEncryptFrom", "kms:ReEncryptTo", "kms:GenerateDataKey",
	"kms:GenerateDataKeyWithoutPlaintext", "kms:GenerateDataKeyPair", "kms:GenerateDataKeyPairWithoutPlaintext",
	"kms:GenerateMac", "kms:VerifyMac", "kms:Sign", "kms:Verify", "kms:CreateGrant", "kms:DeriveSharedSecret",
}

// keyStatement is one statement of the data key's policy.
type keyStatement struct {
	Sid       string
	Effect    string
	Principal any
	Action    any
	Condition map[string]map[string]any
}

func (st keyStatement) actions() []string { return asStrings(st.Action) }

// covers reports whether the statement's actions include action (IAM's
// wildcards, case-insensitive).
func (st keyStatement) covers(action string) bool {
	for _, a := range st.actions() {
		if ok, _ := path.Match(strings.ToLower(a), strings.ToLower(action)); ok || a == "*" {
			return true
		}
	}
	return false
}

// awsPrincipals are the statement's AWS principals ("*" for anyone).
func (st keyStatement) awsPrincipals() []string {
	if st.Principal == "*" {
		return []string{"*"}
	}
	p, _ := st.Principal.(map[string]any)
	return asStrings(p["AWS"])
}

// dataKey returns the data key's logical id and policy statements in env's
// platform template.
func dataKey(t *testing.T, s *synthesis, es *stacks.EnvironmentStacks) (string, []keyStatement) {
	t.Helper()
	id := *es.Platform.GetLogicalId(es.Platform.DataKey.Node().DefaultChild().(awscdk.CfnElement))
	key, ok := s.resources(t, *es.Platform.StackName(), "AWS::KMS::Key")[id]
	if !ok {
		t.Fatalf("%s: no data key %s", es.Env.Name, id)
	}
	raw, _ := json.Marshal(key["Properties"].(map[string]any)["KeyPolicy"].(map[string]any)["Statement"])
	var sts []keyStatement
	if err := json.Unmarshal(raw, &sts); err != nil {
		t.Fatalf("key policy: %v", err)
	}
	return id, sts
}

// directCallAllowed evaluates the key policy for a call the principal makes
// to KMS itself (no kms:ViaService in the request), as KMS does, for a
// principal whose IAM policies allow everything (the worst case): an
// explicit Deny wins, then an Allow naming the principal or the account
// allows. A condition the evaluator does not know fails the
// test: guessing would prove nothing.
func directCallAllowed(t *testing.T, sts []keyStatement, account, principal, action string) bool {
	t.Helper()
	root := "arn:aws:iam::" + account + ":root"
	allowed := false
	for _, st := range sts {
		if st.awsPrincipals() == nil || !st.covers(action) {
			continue // a service principal's statement, or another action
		}
		named := slices.Contains(st.awsPrincipals(), principal) || slices.Contains(st.awsPrincipals(), "*")
		delegated := slices.Contains(st.awsPrincipals(), root)
		applies := named || delegated
		for op, keys := range st.Condition {
			for k, v := range keys {
				switch {
				case op == "ArnNotLike" && k == "aws:PrincipalArn":
					for _, pattern := range asStrings(v) {
						if ok, _ := path.Match(pattern, principal); ok {
							applies = false
						}
					}
				case op == "BoolIfExists" && (k == "kms:GrantIsForAWSResource" || k == "aws:PrincipalIsAWSService"):
					// A direct call by one of the account's principals:
					// KMS sets GrantIsForAWSResource false, and the
					// principal is no AWS service.
					applies = applies && slices.Equal(asStrings(v), []string{"false"})
				case k == "kms:ViaService" || k == "kms:GrantIsForAWSResource":
					applies = false // a direct call carries neither
				case op == "StringEquals" && k == "kms:CallerAccount":
					applies = applies && slices.Contains(asStrings(v), account)
				default:
					t.Fatalf("statement %q: condition %s %s is not evaluated here", st.Sid, op, k)
				}
			}
		}
		if !applies {
			continue
		}
		if st.Effect == "Deny" {
			return false
		}
		// An account-wide Allow whose conditions hold delegates to IAM:
		// the principal may make the call if its IAM policies allow it,
		// which they do for an administrator of the account.
		allowed = true
	}
	return allowed
}

func deploymentRole(env config.Environment) string {
	return env.RoleArn(fmt.Sprintf("cdk-hnb659fds-cfn-exec-role-%s-%s", env.Account, env.Region))
}

// keyUsers maps the resource types that reference the data key to the
// service that uses it for them ("" for references that are no use of the
// key: grants, the alias, the key watch's pattern).
var keyUsers = map[string]string{
	"AWS::SQS::Queue": "sqs", "AWS::SNS::Topic": "sns", "AWS::DynamoDB::Table": "dynamodb",
	"AWS::SecretsManager::Secret": "secretsmanager", "AWS::RDS::DBCluster": "rds", "AWS::RDS::DBInstance": "rds",
	"AWS::StepFunctions::StateMachine": "states", "AWS::Events::EventBus": "events", "AWS::Events::Archive": "events",
	"AWS::Lambda::Function": "lambda", "AWS::Logs::LogGroup": "logs", "AWS::ElastiCache::ServerlessCache": "elasticache",
	"AWS::Pipes::Pipe": "pipes",
	// The secret rotation application: its function reads and writes the
	// secret through Secrets Manager.
	"AWS::Serverless::Application": "secretsmanager",
	// The ERP connection: EventBridge keeps its credentials in a secret of
	// its own (events!connection/...) and uses the key through Secrets
	// Manager.
	"AWS::Events::Connection": "secretsmanager",
	"AWS::IAM::Policy":        "", "AWS::KMS::Alias": "", "AWS::Events::Rule": "",
}

// The data key's policy has no statement of the CDK's default (kms:* for
// the account); its administrators (the deployment role and
// Roles.KeyAdmin) cannot use it, nor can any other principal call it
// directly; the account's principals use it only through the services
// of kms:ViaService, and that list is exactly the services of the
// resources every template of the environment encrypts with the key.
func TestDataKeyPolicySeparatesAdministrationFromUse(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			env := es.Env
			keyID, sts := dataKey(t, s, es)
			deployer, keyAdmin := deploymentRole(env), env.RoleArn(env.Roles.KeyAdmin)
			iamAdmin := env.RoleArn("AdministratorAccess-sso")

			var admin, use *keyStatement
			for i, st := range sts {
				if slices.Contains(st.actions(), "kms:*") {
					t.Errorf("statement %q allows kms:* to %v", st.Sid, st.Principal)
				}
				switch st.Sid {
				case platform.SidKeyAdministration:
					admin = &sts[i]
				case platform.SidKeyUse:
					use = &sts[i]
				}
			}
			if admin == nil || use == nil {
				t.Fatalf("no %s or %s statement", platform.SidKeyAdministration, platform.SidKeyUse)
			}
			if got, want := sorted(admin.awsPrincipals()), sorted([]string{deployer, keyAdmin}); !slices.Equal(got, want) {
				t.Errorf("administrators = %v, want %v", got, want)
			}
			for _, a := range cryptoActions {
				if admin.covers(a) {
					t.Errorf("the administrators may %s", a)
				}
			}
			// The deployment role keeps kms:PutKeyPolicy (KMS's lockout
			// check; the policy changes only through a reviewed deploy); the
			// key administrator administers, but can neither rewrite the
			// policy nor turn rotation off, and neither can the deployer.
			for _, p := range []string{deployer, keyAdmin} {
				for _, a := range []string{"kms:EnableKeyRotation", "kms:TagResource", "kms:DescribeKey"} {
					if !directCallAllowed(t, sts, env.Account, p, a) {
						t.Errorf("%s may not %s", p, a)
					}
				}
				if directCallAllowed(t, sts, env.Account, p, "kms:DisableKeyRotation") {
					t.Errorf("%s may disable the key's rotation", p)
				}
			}
			if !directCallAllowed(t, sts, env.Account, deployer, "kms:PutKeyPolicy") {
				t.Errorf("the deployment role may not set the key's policy")
			}
			if directCallAllowed(t, sts, env.Account, keyAdmin, "kms:PutKeyPolicy") {
				t.Errorf("the key administrator may rewrite the key's policy")
			}
			// Nobody uses the key directly, administrators included, and an
			// IAM administrator of the account neither uses nor administers.
			for _, p := range []string{deployer, keyAdmin, iamAdmin, env.RoleArn(env.Roles.BreakGlass)} {
				for _, a := range append(cryptoActions, "kms:PutKeyPolicy") {
					if a == "kms:PutKeyPolicy" && p != iamAdmin {
						continue
					}
					if directCallAllowed(t, sts, env.Account, p, a) {
						t.Errorf("%s may call %s directly", p, a)
					}
				}
			}

			// Every statement that lets principals of the account use the
			// key names the services it goes through.
			via := asStrings(use.Condition["StringEquals"]["kms:ViaService"])
			if got := asStrings(use.Condition["StringEquals"]["kms:CallerAccount"]); !slices.Equal(got, []string{env.Account}) {
				t.Errorf("use: kms:CallerAccount = %v, want %s", got, env.Account)
			}
			for _, st := range sts {
				if st.Effect != "Allow" || st.awsPrincipals() == nil || st.Sid == platform.SidKeyAdministration || st.Sid == platform.SidKeyBreakGlass {
					continue
				}
				crypto := slices.ContainsFunc(cryptoActions, st.covers)
				if sv := asStrings(st.Condition["StringEquals"]["kms:ViaService"]); crypto && len(sv) == 0 {
					t.Errorf("statement %q lets %v use the key without kms:ViaService", st.Sid, st.Principal)
				} else if crypto {
					for _, v := range sv {
						if !slices.Contains(via, v) {
							t.Errorf("statement %q: kms:ViaService %s is not in the use statement's %v", st.Sid, v, via)
						}
					}
				}
			}

			// The list is the services of the templates' encrypted
			// resources, no fewer and no more.
			used := map[string]string{}
			for _, st := range es.Stacks() {
				res, _ := s.templates[*st.StackName()]["Resources"].(map[string]any)
				for id, r := range res {
					r := r.(map[string]any)
					typ, _ := r["Type"].(string)
					raw, _ := json.Marshal(r["Properties"])
					if typ == "AWS::KMS::Key" || !strings.Contains(string(raw), keyID) {
						continue
					}
					svc, known := keyUsers[typ]
					if !known {
						t.Errorf("%s/%s (%s) references the data key: add its type to keyUsers with the service that uses the key", *st.StackName(), id, typ)
						continue
					}
					if svc == "" {
						continue
					}
					used[svc] = *st.StackName() + "/" + id
					if want := svc + "." + env.Region + ".amazonaws.com"; !slices.Contains(via, want) {
						t.Errorf("%s/%s (%s) is encrypted with the data key, but %s is not in kms:ViaService %v", *st.StackName(), id, typ, want, via)
					}
				}
			}
			for _, v := range via {
				if svc := strings.TrimSuffix(v, "."+env.Region+".amazonaws.com"); used[svc] == "" {
					t.Errorf("kms:ViaService %s: no resource of the templates is encrypted through it", v)
				}
			}
			if len(used) < 8 {
				t.Errorf("only %d services found using the key: %v", len(used), used)
			}
		})
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

// Only Roles.BreakGlass may schedule the data key's deletion or disable
// it: every other principal is denied explicitly, its administrators
// included. In dev (RemovalPolicy DESTROY) the deployment role may too, so
// that destroying the stack can delete the key; in staging and prod it may
// not (the key is retained).
func TestDataKeyDeletionIsDeniedButToBreakGlass(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			env := es.Env
			_, sts := dataKey(t, s, es)
			breakGlass, deployer := env.RoleArn(env.Roles.BreakGlass), deploymentRole(env)
			want := map[string]bool{
				breakGlass:                         true,
				deployer:                           env.RemovalPolicy == awscdk.RemovalPolicy_DESTROY,
				env.RoleArn(env.Roles.KeyAdmin):    false,
				env.RoleArn(env.Roles.Operator):    false,
				env.RoleArn("AdministratorAccess"): false,
			}
			if env.Name == "dev" && !want[deployer] {
				t.Fatal("dev no longer destroys its key: the deployment role's exemption is untested")
			}
			for principal, may := range want {
				for _, action := range []string{"kms:ScheduleKeyDeletion", "kms:DisableKey"} {
					if got := directCallAllowed(t, sts, env.Account, principal, action); got != may {
						t.Errorf("%s %s: allowed = %v, want %v", principal, action, got, may)
					}
				}
			}
			// The Deny is explicit, so no later Allow (a policy edit, a
			// grant through IAM) can open the two calls to anyone else.
			found := false
			for _, st := range sts {
				if st.Sid != platform.SidKeyDeletion {
					continue
				}
				found = st.Effect == "Deny" && slices.Equal(st.awsPrincipals(), []string{"*"}) &&
					st.covers("kms:ScheduleKeyDeletion") && st.covers("kms:DisableKey")
			}
			if !found {
				t.Errorf("no explicit Deny %s for every principal", platform.SidKeyDeletion)
			}
		})
	}
}

// Every IAM grant on the data key in every template uses it only through a
// service (kms:ViaService) or for one resource's encryption context: in
// particular every queue consumer decrypts only through SQS. The one
// exception is the order workflow's role, whose statement the CDK's SNS and
// SQS task integrations write (the key policy's kms:ViaService still
// bounds it).
func TestConsumersUseTheDataKeyOnlyThroughServices(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			keyID, _ := dataKey(t, s, es)
			consumers := 0
			for _, st := range es.Stacks() {
				for id, pol := range s.resources(t, *st.StackName(), "AWS::IAM::Policy") {
					raw, _ := json.Marshal(pol["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"])
					var stmts []struct {
						Effect    string
						Action    any
						Resource  any
						Condition map[string]map[string]any
					}
					_ = json.Unmarshal(raw, &stmts)
					consumes := strings.Contains(string(raw), `"sqs:ReceiveMessage"`)
					keyVia := []string{}
					for _, stmt := range stmts {
						res, _ := json.Marshal(stmt.Resource)
						ks := keyStatement{Action: stmt.Action}
						if stmt.Effect != "Allow" || !strings.Contains(string(res), keyID) || !slices.ContainsFunc(cryptoActions, ks.covers) {
							continue
						}
						via := asStrings(stmt.Condition["StringEquals"]["kms:ViaService"])
						keyVia = append(keyVia, via...)
						if len(via) > 0 || hasEncryptionContext(stmt.Condition) {
							continue
						}
						if strings.HasPrefix(id, "ProcesarPedidoStateMachineRoleDefaultPolicy") {
							continue // the CDK's task integrations, see above
						}
						t.Errorf("%s/%s: %v on the data key without kms:ViaService", *st.StackName(), id, stmt.Action)
					}
					if consumes && len(keyVia) > 0 {
						consumers++
						if want := "sqs." + es.Env.Region + ".amazonaws.com"; !slices.Contains(keyVia, want) {
							t.Errorf("%s/%s consumes a queue but decrypts through %v, not %s", *st.StackName(), id, keyVia, want)
						}
					}
				}
			}
			// The four consumers of the messaging stack and the starter.
			if consumers < 5 {
				t.Errorf("%d queue consumers with a key grant found, want at least 5", consumers)
			}
		})
	}
}

func hasEncryptionContext(cond map[string]map[string]any) bool {
	for _, keys := range cond {
		for k := range keys {
			if strings.HasPrefix(k, "kms:EncryptionContext:") {
				return true
			}
		}
	}
	return false
}

// cloudTrailKeyEvent is the EventBridge event of a KMS call recorded by
// CloudTrail: denied (no responseElements), with the key as the caller
// named it (a bare key id) and as KMS records it (resources[].ARN).
func cloudTrailKeyEvent(account, call, keyArn string) map[string]any {
	raw := fmt.Sprintf(`{
  "version": "0", "id": "6f1d", "detail-type": "AWS API Call via CloudTrail", "source": "aws.kms",
  "account": %[1]q, "time": "2026-12-04T03:12:00Z", "region": "eu-west-1", "resources": [],
  "detail": {
    "eventVersion": "1.08", "eventSource": "kms.amazonaws.com", "eventName": %[2]q, "awsRegion": "eu-west-1",
    "userIdentity": {"type": "AssumedRole", "arn": "arn:aws:sts::%[1]s:assumed-role/mercadofresco-administrador-claves/ana"},
    "errorCode": "AccessDeniedException",
    "requestParameters": {"keyId": %[4]q, "pendingWindowInDays": 7},
    "responseElements": null,
    "resources": [{"accountId": %[1]q, "type": "AWS::KMS::Key", "ARN": %[3]q}],
    "eventType": "AwsApiCall", "readOnly": false
  }
}`, account, call, keyArn, keyArn[strings.LastIndex(keyArn, "/")+1:])
	var v map[string]any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		panic(err)
	}
	return v
}

// An attempt to schedule the data key's deletion, disable it, change its
// policy or cancel its deletion (denied or not) reaches alertas-mercadofresco
// and alertas-mercadofresco-clave: a rule on the default bus matches
// CloudTrail's event for this key (and not for another key, nor a Decrypt),
// targets both topics with a retry policy and a DLQ that does not depend on
// the data key; the key's own topic is not encrypted with it, TLS only,
// subscribed by the alarm e-mail, and both topics admit the rule.
func TestDataKeyDeletionAttemptsReachTheAlerts(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			env, stack := es.Env, *es.Platform.StackName()
			logical := func(c awscdk.CfnElement) string { return *es.Platform.GetLogicalId(c) }
			keyID := logical(es.Platform.DataKey.Node().DefaultChild().(awscdk.CfnElement))
			alertsID := logical(es.Platform.Alerts.Node().DefaultChild().(awscdk.CfnElement))
			keyTopicID := logical(es.Platform.KeyWatch.Topic.Node().DefaultChild().(awscdk.CfnElement))
			dlqID := logical(es.Platform.KeyWatch.Rule.DeadLetterQueue.Queue.Node().DefaultChild().(awscdk.CfnElement))

			var rule map[string]any
			ruleID := ""
			for id, r := range s.resources(t, stack, "AWS::Events::Rule") {
				if p := r["Properties"].(map[string]any); p["Name"] == env.PhysicalName(platform.KeyWatchRule) {
					rule, ruleID = p, id
				}
			}
			if rule == nil {
				t.Fatalf("no rule %s", env.PhysicalName(platform.KeyWatchRule))
			}
			if bus, ok := rule["EventBusName"]; ok {
				t.Errorf("the rule is on bus %v, want the default bus (CloudTrail's events)", bus)
			}
			// The pattern with the key's ARN as CloudFormation resolves it.
			keyArn := "arn:aws:kms:" + env.Region + ":" + env.Account + ":key/1f2e3d4c-0000-4000-8000-00000000abcd"
			raw, _ := json.Marshal(rule["EventPattern"])
			raw = []byte(strings.ReplaceAll(string(raw), `{"Fn::GetAtt":["`+keyID+`","Arn"]}`, fmt.Sprintf("%q", keyArn)))
			pattern, err := eventpattern.Compile(raw)
			if err != nil {
				t.Fatalf("pattern %s: %v", raw, err)
			}
			otherKey := "arn:aws:kms:" + env.Region + ":" + env.Account + ":key/99999999-0000-4000-8000-000000000000"
			for _, tc := range []struct {
				call, key string
				want      bool
			}{
				{"ScheduleKeyDeletion", keyArn, true},
				{"DisableKey", keyArn, true},
				{"PutKeyPolicy", keyArn, true},
				{"DisableKeyRotation", keyArn, true},
				{"CancelKeyDeletion", keyArn, true},
				{"ScheduleKeyDeletion", otherKey, false},
				{"Decrypt", keyArn, false},
			} {
				if got := pattern.MatchValue(cloudTrailKeyEvent(env.Account, tc.call, tc.key)); got != tc.want {
					t.Errorf("%s on %s: matched = %v, want %v (pattern %s)", tc.call, tc.key, got, tc.want, raw)
				}
			}

			// Both topics, each with a retry policy within MF-ATTEMPTS and
			// the watch's DLQ.
			targets, _ := rule["Targets"].([]any)
			var arns []string
			for _, tg := range targets {
				tm := tg.(map[string]any)
				a, _ := json.Marshal(tm["Arn"])
				arns = append(arns, string(a))
				dlq, _ := json.Marshal(tm["DeadLetterConfig"])
				if !strings.Contains(string(dlq), dlqID) {
					t.Errorf("target %s: dead-letter config %s, want %s", a, dlq, dlqID)
				}
				rp, _ := tm["RetryPolicy"].(map[string]any)
				if n, ok := rp["MaximumRetryAttempts"].(float64); !ok || n+1 > 15 {
					t.Errorf("target %s: retry policy %v (at most 14 retries: MF-ATTEMPTS)", a, rp)
				}
			}
			if got, want := sorted(arns), sorted([]string{`{"Ref":"` + alertsID + `"}`, `{"Ref":"` + keyTopicID + `"}`}); !slices.Equal(got, want) {
				t.Errorf("targets %v, want %v", got, want)
			}
			// The DLQ and the key's topic work while the key does not.
			dlq := s.resources(t, stack, "AWS::SQS::Queue")[dlqID]["Properties"].(map[string]any)
			if dlq["SqsManagedSseEnabled"] != true || dlq["KmsMasterKeyId"] != nil {
				t.Errorf("DLQ encryption %v / %v, want SQS-managed", dlq["SqsManagedSseEnabled"], dlq["KmsMasterKeyId"])
			}
			topic := s.resources(t, stack, "AWS::SNS::Topic")[keyTopicID]["Properties"].(map[string]any)
			if topic["TopicName"] != env.PhysicalName(platform.KeyAlertsTopic) || topic["KmsMasterKeyId"] != nil {
				t.Errorf("key topic %v: want %s without the data key", topic, env.PhysicalName(platform.KeyAlertsTopic))
			}
			subscribed := false
			for _, sub := range s.resources(t, stack, "AWS::SNS::Subscription") {
				p := sub["Properties"].(map[string]any)
				ref, _ := json.Marshal(p["TopicArn"])
				subscribed = subscribed || (string(ref) == `{"Ref":"`+keyTopicID+`"}` && p["Protocol"] == "email" && p["Endpoint"] == env.AlarmEmail)
			}
			if !subscribed {
				t.Errorf("%s is not subscribed by %s", env.PhysicalName(platform.KeyAlertsTopic), env.AlarmEmail)
			}
			for _, topicID := range []string{alertsID, keyTopicID} {
				tls, admitted := false, false
				for _, pol := range s.resources(t, stack, "AWS::SNS::TopicPolicy") {
					p := pol["Properties"].(map[string]any)
					if ts, _ := json.Marshal(p["Topics"]); string(ts) != `[{"Ref":"`+topicID+`"}]` {
						continue
					}
					for _, st := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
						raw, _ := json.Marshal(st)
						tls = tls || strings.Contains(string(raw), `"aws:SecureTransport":"false"`) && strings.Contains(string(raw), `"Effect":"Deny"`)
						admitted = admitted || strings.Contains(string(raw), `"Service":"events.amazonaws.com"`) &&
							strings.Contains(string(raw), `"aws:SourceArn":{"Fn::GetAtt":["`+ruleID+`","Arn"]}`)
					}
				}
				if !tls || !admitted {
					t.Errorf("topic %s: TLS enforced %v, the rule admitted as publisher %v", topicID, tls, admitted)
				}
			}
		})
	}
}

// Every service principal the data key admits is confined to this
// account: each Allow to a service carries aws:SourceAccount or an
// encryption context of this account's resources, or, for the one the CDK writes without a
// condition (delivery.logs, a state machine's log delivery), an explicit
// Deny refuses calls made for another account.
func TestDataKeyServicesActOnlyForThisAccount(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			_, sts := dataKey(t, s, es)
			services := func(st keyStatement) []string {
				p, _ := st.Principal.(map[string]any)
				return asStrings(p["Service"])
			}
			denied := map[string]bool{}
			for _, st := range sts {
				if st.Effect == "Deny" && st.Sid == platform.SidServicesOnlyForThisAccount &&
					st.covers("kms:Decrypt") && st.Condition["StringNotEqualsIfExists"]["aws:SourceAccount"] == es.Env.Account {
					for _, svc := range services(st) {
						denied[svc] = true
					}
				}
			}
			for _, st := range sts {
				if st.Effect != "Allow" {
					continue
				}
				for _, svc := range services(st) {
					scoped := st.Condition["StringEquals"]["aws:SourceAccount"] == es.Env.Account ||
						!st.covers("kms:Decrypt") && !st.covers("kms:GenerateDataKey")
					for _, op := range []string{"StringEquals", "ArnLike"} {
						for k, v := range st.Condition[op] {
							if strings.HasPrefix(k, "kms:EncryptionContext:") && strings.Contains(fmt.Sprint(v), ":"+es.Env.Account+":") {
								scoped = true
							}
						}
					}
					if !scoped && !denied[svc] {
						t.Errorf("statement %q admits %s for %v without aws:SourceAccount and no Deny confines it", st.Sid, svc, st.actions())
					}
				}
			}
			if !denied["delivery.logs.amazonaws.com"] {
				t.Error("no Deny confines delivery.logs.amazonaws.com to this account")
			}
		})
	}
}
