package test

import (
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/mercadofresco/integration"

// goPackage is what `go list` says of one package of the module.
type goPackage struct {
	path    string
	imports []string // direct, non-test
	deps    []string // transitive, non-test
}

// listPackages runs `go list` over patterns from the module root.
func listPackages(t *testing.T, patterns ...string) []goPackage {
	t.Helper()
	args := append([]string{"list", "-f", "{{.ImportPath}}|{{join .Imports \",\"}}|{{join .Deps \",\"}}"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	var pkgs []goPackage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "|", 3)
		split := func(s string) []string {
			if s == "" {
				return nil
			}
			return strings.Split(s, ",")
		}
		pkgs = append(pkgs, goPackage{path: f[0], imports: split(f[1]), deps: split(f[2])})
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
	if len(pkgs) < 20 {
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
	if contracts < 8 {
		t.Errorf("found %d contract packages under lambdas/, want at least 8", contracts)
	}
}
