package nostub_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/synthesized"
)

// builder is the function a main hands to sqsconsumer.Main or
// lambdaenv.Main: the library package's directory (lambdas/payment) and the
// function's name (CobroFunction).
type builder struct{ dir, name string }

// mainBuilder reads lambdas/<fn>/main.go and returns the builders its main
// passes from other packages of the module than the runtime's own.
func mainBuilder(t *testing.T, module, file string) []builder {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string]string{} // local name -> directory in the module
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		rel, ok := strings.CutPrefix(p, module+"/")
		if !ok {
			continue
		}
		name := filepath.Base(rel)
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = rel
	}
	var out []builder
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		for _, arg := range call.Args {
			sel, ok := arg.(*ast.SelectorExpr)
			if !ok {
				continue
			}
			if x, ok := sel.X.(*ast.Ident); ok && imports[x.Name] != "" &&
				imports[x.Name] != "lambdas/sqsconsumer" && imports[x.Name] != "lambdas/lambdaenv" {
				out = append(out, builder{dir: imports[x.Name], name: sel.Sel.Name})
			}
			// A method of a package's value (sqsconsumer.Preparation.FromRuntime):
			// the value is the builder.
			if v, ok := sel.X.(*ast.SelectorExpr); ok {
				if x, ok := v.X.(*ast.Ident); ok && imports[x.Name] != "" {
					out = append(out, builder{dir: imports[x.Name], name: v.Sel.Name})
				}
			}
		}
		return true
	})
	return out
}

// deployedTests returns, for each TestDeployed* function of the test files
// in dir, the identifiers and string literals its body uses (one level of
// the package's own helpers it calls included).
func deployedTests(t *testing.T, dir string) map[string][]string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	funcs := map[string]*ast.FuncDecl{}
	for _, file := range files {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				funcs[fd.Name.Name] = fd
			}
		}
	}
	uses := func(fd *ast.FuncDecl) []string {
		var out []string
		ast.Inspect(fd, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.Ident:
				out = append(out, x.Name)
			case *ast.BasicLit:
				if s, err := strconv.Unquote(x.Value); err == nil {
					out = append(out, s)
				}
			}
			return true
		})
		return out
	}
	tests := map[string][]string{}
	for name, fd := range funcs {
		if !strings.HasPrefix(name, "TestDeployed") {
			continue
		}
		all := uses(fd)
		for _, id := range slices.Clone(all) {
			if helper, ok := funcs[id]; ok && helper != fd {
				all = append(all, uses(helper)...)
			}
		}
		tests[name] = all
	}
	return tests
}

// Every deployed main (a lambdas/<fn>/main.go whose function mf-<fn> is in
// a committed template) has a wiring test in its library's package: a
// TestDeployed* function that names the function (its template
// environment) and calls the builder the main passes (so the test builds it
// as the main does). A new deployed main without one fails here.
func TestEveryDeployedMainHasAWiringTest(t *testing.T) {
	r := root(t)
	mod, err := os.ReadFile(filepath.Join(r, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := strings.Fields(strings.SplitN(string(mod), "\n", 2)[0])[1]
	deployed := map[string]bool{}
	for _, env := range []string{"dev", "staging", "prod"} {
		app, err := synthesized.LoadEnv(filepath.Join(r, "test", "testdata", "snapshots"), env)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range app.Resources("AWS::Lambda::Function") {
			if n, ok := f.Properties["FunctionName"].(string); ok {
				deployed[n] = true
			}
		}
	}
	mains, _ := filepath.Glob(filepath.Join(r, "lambdas", "*", "main.go"))
	checked := 0
	for _, m := range mains {
		dir := filepath.Join("lambdas", filepath.Base(filepath.Dir(m)))
		fn := "mf-" + filepath.Base(dir)
		if !deployed[fn] {
			continue
		}
		checked++
		builders := mainBuilder(t, module, m)
		if len(builders) == 0 {
			t.Errorf("%s/main.go: no builder found in its main", dir)
		}
		for _, b := range builders {
			found := false
			for _, uses := range deployedTests(t, filepath.Join(r, b.dir)) {
				found = found || (slices.Contains(uses, fn) && slices.Contains(uses, b.name))
			}
			if !found {
				t.Errorf("%s (%s) has no wiring test: want a TestDeployed* in %s that builds %s from %s's template environment",
					dir, fn, b.dir, b.name, fn)
			}
		}
	}
	if checked == 0 {
		t.Error("no lambdas/*/main.go matches a function of the templates (mf-<dir>)")
	}
}
