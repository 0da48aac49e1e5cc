package test

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/synthesized"
)

const module = "github.com/mercadofresco/integration"

// goPackage is what `go list` says of one package of the module.
type goPackage struct {
	path    string
	name    string   // the package clause's name
	imports []string // direct, non-test
	deps    []string // transitive, non-test
}

// listPackages runs `go list` over patterns from the module root.
func listPackages(t *testing.T, patterns ...string) []goPackage {
	t.Helper()
	args := append([]string{"list", "-f", "{{.ImportPath}}|{{.Name}}|{{join .Imports \",\"}}|{{join .Deps \",\"}}"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	var pkgs []goPackage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "|", 4)
		split := func(s string) []string {
			if s == "" {
				return nil
			}
			return strings.Split(s, ",")
		}
		pkgs = append(pkgs, goPackage{path: f[0], name: f[1], imports: split(f[2]), deps: split(f[3])})
	}
	return pkgs
}

func standard(importPath string) bool {
	first, _, _ := strings.Cut(importPath, "/")
	return !strings.Contains(first, ".")
}

// contract reports whether importPath is one of the module's contract
// packages: under lambdas/, named <concept>api.
func contract(importPath string) bool {
	return strings.HasPrefix(importPath, module+"/lambdas/") && strings.HasSuffix(path.Base(importPath), "api")
}

// The CDK side (the app, config, constructs, stacks) links no Lambda code:
// from lambdas/ it imports only contract packages, and nothing it links is
// the Lambda runtime, an AWS SDK service client, pgx or go-redis.
func TestCDKSideLinksNoLambdaCode(t *testing.T) {
	forbidden := []string{"github.com/aws/aws-lambda-go", "github.com/aws/aws-sdk-go-v2/service/", "github.com/jackc/pgx", "github.com/redis/go-redis"}
	pkgs := listPackages(t, ".", "./config/...", "./constructs/...", "./stacks/...")
	if len(pkgs) < 12 {
		t.Fatalf("go list found %d CDK-side packages", len(pkgs))
	}
	for _, p := range pkgs {
		for _, imp := range p.imports {
			if strings.HasPrefix(imp, module+"/lambdas/") && !contract(imp) {
				t.Errorf("%s imports %s: the CDK side may import only contract packages (lambdas/.../<concept>api)", p.path, imp)
			}
			if strings.HasPrefix(imp, module+"/internal/") {
				t.Errorf("%s imports %s: test infrastructure in a CDK package", p.path, imp)
			}
		}
		for _, dep := range p.deps {
			if slices.ContainsFunc(forbidden, func(f string) bool { return strings.HasPrefix(dep, f) }) {
				t.Errorf("%s links %s", p.path, dep)
			}
		}
	}
}

// Contract packages depend on the standard library and other contracts
// only; no production package under lambdas/ imports the test
// infrastructure under internal/.
func TestLambdaPackagesKeepTheirLayers(t *testing.T) {
	contracts := 0
	for _, p := range listPackages(t, "./lambdas/...") {
		for _, imp := range p.imports {
			if strings.HasPrefix(imp, module+"/internal/") {
				t.Errorf("%s imports %s: test doubles and harnesses stay out of the production tree", p.path, imp)
			}
			if contract(p.path) && !standard(imp) && !contract(imp) {
				t.Errorf("contract package %s imports %s: contracts depend on the standard library and other contracts only", p.path, imp)
			}
		}
		if contract(p.path) {
			contracts++
		}
	}
	if contracts < 2 {
		t.Errorf("found %d contract packages under lambdas/, want at least 2 (eventsapi, lambdaapi)", contracts)
	}
}

// readmeLayout returns the paths the README's Layout section names: the
// first column of its code block, entries at two spaces of indent being
// under the top-level folder above them ("lambdas/" then "  retry/,
// lambdaapi/" names lambdas/retry and lambdas/lambdaapi); a
// deeper indent continues a description.
func readmeLayout(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no ## Layout section")
	}
	_, block, _ := strings.Cut(section, "```\n")
	block, _, _ = strings.Cut(block, "```")
	var paths []string
	parent := ""
	for _, line := range strings.Split(block, "\n") {
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if strings.TrimSpace(line) == "" || indent >= 4 {
			continue
		}
		var names []string
		for i, f := range strings.Fields(line) {
			if f == "→" {
				continue
			}
			name := strings.TrimSuffix(f, ",")
			// Names end in "/" or are files ("app.go,"); the description starts
			// at the first other word.
			if i > 0 && !strings.HasSuffix(name, "/") && !(strings.HasSuffix(f, ",") && strings.Contains(name, ".")) {
				break
			}
			names = append(names, name)
		}
		for _, n := range names {
			if indent == 0 {
				paths = append(paths, n)
			} else {
				paths = append(paths, parent+n)
			}
		}
		if indent == 0 && len(names) > 0 {
			parent = names[0]
		}
	}
	return paths
}

// Every folder and file the README's layout names exists.
func TestReadmeLayoutMatchesTheTree(t *testing.T) {
	paths := readmeLayout(t)
	if len(paths) < 40 {
		t.Fatalf("read only %d paths from README's layout: %q", len(paths), paths)
	}
	for _, p := range paths {
		st, err := os.Stat(filepath.Join("..", p))
		switch {
		case err != nil:
			t.Errorf("README's layout names %s, which does not exist", p)
		case strings.HasSuffix(p, "/") && !st.IsDir():
			t.Errorf("README's layout names %s as a folder; it is a file", p)
		}
	}
}

// notDeployed are the mains under lambdas/ that this app does not deploy,
// with what runs them instead.
var notDeployed = map[string]string{
	"pedido-writer": "the shop's order writer, run by the shop",
}

// The naming rule of docs/CONVENTIONS.md#layout-and-naming: a deployed Go
// function's main is lambdas/<folder>, and the function is mf-<folder> (with
// the environment's suffix); every main directly under lambdas/ is deployed
// (or listed in notDeployed), no main is nested deeper, and a library's
// package is named as its folder.
func TestFunctionsLiveInFoldersNamedAfterThem(t *testing.T) {
	s := synthApp(t)
	deployed := map[string]bool{}
	for _, es := range s.envs {
		env := es.Env
		for _, st := range es.Stacks() {
			stack := *st.StackName()
			for id, fn := range s.resources(t, stack, "AWS::Lambda::Function") {
				md, _ := fn["Metadata"].(map[string]any)
				entry, ok := md[synthesized.MetadataEntry].(string)
				if !ok {
					continue // not a Go function of ours (a CDK-provided handler)
				}
				folder := path.Base(entry)
				props, _ := fn["Properties"].(map[string]any)
				if want := env.PhysicalName("mf-" + folder); props["FunctionName"] != want || entry != "lambdas/"+folder {
					t.Errorf("%s %s: entry %s deploys as %v, want lambdas/<folder> deployed as %s", stack, id, entry, props["FunctionName"], want)
				}
				deployed[folder] = true
			}
		}
	}
	if len(deployed) < 8 {
		t.Fatalf("found %d deployed entries (%v): is the entry metadata still written?", len(deployed), deployed)
	}
	for _, p := range listPackages(t, "./lambdas/...") {
		rel := strings.TrimPrefix(p.path, module+"/")
		folder, name := path.Base(rel), p.name
		switch {
		case name == "main" && path.Dir(rel) != "lambdas":
			t.Errorf("%s is a main below lambdas/<folder>/: a function's main sits directly under lambdas/", rel)
		case name == "main" && !deployed[folder] && notDeployed[folder] == "":
			t.Errorf("%s is a main that no environment deploys: deploy it as mf-%s or list it in notDeployed", rel, folder)
		case name != "main" && name != folder:
			t.Errorf("%s is package %s: a library's package is named as its folder", rel, name)
		}
	}
}
