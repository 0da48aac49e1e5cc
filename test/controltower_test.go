package test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/synthesized"
)

// AWS Control Tower's proactive controls, as the cfn-guard rules that
// @cdklabs/cdk-validator-cfnguard ships with its cfn-guard binary (package.json
// pins it), run over every synthesized template of every environment.
//
// The rules accept a reference only as a literal or a reference to a resource
// of the same template, so every Fn::ImportValue is first replaced by the
// value of the export it names (synthesized): otherwise every log group
// and queue encrypted with the data key of the Platform stack fails.
//
// Every finding is either acknowledged (testdata/controltower/acknowledged.json,
// each with its reason) or a known real gap still open
// (testdata/controltower/expected-open.json, each with its fix): a finding in
// neither list fails, and so does an entry of either list that no longer
// matches a finding (docs/design.md#control-tower).
func TestControlTowerProactiveControls(t *testing.T) {
	s := synthApp(t)
	guard, rulesDir := cfnGuard(t)
	dir := t.TempDir()
	var templates []guardTemplate
	for _, e := range s.envs {
		app, err := synthesized.LoadEnv(s.outdir, e.Env.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range e.Stacks() {
			stack := *st.StackName()
			tpl, err := withImportsResolved(app, stack, s.templates[stack])
			if err != nil {
				t.Fatalf("%s: %v", stack, err)
			}
			gt := guardTemplate{stack: stack, tpl: tpl, labels: map[string]string{}}
			for id, r := range app.Stacks[stack].Resources {
				gt.labels[id] = resourceLabel(stack, e.Env.Name, r)
			}
			templates = append(templates, gt)
		}
	}
	// Every Control Tower rule selects resources by a type it names
	// (Resources.*[ Type == ... ]; a local reference is looked up with a
	// named type too), so a rule file sees only the resources of those
	// types: its verdict is the same, and cfn-guard's time, which grows
	// with every template's resources times the rules, falls to a third.
	// The rule files naming the same types share one run.
	ruleSet := readGuardRules(t, rulesDir)
	byTypes := map[string][]string{} // the types a rule file names -> the rule files
	for _, r := range ruleSet {
		k := strings.Join(r.types, " ")
		byTypes[k] = append(byTypes[k], r.path)
	}
	var findings []ctFinding
	applied := 0
	checked := map[string]bool{} // stacks some rule file saw
	for i, k := range slices.Sorted(maps.Keys(byTypes)) {
		labels := map[string]map[string]string{} // template file -> logical id -> label
		var data []string
		for _, gt := range templates {
			tpl := gt.only(strings.Fields(k))
			if tpl == nil {
				continue
			}
			raw, err := json.Marshal(tpl)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, fmt.Sprint(i), gt.stack+".template.json")
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			data, labels[file] = append(data, file), gt.labels
			checked[gt.stack] = true
		}
		if len(data) == 0 {
			continue // no template has a resource of these types
		}
		applied += len(byTypes[k])
		findings = append(findings, runGuard(t, guard, byTypes[k], data, labels)...)
	}
	t.Logf("%d of the %d Control Tower rule files name a resource type the templates have (the others cannot apply)", applied, len(ruleSet))
	for _, gt := range templates {
		if !checked[gt.stack] {
			t.Fatalf("no Control Tower rule applies to %s: not the Control Tower rule set", gt.stack)
		}
	}
	sortFindings(findings)
	acks := readControlTowerList(t, "acknowledged.json")
	open := readControlTowerList(t, "expected-open.json")
	ackKeys, openKeys := acks.keys(t, "acknowledged"), open.keys(t, "expected open")
	for k := range ackKeys {
		if _, dup := openKeys[k]; dup {
			t.Errorf("%s is both acknowledged and expected open: it is one or the other", k)
		}
	}

	byRule := map[string][]ctFinding{}
	seen := map[string]bool{}
	for _, f := range findings {
		byRule[f.Control+" "+f.Rule] = append(byRule[f.Control+" "+f.Rule], f)
		seen[f.key()] = true
	}
	for _, rule := range slices.Sorted(maps.Keys(byRule)) {
		t.Logf("%s: %d finding(s)", rule, len(byRule[rule]))
		for _, f := range byRule[rule] {
			switch {
			case ackKeys[f.key()] != nil:
				t.Logf("    acknowledged   %s %s", f.Env, f.Resource)
			case openKeys[f.key()] != nil:
				t.Logf("    EXPECTED OPEN  %s %s: %s", f.Env, f.Resource, openKeys[f.key()].Fix)
			default:
				t.Errorf("new Control Tower finding %s (%s) in %s: %s (%s); fix it, or acknowledge it with a reason in testdata/controltower/acknowledged.json",
					f.Control, f.Rule, f.Env, f.Resource, f.Message)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ackKeys)) {
		if !seen[k] {
			t.Errorf("acknowledged %s matches no finding any more: remove it from testdata/controltower/acknowledged.json", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(openKeys)) {
		if !seen[k] {
			t.Errorf("expected-open %s no longer fails: the gap is closed, remove it from testdata/controltower/expected-open.json (and from docs/design.md#control-tower)", k)
		}
	}
	if len(findings) == 0 {
		t.Fatal("cfn-guard reported no finding at all: the app has known open gaps, so the rules did not run")
	}
}

// cfnGuard is the cfn-guard binary and the rules directory that the npm
// package ships for this platform.
func cfnGuard(t *testing.T) (bin, rules string) {
	t.Helper()
	pkg := filepath.Join("..", "node_modules", "@cdklabs", "cdk-validator-cfnguard")
	osDir := map[string]string{"linux": "ubuntu", "darwin": "macos"}[runtime.GOOS]
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	bin = filepath.Join(pkg, "bin", osDir, arch, "cfn-guard")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("cfn-guard of @cdklabs/cdk-validator-cfnguard for %s/%s: %v (run make)", runtime.GOOS, runtime.GOARCH, err)
	}
	return bin, filepath.Join(pkg, "rules", "control-tower", "cfn-guard")
}

var guardType = regexp.MustCompile(`["'](AWS::[A-Za-z0-9]+::[A-Za-z0-9]+)["']`)

// guardRules are the Control Tower rule files, each with the resource
// types it names.
type guardRules []struct {
	path  string
	types []string
}

func readGuardRules(t *testing.T, dir string) guardRules {
	t.Helper()
	var out guardRules
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".guard") {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		named := map[string]bool{}
		for _, m := range guardType.FindAllSubmatch(raw, -1) {
			named[string(m[1])] = true
		}
		out = append(out, struct {
			path  string
			types []string
		}{path, slices.Sorted(maps.Keys(named))})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("%d rule files in %s: not the Control Tower rule set", len(out), dir)
	}
	return out
}

// applicable are the rule files that name a type in types, or no type at
// all: a rule whose every type is absent from a template has nothing to
// check there (each rule selects Resources.*[ Type == ... ]).
func (g guardRules) applicable(types map[string]bool) []string {
	var rules []string
	for _, r := range g {
		use := len(r.types) == 0
		for _, ty := range r.types {
			use = use || types[ty]
		}
		if use {
			rules = append(rules, r.path)
		}
	}
	return rules
}

// guardTemplate is one synthesized template, imports resolved, with the
// label of each resource.
type guardTemplate struct {
	stack  string
	tpl    map[string]any
	labels map[string]string // logical id -> label
}

// only is the template with only the resources of the given types (all of
// them when types is empty), or nil when it has none of them.
func (g guardTemplate) only(types []string) map[string]any {
	all, _ := g.tpl["Resources"].(map[string]any)
	kept := map[string]any{}
	for id, r := range all {
		ty, _ := r.(map[string]any)["Type"].(string)
		if len(types) == 0 || slices.Contains(types, ty) {
			kept[id] = r
		}
	}
	if len(kept) == 0 {
		return nil
	}
	out := maps.Clone(g.tpl)
	out["Resources"] = kept
	return out
}

// withImportsResolved returns tpl with every {"Fn::ImportValue": name}
// replaced by the value the exporting stack gives it.
func withImportsResolved(app *synthesized.App, stack string, tpl map[string]any) (map[string]any, error) {
	out, err := app.ResolveImports(stack, tpl, literalLocals(app))
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

// literalLocals gives an exported reference the value AWS gives it
// (synthesized.Physical: names and ARNs), and, for the types Physical does not
// name (subnets, security groups, a VPC, an endpoint), an identifier of the
// shape EC2 uses, derived from the resource: what the rules see in a
// deployed template is a literal of that kind.
func literalLocals(app *synthesized.App) synthesized.Literals {
	return synthesized.Literals{Physical: synthesized.Physical{App: app}, Placeholder: ec2ID}
}

func ec2ID(r *synthesized.Resource, attr string) string {
	sum := sha256.Sum256([]byte(r.Stack + "/" + r.LogicalID + "." + attr))
	prefix := map[string]string{"AWS::EC2::Subnet": "subnet-", "AWS::EC2::SecurityGroup": "sg-", "AWS::EC2::VPC": "vpc-",
		"AWS::EC2::VPCEndpoint": "vpce-"}[r.Type]
	if prefix == "" {
		prefix = strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(r.Type, "AWS::"), "::", "-")) + "-"
	}
	return prefix + hex.EncodeToString(sum[:])[:17]
}

// resourceLabel names r the same way in every environment: its stack's
// part and its construct path ("Outbox/Aurora/Cluster/Escritor").
func resourceLabel(stack, env string, r *synthesized.Resource) string {
	part := strings.TrimSuffix(strings.TrimPrefix(stack, "MercadoFresco-"), "-"+env)
	path := r.Path()
	if _, rest, ok := strings.Cut(path, "/"); ok && path != stack+"/"+r.LogicalID {
		path = rest
	} else {
		path = r.LogicalID
	}
	return part + "/" + strings.TrimSuffix(path, "/Resource")
}

// ctFinding is one resource that fails one control in one environment.
type ctFinding struct {
	Control, Rule, Env, Resource, Message string
}

func (f ctFinding) key() string { return f.Control + " " + f.Env + " " + f.Resource }

var (
	controlID    = regexp.MustCompile(`\[(CT\.[A-Z0-9]+\.PR\.[0-9]+)\]`)
	controlTitle = regexp.MustCompile(`\[CT\.[A-Z0-9]+\.PR\.[0-9]+\]:\s*([^\n]*)`)
	resourcePath = regexp.MustCompile(`^/Resources/([^/\[]+)`)
)

// runGuard validates every template against every rule in one cfn-guard
// run and returns its findings, one per control and resource.
func runGuard(t *testing.T, guard string, rules, data []string, labels map[string]map[string]string) []ctFinding {
	t.Helper()
	args := []string{"validate", "--output-format", "json", "--show-summary", "none", "--structured"}
	for _, r := range rules {
		args = append(args, "--rules", r)
	}
	for _, d := range data {
		args = append(args, "--data", d)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(guard, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	// cfn-guard exits 19 when a rule fails, 0 when none does.
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 19) {
		t.Fatalf("cfn-guard: %v: %s", err, stderr.String())
	}
	var reports []struct {
		Name         string           `json:"name"`
		NotCompliant []map[string]any `json:"not_compliant"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &reports); err != nil {
		t.Fatalf("cfn-guard output: %v: %.500s", err, stdout.String())
	}
	if len(reports) != len(data) {
		t.Fatalf("cfn-guard reported on %d templates, %d were given", len(reports), len(data))
	}
	env := func(file string) string {
		stack := strings.TrimSuffix(filepath.Base(file), ".template.json")
		return stack[strings.LastIndex(stack, "-")+1:]
	}
	var out []ctFinding
	seen := map[string]bool{}
	for _, rep := range reports {
		ids, ok := labels[rep.Name]
		if !ok {
			t.Fatalf("cfn-guard reported on %s, which was not given", rep.Name)
		}
		for _, nc := range rep.NotCompliant {
			var rule map[string]any
			for _, v := range nc { // {"Rule": {...}} or {"Clause": {...}}
				rule, _ = v.(map[string]any)
			}
			name, _ := rule["name"].(string)
			raw, _ := json.Marshal(rule)
			ctl := controlID.FindSubmatch(raw)
			if ctl == nil {
				t.Errorf("%s: rule %s failed without a Control Tower control id", rep.Name, name)
				continue
			}
			msg := ""
			var texts []string
			collectStrings(rule, "custom_message", &texts)
			for _, s := range texts {
				if m := controlTitle.FindStringSubmatch(s); m != nil {
					msg = strings.TrimSpace(m[1])
				}
			}
			var paths []string
			collectStrings(rule, "path", &paths)
			for _, p := range paths {
				m := resourcePath.FindStringSubmatch(p)
				if m == nil {
					continue
				}
				label, ok := ids[m[1]]
				if !ok {
					t.Errorf("%s: %s names resource %s, which the template does not have", rep.Name, name, m[1])
					continue
				}
				f := ctFinding{Control: string(ctl[1]), Rule: name, Env: env(rep.Name), Resource: label, Message: msg}
				if !seen[f.key()] {
					seen[f.key()] = true
					out = append(out, f)
				}
			}
		}
	}
	sortFindings(out)
	return out
}

// sortFindings orders findings by control, resource and environment.
func sortFindings(fs []ctFinding) {
	slices.SortFunc(fs, func(a, b ctFinding) int {
		return strings.Compare(a.Control+a.Resource+a.Env, b.Control+b.Resource+b.Env)
	})
}

// collectStrings appends every string value of key found anywhere in v.
func collectStrings(v any, key string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == key {
				*out = append(*out, s)
			} else {
				collectStrings(e, key, out)
			}
		}
	case []any:
		for _, e := range x {
			collectStrings(e, key, out)
		}
	}
}

// ctEntry is one entry of a Control Tower list: a control, the environments
// and resources it covers, and why (an acknowledgement's Reason, an open
// gap's Fix).
type ctEntry struct {
	Control      string   `json:"control"`
	Environments []string `json:"environments"`
	Resources    []string `json:"resources"`
	Reason       string   `json:"reason,omitempty"`
	Fix          string   `json:"fix,omitempty"`
}

type ctList struct {
	About   string    `json:"about"`
	Entries []ctEntry `json:"entries"`
}

func readControlTowerList(t *testing.T, name string) ctList {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "controltower", name))
	if err != nil {
		t.Fatal(err)
	}
	var l ctList
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return l
}

// keys expands the list to one key per control, environment and resource,
// and checks that every entry says why.
func (l ctList) keys(t *testing.T, what string) map[string]*ctEntry {
	t.Helper()
	out := map[string]*ctEntry{}
	for i := range l.Entries {
		e := &l.Entries[i]
		why := e.Reason + e.Fix
		lower := strings.ToLower(why)
		if !controlID.MatchString("["+e.Control+"]") || len(e.Environments) == 0 || len(e.Resources) == 0 {
			t.Errorf("%s entry %d: needs a control (CT.<SERVICE>.PR.<n>), environments and resources: %+v", what, i, *e)
		}
		if len(why) < 60 || strings.Contains(lower, "todo") || strings.Contains(lower, "tbd") {
			t.Errorf("%s entry %s %v: says too little why: %q", what, e.Control, e.Resources, why)
		}
		for _, env := range e.Environments {
			for _, r := range e.Resources {
				k := ctFinding{Control: e.Control, Env: env, Resource: r}.key()
				if out[k] != nil {
					t.Errorf("%s lists %s twice", what, k)
				}
				out[k] = e
			}
		}
	}
	return out
}

// The check is live, and resolving imports is what it needs: a queue
// encrypted with a key of another stack fails CT.SQS.PR.2 while its key is
// an Fn::ImportValue and passes once resolved; a queue without a DLQ fails
// CT.SQS.PR.1 either way.
func TestControlTowerRulesSeeResolvedImports(t *testing.T) {
	guard, rulesDir := cfnGuard(t)
	keyStack := `{"Resources": {"Key": {"Type": "AWS::KMS::Key", "Properties": {"KeyPolicy": {}}}},
		"Outputs": {"KeyArn": {"Value": {"Fn::GetAtt": ["Key", "Arn"]}, "Export": {"Name": "K-test:KeyArn"}}}}`
	queueStack := `{"Resources": {"Cola": {"Type": "AWS::SQS::Queue", "Metadata": {"aws:cdk:path": "Q-test/Cola/Resource"},
		"Properties": {"KmsMasterKeyId": {"Fn::ImportValue": "K-test:KeyArn"}}}}}`
	app := synthesized.New("test", "123456789012", "eu-west-1")
	for name, raw := range map[string]string{"K-test": keyStack, "Q-test": queueStack} {
		if err := app.Add(name, []byte(raw)); err != nil {
			t.Fatal(err)
		}
	}
	var tpl map[string]any
	if err := json.Unmarshal([]byte(queueStack), &tpl); err != nil {
		t.Fatal(err)
	}
	resolved, err := withImportsResolved(app, "Q-test", tpl)
	if err != nil {
		t.Fatal(err)
	}
	rules := readGuardRules(t, rulesDir).applicable(map[string]bool{"AWS::SQS::Queue": true})
	for _, tc := range []struct {
		name     string
		tpl      map[string]any
		controls []string
	}{
		{"imported key", tpl, []string{"CT.SQS.PR.1", "CT.SQS.PR.2"}},
		{"resolved key", resolved, []string{"CT.SQS.PR.1"}},
	} {
		file := filepath.Join(t.TempDir(), "Q-test.template.json")
		raw, _ := json.Marshal(tc.tpl)
		if err := os.WriteFile(file, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		labels := map[string]map[string]string{file: {"Cola": "Q/Cola"}}
		var got []string
		for _, f := range runGuard(t, guard, rules, []string{file}, labels) {
			got = append(got, f.Control)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.controls) {
			t.Errorf("%s: findings %v, want %v", tc.name, got, tc.controls)
		}
	}
}
