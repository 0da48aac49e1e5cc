package test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/checks"
	"github.com/mercadofresco/integration/synthesized"
)

// refLocals resolves a Ref or Fn::GetAtt to "stack/logical id", so that
// references from any stack (Fn::ImportValue included) compare equal.
type refLocals struct{}

func (refLocals) Ref(r *synthesized.Resource) (string, error) {
	return r.Stack + "/" + r.LogicalID, nil
}
func (refLocals) GetAtt(r *synthesized.Resource, _ string) (string, error) {
	return r.Stack + "/" + r.LogicalID, nil
}

// Every function in a VPC whose role may read a secret reaches Secrets
// Manager: the VPC's Secrets Manager endpoint has private DNS, so every
// GetSecretValue of the VPC goes to it, and its security group must admit
// one of the function's groups on 443 (the payment tasks and the three
// HTTP consumers were not admitted, and would have timed out on their
// first read of an API key).
func TestEverySecretReaderInAVpcReachesSecretsManager(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			app := synthesized.New(es.Env.Name, es.Env.Account, es.Env.Region)
			for name, tpl := range s.templates {
				if strings.HasSuffix(name, "-"+es.Env.Name) {
					raw, _ := json.Marshal(tpl)
					if err := app.Add(name, raw); err != nil {
						t.Fatal(err)
					}
				}
			}
			resolve := func(stack string, v any) string {
				got, err := app.ResolveString(stack, v, refLocals{})
				if err != nil {
					t.Fatalf("%s: %v", stack, err)
				}
				return got
			}
			// The endpoint's group and the groups it admits on 443.
			var endpointGroup string
			for _, ep := range app.Resources("AWS::EC2::VPCEndpoint") {
				if svc, _ := json.Marshal(ep.Prop("ServiceName")); strings.Contains(string(svc), "secretsmanager") {
					if ep.Prop("PrivateDnsEnabled") != true {
						t.Fatalf("the Secrets Manager endpoint %s has no private DNS", ep.Path())
					}
					groups, _ := ep.Prop("SecurityGroupIds").([]any)
					if len(groups) != 1 {
						t.Fatalf("the Secrets Manager endpoint has %d security groups, want 1", len(groups))
					}
					endpointGroup = resolve(ep.Stack, groups[0])
				}
			}
			if endpointGroup == "" {
				t.Fatal("no Secrets Manager endpoint")
			}
			admitted := map[string]bool{}
			for _, in := range app.Resources("AWS::EC2::SecurityGroupIngress") {
				if in.Prop("FromPort") == float64(443) && resolve(in.Stack, in.Prop("GroupId")) == endpointGroup {
					admitted[resolve(in.Stack, in.Prop("SourceSecurityGroupId"))] = true
				}
			}
			// Roles that may read a secret.
			readers := map[string]bool{}
			for _, pol := range app.Resources("AWS::IAM::Policy") {
				doc, _ := json.Marshal(pol.Prop("PolicyDocument"))
				if !strings.Contains(string(doc), "secretsmanager:GetSecretValue") {
					continue
				}
				roles, _ := pol.Prop("Roles").([]any)
				for _, r := range roles {
					readers[resolve(pol.Stack, r)] = true
				}
			}
			checked := 0
			for _, fn := range app.Resources("AWS::Lambda::Function") {
				vpc, ok := fn.Prop("VpcConfig").(map[string]any)
				if !ok || !readers[resolve(fn.Stack, fn.Prop("Role"))] {
					continue
				}
				checked++
				groups, _ := vpc["SecurityGroupIds"].([]any)
				var mine []string
				for _, g := range groups {
					mine = append(mine, resolve(fn.Stack, g))
				}
				if !slices.ContainsFunc(mine, func(g string) bool { return admitted[g] }) {
					t.Errorf("%s reads a secret from the VPC, but the Secrets Manager endpoint admits none of its groups %v on 443", fn.Path(), mine)
				}
			}
			// The payment tasks, the three HTTP consumers and the schema
			// migration.
			if want := 6; checked < want {
				t.Errorf("checked %d secret readers in the VPC, want at least %d", checked, want)
			}
			t.Log(fmt.Sprintf("%d secret readers in the VPC, %d groups admitted", checked, len(admitted)))
		})
	}
}

// The MF-REACH rule passes on the app as synthesized
// (TestSynthesisReportsNoErrors): every call of every function in a VPC
// has a route, egress, endpoint ingress and private DNS, and it is checked
// (package checks has the table of broken networks it refuses).
func TestEveryFunctionReachesWhatItCalls(t *testing.T) {
	s := synthApp(t)
	asm, err := synthesized.Load(s.outdir)
	if err != nil {
		t.Fatal(err)
	}
	for _, es := range s.envs {
		inVPC := 0
		for _, r := range checks.Reach(asm.Env(es.Env.Name)) {
			if !r.OK() {
				t.Errorf("%s: %s", es.Env.Name, r.Finding())
			}
			if r.Via != "outside the VPC" {
				inVPC++
			}
		}
		// The payment tasks (3 calls each), three HTTP consumers (4-5), the
		// publisher and the migration.
		if inVPC < 20 {
			t.Errorf("%s: %d calls from the VPC checked, want at least 20", es.Env.Name, inVPC)
		}
	}
}
