package checks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/synthesized"
)

const snapshots = "../test/testdata/snapshots"

// templates reads the committed templates of env as parsed JSON, so a case
// can break them.
func templates(t *testing.T, env string) map[string]map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(snapshots, "*-"+env+".template.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no committed templates of %s: %v", env, err)
	}
	out := map[string]map[string]any{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tpl map[string]any
		if err := json.Unmarshal(raw, &tpl); err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".template.json")] = tpl
	}
	return out
}

func load(t *testing.T, env string, tpls map[string]map[string]any) *synthesized.App {
	t.Helper()
	e, err := config.Lookup(env)
	if err != nil {
		t.Fatal(err)
	}
	app := synthesized.New(env, e.Account, e.Region)
	for name, tpl := range tpls {
		raw, _ := json.Marshal(tpl)
		if err := app.Add(name, raw); err != nil {
			t.Fatal(err)
		}
	}
	return app
}

// resources is the Resources map of the template whose stack name
// contains part.
func resources(t *testing.T, tpls map[string]map[string]any, part string) map[string]any {
	t.Helper()
	for name, tpl := range tpls {
		if strings.Contains(name, part) {
			return tpl["Resources"].(map[string]any)
		}
	}
	t.Fatalf("no stack %s", part)
	return nil
}

// deleteWhere removes the resources of type typ whose logical id has every
// one of parts.
func deleteWhere(t *testing.T, res map[string]any, typ string, parts ...string) {
	t.Helper()
	n := 0
	for id, r := range res {
		if r.(map[string]any)["Type"] != typ {
			continue
		}
		all := true
		for _, p := range parts {
			all = all && strings.Contains(id, p)
		}
		if all {
			delete(res, id)
			n++
		}
	}
	if n == 0 {
		t.Fatalf("no %s with %v to remove", typ, parts)
	}
}

// props is the Properties of the resource of type typ whose logical id
// starts with idPrefix.
func props(t *testing.T, res map[string]any, typ, idPrefix string) map[string]any {
	t.Helper()
	for id, r := range res {
		if strings.HasPrefix(id, idPrefix) && r.(map[string]any)["Type"] == typ {
			return r.(map[string]any)["Properties"].(map[string]any)
		}
	}
	t.Fatalf("no resource %s", idPrefix)
	return nil
}

// The real app passes in every environment: every call has a path, every
// egress rule serves a call and none allows every protocol to everywhere;
// every function in the VPC has at least one call checked, and the hosted
// secret rotation reaches Secrets Manager and the database.
func TestTheCommittedTemplatesReachEverything(t *testing.T) {
	for _, env := range []string{"dev", "staging", "prod"} {
		results, excess := reach(load(t, env, templates(t, env)))
		if f := unreachable(results); len(f) > 0 {
			t.Errorf("%s:\n%s", env, strings.Join(f, "\n"))
		}
		for _, x := range excess {
			t.Errorf("%s: %s: %s", env, x.owner.Path(), x.message)
		}
		rotation := map[string]bool{}
		for _, r := range results {
			if strings.Contains(r.Function, "RotationSingleUser") && r.Target == "secretsmanager" ||
				strings.Contains(r.Function, "AuroraRotationSecurityGroup") && strings.Contains(r.Target, "tcp 5432 to security group AuroraClusterSecurityGroup") {
				rotation[r.Target] = true
			}
		}
		if len(rotation) != 2 {
			t.Errorf("%s: the rotation's calls checked: %v, want Secrets Manager and the cluster", env, rotation)
		}
		inVPC := 0
		for _, r := range results {
			if r.Via != "outside the VPC" {
				inVPC++
			}
			// The breaker functions' elasticache:Connect is the Valkey
			// cache's IAM token, signed in the function: not a call.
			if r.Target == "elasticache" {
				t.Errorf("%s: %s counted as calling ElastiCache's API", env, r.Function)
			}
		}
		if inVPC < 20 {
			t.Errorf("%s: %d calls from the VPC checked, want at least 20 (payment, consumers, outbox)", env, inVPC)
		}
	}
}

// Each broken network is refused with the function, the service and the
// missing hop named.
func TestBrokenNetworksAreRefusedNamingTheHop(t *testing.T) {
	cases := []struct {
		name             string
		brk              func(t *testing.T, tpls map[string]map[string]any)
		function, target string
		hop              string
	}{
		{
			name: "missing endpoint ingress",
			brk: func(t *testing.T, tpls map[string]map[string]any) {
				deleteWhere(t, resources(t, tpls, "Messaging"), "AWS::EC2::SecurityGroupIngress", "Preparacion", "SecretsManager")
			},
			function: "mf-preparar-pedido", target: "secretsmanager", hop: HopIngress,
		},
		{
			name: "missing NAT route",
			brk: func(t *testing.T, tpls map[string]map[string]any) {
				deleteWhere(t, resources(t, tpls, "Network"), "AWS::EC2::Route", "salidaSubnet2", "DefaultRoute")
			},
			function: "mf-cobro", target: "https://api.pasarela.mercadofresco.example:443", hop: HopRoute,
		},
		{
			name: "NAT gateway without an internet route",
			brk: func(t *testing.T, tpls map[string]map[string]any) {
				deleteWhere(t, resources(t, tpls, "Network"), "AWS::EC2::Route", "publicaSubnet1", "DefaultRoute")
			},
			function: "mf-correo-confirmacion", target: "ses", hop: HopInternet,
		},
		{
			name: "removed egress rule",
			brk: func(t *testing.T, tpls map[string]map[string]any) {
				p := props(t, resources(t, tpls, "OrderFlow"), "AWS::EC2::SecurityGroup", "PagoSecurityGroup")
				// What the CDK writes for a group without egress rules.
				p["SecurityGroupEgress"] = []any{synthesized.NoEgress}
			},
			function: "mf-reembolso", target: "https://api.pasarela.mercadofresco.example:443", hop: HopEgress,
		},
		{
			name: "removed egress rule to the endpoint",
			brk: func(t *testing.T, tpls map[string]map[string]any) {
				p := props(t, resources(t, tpls, "Outbox"), "AWS::EC2::SecurityGroup", "PublicadorSecurityGroup")
				p["SecurityGroupEgress"] = []any{synthesized.NoEgress}
				deleteWhere(t, resources(t, tpls, "Outbox"), "AWS::EC2::SecurityGroupEgress", "Publicador", "EventBridge")
			},
			function: "mf-outbox-publicador", target: "events", hop: HopEgress,
		},
		{
			// The group as synthesised lists no egress itself; its other
			// standalone rule (Secrets Manager) may have revoked EC2's
			// default allow-all, so it is not counted.
			name: "removed standalone egress rule beside another",
			brk: func(t *testing.T, tpls map[string]map[string]any) {
				deleteWhere(t, resources(t, tpls, "Outbox"), "AWS::EC2::SecurityGroupEgress", "Publicador", "EventBridge")
			},
			function: "mf-outbox-publicador", target: "events", hop: HopEgress,
		},
		{
			name: "rotation without egress to the endpoint",
			brk: func(t *testing.T, tpls map[string]map[string]any) {
				deleteWhere(t, resources(t, tpls, "Outbox"), "AWS::EC2::SecurityGroupEgress", "AuroraRotationSecurityGroup", "SecretsManager")
			},
			function: "MercadoFrescoOutboxprodAuroraClusterRotationSingleUser369D1EED", target: "secretsmanager", hop: HopEgress,
		},
		{
			name: "rotation without egress to the cluster",
			brk: func(t *testing.T, tpls map[string]map[string]any) {
				deleteWhere(t, resources(t, tpls, "Outbox"), "AWS::EC2::SecurityGroupEgress", "AuroraRotationSecurityGroup", "AuroraClusterSecurityGroup")
			},
			function: "security group AuroraRotationSecurityGroupDC755A07", target: "tcp 5432 to security group AuroraClusterSecurityGroupABF2E96E", hop: HopEgress,
		},
		{
			name: "private DNS off",
			brk: func(t *testing.T, tpls map[string]map[string]any) {
				props(t, resources(t, tpls, "Network"), "AWS::EC2::VPCEndpoint", "RedVpcEventBridge")["PrivateDnsEnabled"] = false
			},
			function: "mf-outbox-publicador", target: "events", hop: HopPrivateDNS,
		},
		{
			name: "VPC DNS hostnames off",
			brk: func(t *testing.T, tpls map[string]map[string]any) {
				props(t, resources(t, tpls, "Network"), "AWS::EC2::VPC", "RedVpc")["EnableDnsHostnames"] = false
			},
			function: "mf-outbox-migraciones", target: "secretsmanager", hop: HopPrivateDNS,
		},
		{
			name: "gateway endpoint egress",
			brk: func(t *testing.T, tpls map[string]map[string]any) {
				// Only the endpoint group on 443: DynamoDB's prefix list is not admitted.
				p := props(t, resources(t, tpls, "OrderFlow"), "AWS::EC2::SecurityGroup", "PagoSecurityGroup")
				p["SecurityGroupEgress"] = []any{map[string]any{"CidrIp": "10.40.0.0/16", "FromPort": 443.0, "IpProtocol": "tcp", "ToPort": 443.0}}
			},
			function: "mf-cobro", target: "dynamodb", hop: HopEgress,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tpls := templates(t, "prod")
			c.brk(t, tpls)
			var found bool
			for _, r := range Reach(load(t, "prod", tpls)) {
				if r.Function != c.function || r.Target != c.target {
					continue
				}
				found = true
				if r.Missing != c.hop {
					t.Fatalf("%s -> %s: missing %q (%s), want %q", r.Function, r.Target, r.Missing, r.Detail, c.hop)
				}
				msg := r.Finding().String()
				for _, want := range []string{RuleReach, c.function, c.target, c.hop} {
					if !strings.Contains(msg, want) {
						t.Errorf("finding %q does not name %q", msg, want)
					}
				}
				t.Log(msg)
			}
			if !found {
				t.Fatalf("no call %s -> %s checked", c.function, c.target)
			}
		})
	}
}

// An egress rule no call uses, or one open to every protocol and address,
// is refused, naming the group and the rule; the CDK's placeholder of a
// group without egress is neither.
func TestExcessEgressIsRefused(t *testing.T) {
	allowAll := []any{map[string]any{"CidrIp": "0.0.0.0/0", "Description": "Allow all outbound traffic by default", "IpProtocol": "-1"}}
	cases := []struct {
		name        string
		brk         func(t *testing.T, tpls map[string]map[string]any)
		owner, want string
	}{
		{
			name: "endpoint group allowing all",
			brk: func(t *testing.T, tpls map[string]map[string]any) {
				props(t, resources(t, tpls, "Network"), "AWS::EC2::SecurityGroup", "RedVpcEventBridgeSecurityGroup")["SecurityGroupEgress"] = allowAll
			},
			owner: "RedVpcEventBridgeSecurityGroup", want: "allows every protocol to everywhere",
		},
		{
			name: "group listing no egress (EC2's default)",
			brk: func(t *testing.T, tpls map[string]map[string]any) {
				delete(props(t, resources(t, tpls, "Outbox"), "AWS::EC2::SecurityGroup", "AuroraClusterSecurityGroup"), "SecurityGroupEgress")
			},
			owner: "AuroraClusterSecurityGroup", want: "allows every protocol to everywhere",
		},
		{
			name: "HTTPS anywhere on a group whose calls all use endpoints",
			brk: func(t *testing.T, tpls map[string]map[string]any) {
				props(t, resources(t, tpls, "Outbox"), "AWS::EC2::SecurityGroup", "PublicadorSecurityGroup")["SecurityGroupEgress"] = []any{
					map[string]any{"CidrIp": "0.0.0.0/0", "Description": "HTTPS anywhere", "FromPort": 443.0, "IpProtocol": "tcp", "ToPort": 443.0}}
			},
			owner: "PublicadorSecurityGroup", want: `egress "HTTPS anywhere" (tcp 443-443 to 0.0.0.0/0) serves no call`,
		},
		{
			name: "egress to a peer that does not admit the group",
			brk: func(t *testing.T, tpls map[string]map[string]any) {
				deleteWhere(t, resources(t, tpls, "OrderFlow"), "AWS::EC2::SecurityGroupIngress", "Pago", "Catalogo")
			},
			owner: "Pago/SecurityGroup/to MercadoFrescoNetworkprodCatalogo", want: "tcp 6379-6379 to security group CatalogoSecurityGroup",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tpls := templates(t, "prod")
			c.brk(t, tpls)
			var got []string
			for _, f := range Check(load(t, "prod", tpls)) {
				if f.Rule == RuleReach {
					got = append(got, f.String())
				}
			}
			if len(got) != 1 || !strings.Contains(got[0], c.owner) || !strings.Contains(got[0], c.want) {
				t.Fatalf("want one MF-REACH finding on %s with %q, got %d:\n%s", c.owner, c.want, len(got), strings.Join(got, "\n"))
			}
			t.Log(got[0])
		})
	}
}

func unreachable(calls []Call) []string {
	var out []string
	for _, c := range calls {
		if !c.OK() {
			out = append(out, c.Finding().String())
		}
	}
	return out
}
