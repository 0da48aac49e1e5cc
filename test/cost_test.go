package test

import (
	"github.com/mercadofresco/integration/synthesized"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/cmd/mf/cost"
	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/golambda/gobuild"
	"github.com/mercadofresco/integration/stacks"
)

// The cost review prices every environment of the app as synthesized: every
// function has a usage entry, every resource type is priced or known to be
// free, every messaging service of the design's figure has a cost, and the
// table prints.
func TestCostReviewPricesEveryEnvironment(t *testing.T) {
	s := synthApp(t)
	usage, prices := costInputs(t)
	for _, e := range s.envs {
		tpl, err := synthesized.LoadEnv(s.outdir, e.Env.Name)
		if err != nil {
			t.Fatal(err)
		}
		if tpl.Account != e.Env.Account {
			t.Errorf("%s: the cost review read account %s from the assembly, the environment is %s", e.Env.Name, tpl.Account, e.Env.Account)
		}
		est, err := cost.Compute(tpl, usage, prices)
		if err != nil {
			t.Errorf("%s: %v", e.Env.Name, err)
			continue
		}
		if est.Stacks != len(e.Stacks()) {
			t.Errorf("%s: priced %d stacks, the environment has %d", e.Env.Name, est.Stacks, len(e.Stacks()))
		}
		for typ, n := range est.Unpriced {
			t.Errorf("%s: %d resources of type %s, which the cost model neither prices nor knows to be free (cmd/mf/cost)", e.Env.Name, n, typ)
		}
		for _, layer := range cost.Layers {
			if est.Layer(layer) <= 0 {
				t.Errorf("%s: no cost for %s, a part of the messaging layer", e.Env.Name, layer)
			}
		}
		if est.Fixed() <= 0 || est.PerOrder() <= 0 {
			t.Errorf("%s: fixed %.2f, per-order %.2f USD a month", e.Env.Name, est.Fixed(), est.PerOrder())
		}
	}
}

// One config value changed (prod's NAT gateways, 3 to 1) changes the cost by
// exactly two gateways and their public addresses: the delta `make review`
// can show for a change.
func TestCostDeltaOfFewerNatGateways(t *testing.T) {
	usage, prices := costInputs(t)
	prod, err := config.Lookup("prod")
	if err != nil {
		t.Fatal(err)
	}
	if prod.NatGateways != 3 {
		t.Fatalf("prod has %v NAT gateways; this test lowers 3 to 1", prod.NatGateways)
	}
	one := prod
	one.NatGateways = 1
	before := synthNetwork(t, prod)
	after := synthNetwork(t, one)
	d, err := cost.CompareTemplates(before, after, usage, prices)
	if err != nil {
		t.Fatal(err)
	}
	nat, err := prices.Get("vpc.nat.hour")
	if err != nil {
		t.Fatal(err)
	}
	ipv4, err := prices.Get("vpc.ipv4.hour")
	if err != nil {
		t.Fatal(err)
	}
	want := -2 * usage.HoursPerMonth * (nat.PerUnit() + ipv4.PerUnit())
	if math.Abs(d.Monthly()-want) > 1e-6 || math.Abs(d.Fixed()-want) > 1e-6 || d.PerOrder() != 0 {
		t.Errorf("delta %.4f USD a month (fixed %.4f, per-order %.4f), want %.4f", d.Monthly(), d.Fixed(), d.PerOrder(), want)
	}
	for _, c := range d.Changes {
		if c.Service != "Amazon VPC" || (c.Item != "NAT gateways" && c.Item != "public IPv4 addresses") {
			t.Errorf("unexpected change %s / %s: %.2f -> %.2f", c.Service, c.Item, c.Before.Monthly(), c.After.Monthly())
		}
	}
}

func costInputs(t *testing.T) (*cost.Usage, *cost.Prices) {
	t.Helper()
	usage, err := cost.DefaultUsage()
	if err != nil {
		t.Fatal(err)
	}
	prices, err := cost.DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	return usage, prices
}

// synthNetwork synthesizes the Platform and Network stacks of env (what the
// NAT gateways touch; no Lambda to build) and loads their templates.
func synthNetwork(t *testing.T, env config.Environment) *synthesized.App {
	t.Helper()
	context, err := cdkJSONContext(filepath.Join("..", "cdk.json"))
	if err != nil {
		t.Fatal(err)
	}
	// As `cdk synth` does: resources name their construct path, which the
	// usage model's entries for CDK-named functions use.
	context["aws:cdk:version-reporting"] = false
	context["aws:cdk:enable-path-metadata"] = true
	dir := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(dir), Context: &context})
	builder := &gobuild.Builder{}
	defer builder.Close()
	platform := stacks.NewPlatformStack(app, env)
	stacks.NewNetworkStack(app, platform.Shared(env, builder))
	app.Synth(nil)
	if _, err := os.Stat(filepath.Join(dir, env.StackName("Network")+".template.json")); err != nil {
		t.Fatal(err)
	}
	tpl, err := synthesized.LoadEnv(dir, env.Name)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}
