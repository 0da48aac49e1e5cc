// Package nostub finds stand-ins on a deployed path: test doubles and stubs
// that a Lambda's main links into its binary (code a deployed main reaches
// does the real thing, docs/CONVENTIONS.md). Scan lists, with the Go tool,
// every package linked into the given mains as the Lambda build links them
// (GOOS=linux, GOARCH=arm64, CGO_ENABLED=0, -tags lambda.norpc), and
// reports, among this module's packages, an import path element that names
// a test double (fake..., stub..., mock..., dummy..., noop..., ...fake,
// ...mock, ...test), a top-level declaration named as one (stub, fake, mock,
// dummy, noop, nop, falso as a prefix; Simulado, Falso, Noop as a suffix)
// or whose doc comment calls it a stub or a placeholder (TODO, "not
// implemented"). A name is only a second net: the wiring tests of the
// deployed mains prove by behaviour that each real client makes its
// requests. Test files are not linked and not read.
package nostub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Finding is one stand-in reachable from a main.
type Finding struct {
	// Main is the entry whose binary links it ("lambdas/preparar-pedido").
	Main string
	// Package is the import path of the package holding it.
	Package string
	// Where is "file:line" of a declaration, empty for a whole package.
	Where string
	// What says what was found.
	What string
}

func (f Finding) String() string {
	loc := f.Package
	if f.Where != "" {
		loc = f.Where
	}
	return fmt.Sprintf("%s reaches %s: %s", f.Main, loc, f.What)
}

var (
	// doubleElement matches an import-path element naming a test double:
	// stubs, mocks, lambdatest, localaws (but not nostub).
	doubleElement = regexp.MustCompile(`(?i)^(fake|stub|mock|dummy|noop|falso|simulado|localaws$)|(fake|mock|test)$`)
	// doubleName matches a declaration named as a test double: the prefix
	// is followed by the end or an upper-case letter (stubPreparer, Fake,
	// FakeSES), so "stubborn" is not one.
	doubleName = regexp.MustCompile(`^(?:stub|fake|mock|dummy|noop|nop|falso|falsa|simulado|simulada|Stub|Fake|Mock|Dummy|Noop|NoOp|Nop|Falso|Falsa|Simulado|Simulada)(?:$|[A-Z0-9_])|[a-z0-9](?:Simulado|Simulada|Falso|Falsa|Noop|NoOp|Stub|Fake|Mock)$`)
	// stubDoc matches a doc comment calling its declaration a stub or a
	// placeholder.
	stubDoc = regexp.MustCompile(`(?i)\bstub\b|\bstands? in for\b|\bfake implementation\b|\bno-?op\b|\bTODO\b|\bFIXME\b|\bnot (yet )?implemented\b|\bsimulad[oa]\b`)
)

type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Standard   bool
	Module     *struct{ Path string }
	Deps       []string
	Error      *struct{ Err string }
}

// Scan reports the stand-ins linked into each main package of mains
// (directories relative to dir, the module root, e.g. "lambdas/preparar-pedido").
func Scan(ctx context.Context, dir string, mains []string) ([]Finding, error) {
	if len(mains) == 0 {
		return nil, errors.New("nostub: no main packages to scan")
	}
	args := []string{"list", "-deps", "-json", "-tags", "lambda.norpc"}
	for _, m := range mains {
		args = append(args, "./"+filepath.ToSlash(filepath.Clean(m)))
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("nostub: go list: %w: %s", err, stderr.String())
	}
	pkgs := map[string]*listed{}
	var module string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("nostub: go list output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("nostub: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs[p.ImportPath] = &p
	}
	// The mains are the packages whose directory is one of mains.
	var findings []Finding
	perPackage := map[string][]Finding{}
	for _, m := range mains {
		abs := filepath.Join(dir, m)
		var main *listed
		for _, p := range pkgs {
			if filepath.Clean(p.Dir) == filepath.Clean(abs) {
				main = p
			}
		}
		if main == nil {
			return nil, fmt.Errorf("nostub: %s is not a package of the module at %s", m, dir)
		}
		if main.Module != nil {
			module = main.Module.Path
		}
		for _, path := range append([]string{main.ImportPath}, main.Deps...) {
			p := pkgs[path]
			if p == nil || p.Standard || p.Module == nil || p.Module.Path != module {
				continue
			}
			fs, ok := perPackage[path]
			if !ok {
				if fs, err = inspect(p, module); err != nil {
					return nil, err
				}
				perPackage[path] = fs
			}
			for _, f := range fs {
				f.Main = m
				findings = append(findings, f)
			}
		}
	}
	sort.Slice(findings, func(i, j int) bool { return findings[i].String() < findings[j].String() })
	return findings, nil
}

// inspect looks at one of the module's packages.
func inspect(p *listed, module string) ([]Finding, error) {
	var out []Finding
	rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
	for _, el := range strings.Split(rel, "/") {
		if el != "testdata" && doubleElement.MatchString(el) {
			out = append(out, Finding{Package: p.ImportPath, What: fmt.Sprintf("package path element %q names a test double", el)})
			break
		}
	}
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		path := filepath.Join(p.Dir, name)
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("nostub: %w", err)
		}
		report := func(pos token.Pos, what string) {
			out = append(out, Finding{Package: p.ImportPath, Where: fmt.Sprintf("%s:%d", filepath.Join(rel, name), fset.Position(pos).Line), What: what})
		}
		check := func(id *ast.Ident, doc *ast.CommentGroup, kind string) {
			switch {
			case doubleName.MatchString(id.Name):
				report(id.Pos(), fmt.Sprintf("%s %s is named as a test double", kind, id.Name))
			case doc != nil && stubDoc.MatchString(doc.Text()):
				report(id.Pos(), fmt.Sprintf("%s %s is documented as a stub: %q", kind, id.Name, strings.TrimSpace(doc.Text())))
			}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				kind := "function"
				if d.Recv != nil {
					kind = "method"
				}
				check(d.Name, d.Doc, kind)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						check(s.Name, docOf(s.Doc, d.Doc), "type")
					case *ast.ValueSpec:
						for _, n := range s.Names {
							check(n, docOf(s.Doc, d.Doc), d.Tok.String())
						}
					}
				}
			}
		}
	}
	return out, nil
}

func docOf(own, group *ast.CommentGroup) *ast.CommentGroup {
	if own != nil {
		return own
	}
	return group
}
