package test

import (
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/checks"
	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/golambda/gobuild"
	"github.com/mercadofresco/integration/stacks"
	"github.com/mercadofresco/integration/synthesized"
)

// synthesis is the whole app, every environment, synthesised once per test
// binary exactly as app.go does it: Lambda bundling ON (the binaries are
// really built; snapshots mask their hashes), the CDK's template validation
// ON, cdk-nag ON. Nothing is skipped, so a test here sees what `cdk deploy`
// would deploy.
type synthesis struct {
	outdir    string
	envs      []*stacks.EnvironmentStacks
	assembly  cxapi.CloudAssembly
	templates map[string]map[string]any // stack name -> parsed template
}

var (
	synthOnce sync.Once
	synthRes  *synthesis
	synthErr  error
)

// synthApp returns the app's synthesis, building it on first use.
func synthApp(t *testing.T) *synthesis {
	t.Helper()
	synthOnce.Do(func() { synthRes, synthErr = doSynth() })
	if synthErr != nil {
		t.Fatalf("synthesis: %v", synthErr)
	}
	return synthRes
}

func doSynth() (*synthesis, error) {
	outdir, err := os.MkdirTemp("", "mf-cdk-out-")
	if err != nil {
		return nil, err
	}
	// The same context as `cdk synth`: cdk.json's feature flags (without
	// them the tests would check other templates than the ones deployed),
	// plus what the CLI itself sets.
	context, err := cdkJSONContext(filepath.Join("..", "cdk.json"))
	if err != nil {
		return nil, err
	}
	// Version reporting adds a resource whose content changes with every
	// CDK release; it carries nothing worth a snapshot.
	context["aws:cdk:version-reporting"] = false
	// What the CLI sets: resources name their construct path and asset
	// directory.
	context["aws:cdk:enable-path-metadata"] = true
	context["aws:cdk:enable-asset-metadata"] = true
	app := awscdk.NewApp(&awscdk.AppProps{
		Outdir:  jsii.String(outdir),
		Context: &context,
	})
	// The CDK's CloudFormation validator runs on `cdk synth` by itself;
	// `make test` turns it off for the construct packages (CDK_VALIDATION=false,
	// docs/design.md#performance), so the app-level synthesis registers it.
	awscdk.Validations_Of(app).AddPlugins(awscdk.NewCloudFormationValidatePlugin(nil))
	envs, err := config.All()
	if err != nil {
		return nil, err
	}
	builder := &gobuild.Builder{}
	builder.StartAll("lambdas")
	s := &synthesis{outdir: outdir, templates: map[string]map[string]any{}}
	for _, env := range envs {
		s.envs = append(s.envs, stacks.Build(app, env, builder))
	}
	stacks.ApplyNag(app)
	s.assembly = app.Synth(nil)
	builder.Close()
	for _, st := range *s.assembly.Stacks() {
		raw, err := os.ReadFile(filepath.Join(outdir, *st.TemplateFile()))
		if err != nil {
			return nil, err
		}
		var tpl map[string]any
		if err := json.Unmarshal(raw, &tpl); err != nil {
			return nil, err
		}
		s.templates[*st.StackName()] = tpl
	}
	return s, nil
}

// cdkJSONContext reads the "context" object of cdk.json.
func cdkJSONContext(path string) (map[string]interface{}, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cfg struct {
		Context map[string]interface{} `json:"context"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(cfg.Context) == 0 {
		return nil, fmt.Errorf("%s has no context (feature flags)", path)
	}
	return cfg.Context, nil
}

// resources returns the resources of type typ in stack's template.
func (s *synthesis) resources(t *testing.T, stack, typ string) map[string]map[string]any {
	t.Helper()
	tpl, ok := s.templates[stack]
	if !ok {
		t.Fatalf("no stack %s in the assembly", stack)
	}
	out := map[string]map[string]any{}
	all, _ := tpl["Resources"].(map[string]any)
	for id, r := range all {
		res := r.(map[string]any)
		if res["Type"] == typ {
			out[id] = res
		}
	}
	return out
}

func TestEveryEnvironmentSynthesisesItsStacks(t *testing.T) {
	s := synthApp(t)
	want := []string{}
	for _, e := range s.envs {
		for _, st := range e.Stacks() {
			want = append(want, *st.StackName())
		}
	}
	// Every environment has the same parts, and the assembly holds exactly
	// the stacks the environments list (none missing, none stray).
	parts := func(e *stacks.EnvironmentStacks) []string {
		var ps []string
		for _, st := range e.Stacks() {
			ps = append(ps, strings.TrimSuffix(*st.StackName(), "-"+e.Env.Name))
		}
		return ps
	}
	first := parts(s.envs[0])
	if len(s.envs) != 3 || len(first) < 5 {
		t.Fatalf("want 3 environments of at least 5 stacks, got %v", want)
	}
	for _, e := range s.envs[1:] {
		if got := parts(e); !slices.Equal(got, first) {
			t.Errorf("%s has stacks %v, %s has %v", e.Env.Name, got, s.envs[0].Env.Name, first)
		}
	}
	for _, name := range want {
		if _, ok := s.templates[name]; !ok {
			t.Errorf("stack %s missing from the cloud assembly", name)
		}
	}
	if len(s.templates) != len(want) {
		t.Errorf("the assembly has %d stacks, the environments list %d", len(s.templates), len(want))
	}
}

// No error or warning annotation (cdk-nag's acknowledged findings are not
// in the assembly), and no finding of the project's checks, in any
// environment: what app.go's verdict requires. Only dev goes through the
// CLI and the app's exit code (TestCdkCliSynthesisesWithoutCredentials);
// staging and prod are judged here. What jsii prints (a deprecation) is
// judged by TestMain.
func TestSynthesisReportsNoErrors(t *testing.T) {
	s := synthApp(t)
	asm, err := synthesized.Load(s.outdir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range checks.Run(asm) {
		t.Errorf("%s: %s", f.Stack, f)
	}
	for _, st := range *s.assembly.Stacks() {
		for _, msg := range *st.Messages() {
			switch msg.Level {
			case cxapi.SynthesisMessageLevel_ERROR:
				t.Errorf("%s: error at %s: %v", *st.StackName(), *msg.Id, msg.Entry.Data)
			case cxapi.SynthesisMessageLevel_WARNING:
				t.Errorf("%s: warning at %s: %v", *st.StackName(), *msg.Id, msg.Entry.Data)
			}
		}
	}
}

// The CDK's built-in validator (CloudFormation schema and property checks)
// writes its findings to validation-report.json; any finding fails the
// build, since CloudFormation would refuse or mis-handle the template.
func TestCloudFormationValidationIsClean(t *testing.T) {
	s := synthApp(t)
	raw, err := os.ReadFile(filepath.Join(s.outdir, "validation-report.json"))
	if err != nil {
		// cdk.json turns the validator on (@aws-cdk/core:validateAgainstDefaultRules):
		// no report means it did not run, which must not pass as "clean".
		t.Fatalf("the CloudFormation validator wrote no report (is it still enabled in cdk.json?): %v", err)
	}
	var report struct {
		PluginReports []struct {
			PluginName string `json:"pluginName"`
			Violations []struct {
				RuleName    string `json:"ruleName"`
				Description string `json:"description"`
				Violating   []struct {
					ConstructPath string `json:"constructPath"`
				} `json:"violatingConstructs"`
			} `json:"violations"`
		} `json:"pluginReports"`
	}
	if err := json.Unmarshal(raw, &report); err != nil {
		t.Fatalf("validation-report.json: %v", err)
	}
	for _, p := range report.PluginReports {
		for _, v := range p.Violations {
			t.Errorf("%s: %s: %s %+v", p.PluginName, v.RuleName, v.Description, v.Violating)
		}
	}
}

// Every Lambda asset holds an arm64 Linux executable named bootstrap, which
// is what provided.al2023 on arm64 runs.
func TestLambdaAssetsAreArm64Bootstraps(t *testing.T) {
	s := synthApp(t)
	found := 0
	for _, st := range *s.assembly.Stacks() {
		for id, fn := range s.resources(t, *st.StackName(), "AWS::Lambda::Function") {
			props := fn["Properties"].(map[string]any)
			meta, _ := fn["Metadata"].(map[string]any)
			assetPath, _ := meta["aws:asset:path"].(string)
			if props["Runtime"] != "provided.al2023" || assetPath == "" {
				continue // a CDK-provided function (custom resources)
			}
			found++
			bin := filepath.Join(s.outdir, assetPath, "bootstrap")
			f, err := elf.Open(bin)
			if err != nil {
				t.Errorf("%s/%s: %v", *st.StackName(), id, err)
				continue
			}
			if f.Machine != elf.EM_AARCH64 || f.Type != elf.ET_EXEC {
				t.Errorf("%s/%s: bootstrap is %v %v, want an AArch64 executable", *st.StackName(), id, f.Machine, f.Type)
			}
			f.Close()
		}
	}
	if found == 0 {
		t.Fatal("no Go Lambda function in the app")
	}
}

// env returns the stacks of the named environment.
func (s *synthesis) env(t *testing.T, name string) *stacks.EnvironmentStacks {
	t.Helper()
	for _, e := range s.envs {
		if e.Env.Name == name {
			return e
		}
	}
	t.Fatalf("no environment %s", name)
	return nil
}

// TestPhysicalNamesAreUniquePerEnvironment: two resources of one type with
// the same name in one account and region fail the deploy of the second
// (two secrets named mercadofresco/erp/api-key did, in two stacks).
func TestPhysicalNamesAreUniquePerEnvironment(t *testing.T) {
	s := synthApp(t)
	nameProps := map[string]string{
		"AWS::SecretsManager::Secret": "Name", "AWS::SQS::Queue": "QueueName", "AWS::Lambda::Function": "FunctionName",
		"AWS::DynamoDB::Table": "TableName", "AWS::SNS::Topic": "TopicName", "AWS::Events::Connection": "Name",
		"AWS::Events::ApiDestination": "Name", "AWS::Pipes::Pipe": "Name", "AWS::StepFunctions::StateMachine": "StateMachineName",
		"AWS::Logs::LogGroup": "LogGroupName", "AWS::KMS::Alias": "AliasName", "AWS::IAM::Role": "RoleName",
		"AWS::SES::ConfigurationSet": "Name", "AWS::ElastiCache::ServerlessCache": "ServerlessCacheName",
		"AWS::Events::EventBus": "Name", "AWS::Scheduler::Schedule": "Name", "AWS::Events::Rule": "Name",
	}
	checked := 0
	for _, e := range s.envs {
		seen := map[string]string{}
		for _, st := range e.Stacks() {
			tpl := s.templates[*st.StackName()]
			all, _ := tpl["Resources"].(map[string]any)
			for id, r := range all {
				res := r.(map[string]any)
				typ, _ := res["Type"].(string)
				prop, ok := nameProps[typ]
				if !ok {
					continue
				}
				props, _ := res["Properties"].(map[string]any)
				name, ok := props[prop].(string)
				if !ok || name == "" {
					continue // generated by CloudFormation
				}
				if typ == "AWS::Events::Rule" { // unique per bus
					bus, _ := json.Marshal(props["EventBusName"])
					name = string(bus) + "/" + name
				}
				if name == "" {
					continue // generated by CloudFormation
				}
				key := typ + " " + name
				where := *st.StackName() + "/" + id
				if prev, dup := seen[key]; dup {
					t.Errorf("%s: %s named %q twice: %s and %s", e.Env.Name, typ, name, prev, where)
				}
				seen[key] = where
				checked++
			}
		}
	}
	if checked < 30 {
		t.Fatalf("only %d named resources checked", checked)
	}
}
