package datastore_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/datastore"
	"github.com/mercadofresco/integration/constructs/network"
	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// fn is a function in vpc, named name[0] if given.
func fn(stack awscdk.Stack, id string, vpc awsec2.IVpc, name ...string) awslambda.Function {
	var physical *string
	if len(name) > 0 {
		physical = jsii.String(name[0])
	}
	return awslambda.NewFunction(stack, jsii.String(id), &awslambda.FunctionProps{
		FunctionName: physical,
		Runtime:      awslambda.Runtime_NODEJS_22_X(), Handler: jsii.String("index.handler"),
		Code: awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({})")),
		Vpc:  vpc,
	})
}

// created is the cache mercadofresco-catalogo-dev in stack id of a new
// platform app named app, in its own network.
func created(app, id string) (*cdktest.Platform, awscdk.Stack, *network.Network, *datastore.Cache) {
	p := cdktest.NewPlatform(app)
	stack := cdktest.NewStackIn(p.App, id)
	net := network.New(stack, "Red", &network.Props{MaxAzs: 2, NatGateways: 1})
	c := datastore.NewCache(stack, "Catalogo", &datastore.CacheProps{
		CacheName: jsii.String("mercadofresco-catalogo-dev"), Vpc: net.Vpc, Subnets: net.DataSubnets(),
		Context: core.Context{DataKey: p.Key, Alerts: p.Alerts},
	})
	return p, stack, net, c
}

func TestCreatedCacheIsEncryptedPrivateAndBindsFunctions(t *testing.T) {
	_, stack, net, c := created("Plataforma", "Cache")
	c.Bind(fn(stack, "Cobro", net.Vpc), "pasarela")
	c.Bind(fn(stack, "SinVpc", nil), "pasarela")
	cdktest.RequireContains(t, cdktest.Errors(stack), "SinVpc is not in the VPC")
	tpl := assertions.Template_FromStack(stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::ElastiCache::ServerlessCache"), map[string]any{
		"Engine": "valkey", "ServerlessCacheName": "mercadofresco-catalogo-dev",
		"KmsKeyId":         assertions.Match_AnyValue(),
		"SecurityGroupIds": assertions.Match_AnyValue(),
		"SubnetIds":        assertions.Match_AnyValue(),
		"CacheUsageLimits": map[string]any{"DataStorage": map[string]any{"Maximum": 1, "Unit": "GB"}, "ECPUPerSecond": map[string]any{"Maximum": 5000}},
	})
	// Only the bound function reaches the cache, on 6379.
	ingress := tpl.FindResources(jsii.String("AWS::EC2::SecurityGroupIngress"), nil)
	n := 0
	for _, r := range *ingress {
		b, _ := json.Marshal(r)
		if strings.Contains(string(b), "CatalogoSecurityGroup") {
			n++
			if !strings.Contains(string(b), `"FromPort":6379`) || !strings.Contains(string(b), "CobroSecurityGroup") {
				t.Errorf("unexpected cache ingress: %s", b)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d ingress rules on the cache's security group, want 1 (the bound function)", n)
	}
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Environment": map[string]any{"Variables": map[string]any{
			lambdaapi.EnvBreakerRedisAddr: assertions.Match_AnyValue(),
			lambdaapi.EnvBreakerRedisTLS:  "true",
		}},
	})
	// Serverless caches publish under "clusterId".
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName": "ThrottledCmds",
		"Dimensions": []any{map[string]any{"Name": "clusterId", "Value": "mercadofresco-catalogo-dev"}},
	})
}

func TestImportedCacheCreatesNothing(t *testing.T) {
	stack := cdktest.NewStack("Importada")
	c := datastore.NewCache(stack, "Catalogo", &datastore.CacheProps{Import: &config.CacheImport{Name: "mercadofresco-catalogo", Endpoint: "mercadofresco-catalogo.serverless.euw1.cache.amazonaws.com", SecurityGroupID: "sg-0123456789abcdef0"}})
	if errs := cdktest.Errors(stack); len(errs) > 0 {
		t.Fatal(errs)
	}
	if c.Resource != nil || c.SecurityGroup == nil {
		t.Fatal("an imported cache must not be created")
	}
	tpl := assertions.Template_FromStack(stack, nil)
	tpl.ResourceCountIs(jsii.String("AWS::ElastiCache::ServerlessCache"), jsii.Number(0))
	// The user group the imported cache attaches, named after it.
	tpl.HasResourceProperties(jsii.String("AWS::ElastiCache::UserGroup"), map[string]any{"UserGroupId": "mercadofresco-catalogo"})
	got, _ := json.Marshal(stack.Resolve(c.Address()))
	if !strings.Contains(string(got), "mercadofresco-catalogo.serverless.euw1.cache.amazonaws.com") || !strings.Contains(string(got), "6379") {
		t.Fatalf("address %s", got)
	}
}

func TestMissingPropsAreErrors(t *testing.T) {
	stack := cdktest.NewStack("Rota")
	datastore.NewCache(stack, "Catalogo", nil)
	errs := cdktest.Errors(stack)
	for _, want := range []string{"Vpc is required", "DataKey is required", "Alerts is required"} {
		cdktest.RequireContains(t, errs, want)
	}
}

func TestImportNeedsItsName(t *testing.T) {
	stack := cdktest.NewStack("ImportadaSinNombre")
	datastore.NewCache(stack, "Catalogo", &datastore.CacheProps{Import: &config.CacheImport{Endpoint: "x.cache.amazonaws.com", SecurityGroupID: "sg-0123456789abcdef0"}})
	cdktest.RequireContains(t, cdktest.Errors(stack), "Import needs Name")
}

// props returns the Properties of the resources of typ in tpl, by logical id.
func props(t *testing.T, tpl assertions.Template, typ string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for id, r := range *tpl.FindResources(jsii.String(typ), nil) {
		p, _ := (*r)["Properties"].(map[string]any)
		out[id] = p
	}
	return out
}

// TestEveryBoundFunctionIsItsOwnUserOnItsBreakersKeys: each bound function
// (in its own stack, as in the app) gets an IAM user, id = name = its
// function name, whose access string is lambdaapi.BreakerAccessString of its
// breakers only; the user group holds them and the disabled default user
// and is the cache's; each role may connect as its own user only.
func TestEveryBoundFunctionIsItsOwnUserOnItsBreakersKeys(t *testing.T) {
	p, netStack, net, c := created("PlataformaUsuarios", "Red")
	named := func(stack awscdk.Stack, id, name string) awslambda.Function { return fn(stack, id, net.Vpc, name) }
	pagos, mensajeria := cdktest.NewStackIn(p.App, "Pagos"), cdktest.NewStackIn(p.App, "Mensajeria")
	fns := map[string]awslambda.Function{
		"mf-cobro-dev":               named(pagos, "Cobro", "mf-cobro-dev"),
		"mf-preparar-pedido-dev":     named(mensajeria, "Preparacion", "mf-preparar-pedido-dev"),
		"mf-correo-confirmacion-dev": named(mensajeria, "Correo", "mf-correo-confirmacion-dev"),
	}
	deps := map[string][]string{
		"mf-cobro-dev":               {"pasarela"},
		"mf-preparar-pedido-dev":     {"almacen"},
		"mf-correo-confirmacion-dev": {"correo-secundario", "ses"},
	}
	c.Bind(fns["mf-cobro-dev"], "pasarela")
	c.Bind(fns["mf-preparar-pedido-dev"], "almacen")
	c.Bind(fns["mf-correo-confirmacion-dev"], "correo-secundario")
	c.Bind(fns["mf-correo-confirmacion-dev"], "ses", "correo-secundario") // a second breaker, one user
	for _, s := range []awscdk.Stack{netStack, pagos, mensajeria} {
		if errs := cdktest.Errors(s); len(errs) > 0 {
			t.Fatal(errs)
		}
	}

	tpl := assertions.Template_FromStack(netStack, nil)
	users := props(t, tpl, "AWS::ElastiCache::User")
	if len(users) != 4 {
		t.Fatalf("%d users, want the default and one per bound function (3)", len(users))
	}
	var memberIDs []string
	for id, u := range users {
		memberIDs = append(memberIDs, id)
		if u["Engine"] != datastore.UserEngine {
			t.Errorf("%s: engine %v", id, u["Engine"])
		}
		if u["UserName"] == "default" {
			if u["UserId"] != c.DefaultUserID() || u["AccessString"] != lambdaapi.CacheNoAccess ||
				fmt.Sprint(u["AuthenticationMode"]) != "map[Type:no-password-required]" {
				t.Errorf("default user %v: want %s, disabled, no access", u, c.DefaultUserID())
			}
			continue
		}
		name, _ := u["UserId"].(string)
		want, err := lambdaapi.BreakerAccessString(lambdaapi.BreakerKeyPrefix, deps[name]...)
		if err != nil || deps[name] == nil {
			t.Fatalf("user %s: no bound function of that name (%v)", name, err)
		}
		if u["UserName"] != name || fmt.Sprint(u["AuthenticationMode"]) != "map[Type:iam]" {
			t.Errorf("user %s: name %v, mode %v: IAM users have name = id", name, u["UserName"], u["AuthenticationMode"])
		}
		if u["AccessString"] != want || strings.Contains(want, "~*") || strings.Contains(want, "+@") {
			t.Errorf("user %s: access %q, want %q (its breakers' keys only, no categories)", name, u["AccessString"], want)
		}
	}
	groups := props(t, tpl, "AWS::ElastiCache::UserGroup")
	if len(groups) != 1 {
		t.Fatalf("%d user groups", len(groups))
	}
	var groupID string
	for id, g := range groups {
		groupID = id
		b, _ := json.Marshal(g["UserIds"])
		for _, m := range memberIDs {
			if !strings.Contains(string(b), `"Ref":"`+m+`"`) {
				t.Errorf("user group %s lacks user %s: %s", id, m, b)
			}
		}
		if g["UserGroupId"] != "mercadofresco-catalogo-dev" || g["Engine"] != datastore.UserEngine {
			t.Errorf("user group %v", g)
		}
	}
	tpl.HasResourceProperties(jsii.String("AWS::ElastiCache::ServerlessCache"), map[string]any{
		"UserGroupId": map[string]any{"Ref": groupID},
	})

	// Each role: elasticache:Connect on the cache and its own user, nothing
	// else, and no other role names its user.
	granted := 0
	for _, s := range []awscdk.Stack{pagos, mensajeria} {
		st := assertions.Template_FromStack(s, nil)
		for id, pol := range props(t, st, "AWS::IAM::Policy") {
			b, _ := json.Marshal(pol)
			var own string
			for name, f := range fns {
				if strings.Contains(string(b), core.LogicalID(f.Role())) {
					own = name
				}
			}
			if own == "" {
				continue
			}
			granted++
			doc, _ := pol["PolicyDocument"].(map[string]any)
			stmts, _ := doc["Statement"].([]any)
			n := 0
			for _, x := range stmts {
				sm, _ := x.(map[string]any)
				if sm["Action"] != "elasticache:Connect" {
					continue
				}
				n++
				res, _ := json.Marshal(sm["Resource"])
				rs, _ := sm["Resource"].([]any)
				if len(rs) != 2 || !strings.Contains(string(res), ":serverlesscache:mercadofresco-catalogo-dev") || !strings.Contains(string(res), ":user:"+own+`"`) {
					t.Errorf("%s (%s): elasticache:Connect on %s, want the cache and user %s only", id, own, res, own)
				}
			}
			if n != 1 {
				t.Errorf("%s (%s): %d elasticache:Connect statements", id, own, n)
			}
			for name := range fns {
				if name != own && strings.Contains(string(b), ":user:"+name+`"`) {
					t.Errorf("%s (%s) may connect as %s", id, own, name)
				}
			}
		}
		st.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Environment": map[string]any{"Variables": map[string]any{
				lambdaapi.EnvBreakerRedisUser: assertions.Match_AnyValue(), lambdaapi.EnvBreakerCacheName: "mercadofresco-catalogo-dev",
			}},
		})
	}
	if granted != len(fns) {
		t.Fatalf("%d roles' policies found, want %d", granted, len(fns))
	}
}

func TestBindNeedsValidDependencies(t *testing.T) {
	stack := cdktest.NewStack("Dependencias")
	net := network.New(stack, "Red", &network.Props{MaxAzs: 2, NatGateways: 1})
	c := datastore.NewCache(stack, "Catalogo", &datastore.CacheProps{Import: &config.CacheImport{Name: "mercadofresco-catalogo", Endpoint: "x.cache.amazonaws.com", SecurityGroupID: "sg-0123456789abcdef0"}})
	c.Bind(fn(stack, "SinDependencias", net.Vpc))
	c.Bind(fn(stack, "Espacio", net.Vpc), "con espacio")
	c.Bind(fn(stack, "Uno", net.Vpc, "mf-mismo"), "almacen")
	c.Bind(fn(stack, "Otro", net.Vpc, "MF_mismo"), "erp") // the same user id once mapped
	errs := cdktest.Errors(stack)
	cdktest.RequireContains(t, errs, "Otro and another bound function would share the ElastiCache user mf-mismo")
	cdktest.RequireContains(t, errs, "SinDependencias", "name the dependencies")
	cdktest.RequireContains(t, errs, "Espacio", "white space")
}
