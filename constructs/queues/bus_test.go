package queues_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/internal/guardeval"
	"github.com/mercadofresco/integration/synthesized"
)

// TestBusGuardAdmitsOnlyItsProducers: the bus's guard is one Deny of
// events:PutEvents for everyone but the roles admitted (one of them named
// with NameRole in another stack), in the bus's own Policy beside the
// statements added before it (queues.BusPolicy); another role of the
// account and a request without a principal are refused.
func TestBusGuardAdmitsOnlyItsProducers(t *testing.T) {
	platform := cdktest.NewStack("Plataforma")
	bus := awsevents.NewEventBus(platform, jsii.String("Bus"), &awsevents.EventBusProps{EventBusName: jsii.String("bus")})
	queues.BusPolicy(bus).AddStatements(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("Antes"), Actions: jsii.Strings("events:PutEvents"), Resources: jsii.Strings(*queues.BusArn(bus)),
		Principals: &[]awsiam.IPrincipal{awsiam.NewAccountRootPrincipal()},
	}))
	g := queues.ForBus(bus)
	if again := queues.ForBus(bus); again != g {
		t.Fatal("ForBus attached a second guard")
	}
	g.AdmitRoleName("publicador")
	other := cdktest.NewStack("Outbox")
	role := awsiam.NewRole(other, jsii.String("Rol"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	queues.NameRole(role, "publicador")
	if errs := append(cdktest.Errors(platform), cdktest.Errors(other)...); len(errs) > 0 {
		t.Fatalf("synthesis errors: %v", errs)
	}

	roles := assertions.Template_FromStack(other, nil).FindResources(jsii.String("AWS::IAM::Role"), nil)
	for _, r := range *roles {
		if name := (*r)["Properties"].(map[string]any)["RoleName"]; name != "publicador" {
			t.Fatalf("RoleName %v, want publicador", name)
		}
	}
	app := synthesized.New("test", account, cdktest.Region)
	raw, _ := json.Marshal(assertions.Template_FromStack(platform, nil).ToJSON())
	if err := app.Add("Plataforma", raw); err != nil {
		t.Fatal(err)
	}
	var guards []map[string]any
	var sids []any
	for _, bus := range app.Resources("AWS::Events::EventBus") {
		pol, err := app.Resolve("Plataforma", bus.Properties["Policy"], synthesized.Physical{App: app})
		if err != nil {
			t.Fatal(err)
		}
		statements, _ := pol.(map[string]any)["Statement"].([]any)
		for _, st := range statements {
			sids = append(sids, st.(map[string]any)["Sid"])
			if s := st.(map[string]any); s["Sid"] == queues.StatementSid {
				guards = append(guards, s)
			}
		}
	}
	if n := len(app.Resources("AWS::Events::EventBusPolicy")); n > 0 {
		t.Errorf("%d AWS::Events::EventBusPolicy resources: the bus's statements belong in its own Policy", n)
	}
	if fmt.Sprint(sids) != "[Antes "+queues.StatementSid+"]" {
		t.Errorf("the bus's policy has statements %v, want the one added before the guard, then the guard", sids)
	}
	if len(guards) != 1 {
		t.Fatalf("%d guard statements on the bus, want 1", len(guards))
	}
	if a, _ := json.Marshal(guards[0]["Action"]); string(a) != `"`+queues.ActionPutEvents+`"` {
		t.Errorf("the guard denies %s, want %s", a, queues.ActionPutEvents)
	}
	for req, wantRefused := range map[guardeval.Request]bool{
		{PrincipalArn: "arn:aws:iam::" + account + ":role/publicador"}: false,
		{PrincipalArn: "arn:aws:iam::" + account + ":role/intruso"}:    true,
		{PrincipalArn: "arn:aws:iam::" + account + ":root"}:            true,
		{}: true,
	} {
		refused, err := guardeval.Refuses(guards[0], req)
		if err != nil || refused != wantRefused {
			t.Errorf("%+v: refused %v (%v), want %v", req, refused, err, wantRefused)
		}
	}
}
