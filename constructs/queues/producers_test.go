package queues_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/internal/guardeval"
	"github.com/mercadofresco/integration/synthesized"
)

const account = cdktest.Account

// guardOf returns the resolved guard statement of the queue or topic
// policy of resource logical id, and how many guards it has.
func guardOf(t *testing.T, stacks map[string]awscdk.Stack, stack, resource string) map[string]any {
	t.Helper()
	app := synthesized.New("test", account, cdktest.Region)
	for name, st := range stacks {
		raw, _ := json.Marshal(assertions.Template_FromStack(st, nil).ToJSON())
		if err := app.Add(name, raw); err != nil {
			t.Fatal(err)
		}
	}
	phys := synthesized.Physical{App: app}
	var found []map[string]any
	for typ, prop := range map[string]string{"AWS::SQS::QueuePolicy": "Queues", "AWS::SNS::TopicPolicy": "Topics"} {
		for _, pol := range app.Resources(typ) {
			if pol.Stack != stack {
				continue
			}
			targets, _ := json.Marshal(pol.Properties[prop])
			if !strings.Contains(string(targets), `{"Ref":"`+resource+`"}`) {
				continue
			}
			doc, err := app.Resolve(stack, pol.Properties["PolicyDocument"], phys)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range doc.(map[string]any)["Statement"].([]any) {
				if s := st.(map[string]any); s["Sid"] == queues.StatementSid {
					found = append(found, s)
				}
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d guard statements on %s/%s, want 1", len(found), stack, resource)
	}
	return found[0]
}

func cfnLogicalID(c awscdk.CfnElement) string { return *awscdk.Stack_Of(c).GetLogicalId(c) }

// TestGuardRefusesEveryoneButTheAdmitted: a queue's and a topic's guard
// let through the roles and sources admitted, by name or reference, and
// refuse another role, another source and a request with neither key.
func TestGuardRefusesEveryoneButTheAdmitted(t *testing.T) {
	stack := cdktest.NewStack("Guard")
	queue := awssqs.NewQueue(stack, jsii.String("Cola"), &awssqs.QueueProps{QueueName: jsii.String("cola")})
	topic := awssns.NewTopic(stack, jsii.String("Tema"), &awssns.TopicProps{TopicName: jsii.String("tema")})
	role := awsiam.NewRole(stack, jsii.String("Rol"), &awsiam.RoleProps{RoleName: jsii.String("consumidor"), AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	rule := awsevents.NewRule(stack, jsii.String("Regla"), &awsevents.RuleProps{RuleName: jsii.String("regla"), EventPattern: &awsevents.EventPattern{Source: jsii.Strings("x")}})

	q := queues.ForQueue(queue)
	if again := queues.ForQueue(queue); again != q {
		t.Fatal("ForQueue attached a second guard")
	}
	q.AdmitRole(role)
	q.AdmitRole(role) // admitted once
	q.AdmitRoleName("identidad/otro")
	q.AdmitRoleArn("arn:aws:iam::" + account + ":role/mercadofresco-guardia")
	q.AdmitTopic(topic)
	q.AdmitRule(rule)
	tg := queues.ForTopic(topic)
	tg.AdmitAlarms()
	tg.AdmitGrantable(role)
	if errs := cdktest.Errors(stack); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	stacks := map[string]awscdk.Stack{"Guard": stack}
	qs := guardOf(t, stacks, "Guard", cfnLogicalID(queue.Node().DefaultChild().(awscdk.CfnElement)))
	ts := guardOf(t, stacks, "Guard", cfnLogicalID(topic.Node().DefaultChild().(awscdk.CfnElement)))
	if qs["Action"] != queues.ActionSend || ts["Action"] != queues.ActionPublish {
		t.Errorf("actions %v, %v", qs["Action"], ts["Action"])
	}
	if p, _ := json.Marshal(qs["Principal"]); string(p) != `{"AWS":"*"}` {
		t.Errorf("principal %s", p)
	}
	if roles := qs["Condition"].(map[string]any)[queues.Operator].(map[string]any)[queues.KeyPrincipalArn].([]any); len(roles) != 3 {
		t.Errorf("admitted roles %v, want 3 (one admitted twice)", roles)
	}
	arn := func(s string) string { return "arn:aws:" + s }
	for _, tc := range []struct {
		name      string
		statement map[string]any
		req       guardeval.Request
		refused   bool
	}{
		{"the consumer's role", qs, guardeval.Request{PrincipalArn: "arn:aws:iam::" + account + ":role/consumidor"}, false},
		{"a role by name and path", qs, guardeval.Request{PrincipalArn: "arn:aws:iam::" + account + ":role/identidad/otro"}, false},
		{"the on-call role", qs, guardeval.Request{PrincipalArn: "arn:aws:iam::" + account + ":role/mercadofresco-guardia"}, false},
		{"SNS for the topic", qs, guardeval.Request{SourceArn: arn("sns:eu-west-1:" + account + ":tema")}, false},
		{"EventBridge for the rule", qs, guardeval.Request{SourceArn: arn("events:eu-west-1:" + account + ":rule/regla")}, false},
		{"another role", qs, guardeval.Request{PrincipalArn: "arn:aws:iam::" + account + ":role/intruso"}, true},
		{"a role of another account with the same name", qs, guardeval.Request{PrincipalArn: "arn:aws:iam::222222222222:role/consumidor"}, true},
		{"SNS for another topic", qs, guardeval.Request{SourceArn: arn("sns:eu-west-1:" + account + ":intruso")}, true},
		{"neither key", qs, guardeval.Request{}, true},
		{"an alarm", ts, guardeval.Request{SourceArn: arn("cloudwatch:eu-west-1:" + account + ":alarm:Cualquiera")}, false},
		{"an alarm of another region", ts, guardeval.Request{SourceArn: arn("cloudwatch:us-east-1:" + account + ":alarm:Cualquiera")}, true},
		{"the role on the topic", ts, guardeval.Request{PrincipalArn: "arn:aws:iam::" + account + ":role/consumidor"}, false},
		{"a rule on the topic", ts, guardeval.Request{SourceArn: arn("events:eu-west-1:" + account + ":rule/regla")}, true},
	} {
		got, err := guardeval.Refuses(tc.statement, tc.req)
		if err != nil || got != tc.refused {
			t.Errorf("%s: refused = %v, %v; want %v", tc.name, got, err, tc.refused)
		}
	}
}

// TestGuardAdmittingNothingRefusesEveryone: a queue nobody may send to
// refuses roles, services and requests with neither key.
func TestGuardAdmittingNothingRefusesEveryone(t *testing.T) {
	stack := cdktest.NewStack("Nadie")
	queue := awssqs.NewQueue(stack, jsii.String("Cola"), nil)
	queues.ForQueue(queue)
	st := guardOf(t, map[string]awscdk.Stack{"Nadie": stack}, "Nadie", cfnLogicalID(queue.Node().DefaultChild().(awscdk.CfnElement)))
	for _, req := range []guardeval.Request{
		{PrincipalArn: "arn:aws:iam::" + account + ":role/cualquiera"},
		{SourceArn: "arn:aws:sns:eu-west-1:" + account + ":tema"},
		{},
	} {
		if got, err := guardeval.Refuses(st, req); err != nil || !got {
			t.Errorf("%+v: refused = %v, %v", req, got, err)
		}
	}
}

// TestRoleOfAnotherStackIsAdmittedByName: admitting by name writes the
// ARN in the guard's own stack, so the two stacks do not reference each
// other (the producer's stack already references the queue's).
func TestRoleOfAnotherStackIsAdmittedByName(t *testing.T) {
	app := awscdk.NewApp(nil)
	messaging := cdktest.NewStackIn(app, "Messaging")
	flow := cdktest.NewStackIn(app, "Flow")
	queue := awssqs.NewQueue(messaging, jsii.String("Cola"), &awssqs.QueueProps{QueueName: jsii.String("cola")})
	role := awsiam.NewRole(flow, jsii.String("Rol"), &awsiam.RoleProps{RoleName: jsii.String("flujo"), AssumedBy: awsiam.NewServicePrincipal(jsii.String("states.amazonaws.com"), nil)})
	queue.GrantSendMessages(role)
	queues.ForQueue(queue).AdmitRoleName("flujo")
	raw, _ := json.Marshal(assertions.Template_FromStack(messaging, nil).ToJSON())
	if strings.Contains(string(raw), "Fn::ImportValue") {
		t.Fatalf("the queue's stack imports from the role's: %s", raw)
	}
	st := guardOf(t, map[string]awscdk.Stack{"Messaging": messaging, "Flow": flow}, "Messaging", cfnLogicalID(queue.Node().DefaultChild().(awscdk.CfnElement)))
	if got, err := guardeval.Refuses(st, guardeval.Request{PrincipalArn: "arn:aws:iam::" + account + ":role/flujo"}); err != nil || got {
		t.Errorf("the role admitted by name is refused: %v, %v", got, err)
	}
}

// TestImportedResourcesHaveNoGuard: the policy of a queue or topic the
// app does not define is not the app's to write; a nil guard does nothing.
func TestImportedResourcesHaveNoGuard(t *testing.T) {
	stack := cdktest.NewStack("Importados")
	awssqs.NewQueue(stack, jsii.String("Propia"), nil) // a stack must hold a resource
	q := awssqs.Queue_FromQueueArn(stack, jsii.String("Cola"), jsii.String("arn:aws:sqs:eu-west-1:"+account+":ajena"))
	tp := awssns.Topic_FromTopicArn(stack, jsii.String("Tema"), jsii.String("arn:aws:sns:eu-west-1:"+account+":ajeno"))
	g, tg := queues.ForQueue(q), queues.ForTopic(tp)
	if g != nil || tg != nil {
		t.Fatal("a guard on an imported resource")
	}
	g.AdmitRoleName("x")
	g.AdmitSource(jsii.String("arn:aws:sns:eu-west-1:" + account + ":t"))
	tg.AdmitAlarms()
	if errs := cdktest.Errors(stack); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
}

func TestAdmissionErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		admit func(g *queues.Guard)
		want  string
	}{
		{"role ARN that is not one", func(g *queues.Guard) { g.AdmitRoleArn("arn:aws:sns:eu-west-1:1:t") }, "not the ARN of a role"},
		{"empty role name", func(g *queues.Guard) { g.AdmitRoleName("") }, "not a role name"},
		{"nil role", func(g *queues.Guard) { g.AdmitRole(nil) }, "the role is nil"},
		{"nil source", func(g *queues.Guard) { g.AdmitSource(nil) }, "source ARN is empty"},
		{"nil rule", func(g *queues.Guard) { g.AdmitRule(nil) }, "the rule is nil"},
		{"grantee that is no role", func(g *queues.Guard) { g.AdmitGrantable(awsiam.NewAccountRootPrincipal()) }, "not a role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stack := cdktest.NewStack("Errores")
			tc.admit(queues.ForQueue(awssqs.NewQueue(stack, jsii.String("Cola"), nil)))
			cdktest.RequireContains(t, cdktest.Errors(stack), tc.want)
		})
	}
}

func TestArnLike(t *testing.T) {
	for _, tc := range []struct {
		pattern, arn string
		want         bool
	}{
		{"arn:aws:cloudwatch:eu-west-1:1:alarm:*", "arn:aws:cloudwatch:eu-west-1:1:alarm:Cola:Edad", true},
		{"arn:aws:cloudwatch:eu-west-1:1:alarm:*", "arn:aws:cloudwatch:eu-west-2:1:alarm:x", false},
		{"arn:aws:iam::1:role/a", "arn:aws:iam::1:role/a", true},
		{"arn:aws:iam::1:role/a", "arn:aws:iam::1:role/ab", false},
		{"arn:aws:iam::1:role/a?", "arn:aws:iam::1:role/ab", true},
		{"arn:aws:iam::*:role/a", "arn:aws:iam::2:role/a", true},
		{"arn:aws:iam::1:role/*", "arn:aws:sts::1:assumed-role/a/s", false},
		{"not an arn", "not an arn", false},
	} {
		if got := guardeval.ArnLike(tc.pattern, tc.arn); got != tc.want {
			t.Errorf("ArnLike(%q, %q) = %v", tc.pattern, tc.arn, got)
		}
	}
	if _, err := guardeval.Refuses(map[string]any{"Effect": "Deny", "Condition": map[string]any{"StringNotEquals": map[string]any{}}}, guardeval.Request{}); !errors.Is(err, guardeval.ErrNotAGuard) {
		t.Errorf("another operator: %v", err)
	}
}

// RequireElevation adds, to every guard that admits the role, a Deny of the
// guard's action for the role's sessions with neither MFA nor the redrive
// session tag; a guard that does not admit it gets none, a second call adds
// nothing, and a role that is no role's ARN is reported.
func TestRequireElevationDeniesTheRoleWithoutMFAOrTag(t *testing.T) {
	const guardia = "arn:aws:iam::" + account + ":role/identidad/guardia"
	stack := cdktest.NewStack("Elevation")
	admits := awssqs.NewQueue(stack, jsii.String("Admite"), nil)
	other := awssqs.NewQueue(stack, jsii.String("NoAdmite"), nil)
	queues.ForQueue(admits).AdmitRoleArn(guardia)
	queues.ForQueue(other).AdmitRoleArn("arn:aws:iam::" + account + ":role/otro")
	if n := queues.RequireElevation(stack, guardia); n != 1 {
		t.Fatalf("RequireElevation covered %d guards, want 1", n)
	}
	if n := queues.RequireElevation(stack, guardia); n != 0 {
		t.Fatalf("a second RequireElevation covered %d guards, want 0", n)
	}
	if errs := cdktest.Errors(stack); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	tpl := assertions.Template_FromStack(stack, nil)
	elevation := assertions.Match_ObjectLike(&map[string]any{"Sid": queues.SidElevatedSession})
	tpl.HasResourceProperties(jsii.String("AWS::SQS::QueuePolicy"), map[string]any{
		"Queues": []any{map[string]any{"Ref": cfnLogicalID(admits.Node().DefaultChild().(awscdk.CfnElement))}},
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
			"Sid": queues.SidElevatedSession, "Effect": "Deny", "Principal": map[string]any{"AWS": "*"}, "Action": queues.ActionSend,
			"Resource": map[string]any{"Fn::GetAtt": []any{cfnLogicalID(admits.Node().DefaultChild().(awscdk.CfnElement)), "Arn"}},
			"Condition": map[string]any{
				"ArnLike":      map[string]any{queues.KeyPrincipalArn: guardia},
				"BoolIfExists": map[string]any{queues.KeyMFA: "false"},
				"Null":         map[string]any{"aws:PrincipalTag/" + queues.SessionTag: "true"},
			},
		}})},
	})
	tpl.HasResourceProperties(jsii.String("AWS::SQS::QueuePolicy"), map[string]any{
		"Queues":         []any{map[string]any{"Ref": cfnLogicalID(other.Node().DefaultChild().(awscdk.CfnElement))}},
		"PolicyDocument": map[string]any{"Statement": assertions.Match_Not(assertions.Match_ArrayWith(&[]any{elevation}))},
	})

	bad := cdktest.NewStack("Elevation")
	queues.RequireElevation(bad, "guardia")
	cdktest.RequireContains(t, cdktest.Errors(bad), `RequireElevation: "guardia" is not the ARN of a role`)
}
