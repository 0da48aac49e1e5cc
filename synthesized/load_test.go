package synthesized

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/config"
)

const snapshots = "../test/testdata/snapshots"

// A cloud assembly: its stacks split by environment, each with the
// account and region of its artifact, the dependencies on other stacks
// (not on assets), and the project's construct metadata from the manifest
// and from the files it names.
func TestLoadReadsTheManifest(t *testing.T) {
	asm, err := Load(filepath.Join("testdata", "assembly"))
	if err != nil {
		t.Fatal(err)
	}
	var envs []string
	for _, e := range asm.Envs {
		envs = append(envs, e.Env)
	}
	if !slices.Equal(envs, []string{"qa", "test"}) {
		t.Fatalf("environments %v, want [qa test]", envs)
	}
	app := asm.Env("test")
	if app.Account != "111111111111" || app.Region != "eu-west-1" || asm.Env("qa").Account != "222222222222" {
		t.Errorf("accounts %s/%s, %s", app.Account, app.Region, asm.Env("qa").Account)
	}
	if got := app.Stacks["Producers-test"].DependsOn; !slices.Equal(got, []string{"Consumers-test"}) {
		t.Errorf("Producers-test depends on %v", got)
	}
	if len(app.Stacks["Consumers-test"].DependsOn) != 0 {
		t.Errorf("Consumers-test depends on %v (an asset is not a stack)", app.Stacks["Consumers-test"].DependsOn)
	}
	if !app.DependsOn("Producers-test", "Consumers-test") || app.DependsOn("Consumers-test", "Producers-test") {
		t.Error("DependsOn does not follow the manifest")
	}
	// Without the manifest, an import is a dependency too.
	app.Stacks["Producers-test"].DependsOn = nil
	if !app.DependsOn("Producers-test", "Consumers-test") {
		t.Error("DependsOn does not follow the imports")
	}
	var got []string
	for _, e := range app.ConstructMetadata("Consumers-test/Cola/Resource") {
		got = append(got, e.Type)
	}
	if want := []string{"mercadofresco:set-by:VisibilityTimeout", "mercadofresco:acknowledged"}; !slices.Equal(got, want) {
		t.Errorf("metadata above the queue %v, want %v (outermost first, the project's only)", got, want)
	}
	if m := app.ConstructMetadata("Producers-test/Envio/Resource"); len(m) != 1 || m[0].Data != "EnvioTimeout in constructs/example" {
		t.Errorf("inline metadata %v", m)
	}
	// A template without path metadata: the manifest names the construct.
	if tema, _ := app.Resource("Producers-test", "Tema"); tema.Path() != "Producers-test/Tema/Resource" {
		t.Errorf("the topic's path %s", tema.Path())
	}
	// The subscription's endpoint is the other stack's queue, through its export.
	sub, _ := app.Resource("Producers-test", "Envio")
	if q := app.Find(sub.Stack, sub.Prop("Endpoint")); q == nil || q.Path() != "Consumers-test/Cola/Resource" {
		t.Errorf("endpoint %v", q)
	}
	if _, err := LoadEnv(filepath.Join("testdata", "assembly"), "prod"); err == nil || !strings.Contains(err.Error(), `"prod"`) {
		t.Errorf("LoadEnv of a missing environment: %v", err)
	}
}

// A directory of templates without a manifest (the committed snapshots):
// the environments' accounts and regions come from config.
func TestLoadReadsTheSnapshots(t *testing.T) {
	asm, err := Load(snapshots)
	if err != nil {
		t.Fatal(err)
	}
	if len(asm.Envs) != 3 {
		t.Fatalf("%d environments", len(asm.Envs))
	}
	for _, app := range asm.Envs {
		env, err := config.Lookup(app.Env)
		if err != nil {
			t.Fatal(err)
		}
		if app.Account != env.Account || app.Region != env.Region {
			t.Errorf("%s: %s/%s, want %s/%s", app.Env, app.Account, app.Region, env.Account, env.Region)
		}
		for _, s := range app.StackNames() {
			if EnvOf(s) != app.Env {
				t.Errorf("%s holds %s", app.Env, s)
			}
		}
		if len(app.Resources("AWS::SQS::Queue")) == 0 || len(app.Resources("AWS::Lambda::Function")) == 0 {
			t.Errorf("%s: no queues or functions", app.Env)
		}
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("an empty directory loaded")
	}
}
