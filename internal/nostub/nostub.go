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
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
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

// Scan reports the stand-ins linked into each main package of mains
// (directories relative to dir, the module root, e.g. "lambdas/preparar-pedido").
func Scan(ctx context.Context, dir string, mains []string) ([]Finding, error) {
	if len(mains) == 0 {
		return nil, errors.New("nostub: no main packages to scan")
	}
	cfg := &packages.Config{Context: ctx, Dir: dir, BuildFlags: []string{"-tags", "lambda.norpc"},
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps | packages.NeedModule,
		Env:  append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0", "GOFLAGS=-mod=mod")}
	patterns := make([]string, len(mains))
	for i, m := range mains {
		patterns[i] = "./" + filepath.ToSlash(filepath.Clean(m))
	}
	roots, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, fmt.Errorf("nostub: %w", err)
	}
	byDir := map[string]*packages.Package{}
	for _, r := range roots {
		if len(r.GoFiles) > 0 {
			byDir[filepath.Dir(r.GoFiles[0])] = r
		}
	}
	var findings []Finding
	perPackage := map[string][]Finding{}
	for _, m := range mains {
		root := byDir[filepath.Join(dir, m)]
		if root == nil || root.Module == nil {
			return nil, fmt.Errorf("nostub: %s is not a package of the module at %s", m, dir)
		}
		module := root.Module.Path
		packages.Visit([]*packages.Package{root}, nil, func(p *packages.Package) {
			if len(p.Errors) > 0 && err == nil {
				err = fmt.Errorf("nostub: %s: %v", p.PkgPath, p.Errors[0])
			}
			if err != nil || p.Module == nil || p.Module.Path != module {
				return
			}
			fs, ok := perPackage[p.PkgPath]
			if !ok {
				if fs, err = inspect(p, module); err != nil {
					return
				}
				perPackage[p.PkgPath] = fs
			}
			for _, f := range fs {
				f.Main = m
				findings = append(findings, f)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(findings, func(i, j int) bool { return findings[i].String() < findings[j].String() })
	return findings, nil
}

// inspect looks at one of the module's packages.
func inspect(p *packages.Package, module string) ([]Finding, error) {
	var out []Finding
	rel := strings.TrimPrefix(strings.TrimPrefix(p.PkgPath, module), "/")
	for _, el := range strings.Split(rel, "/") {
		if el != "testdata" && doubleElement.MatchString(el) {
			out = append(out, Finding{Package: p.PkgPath, What: fmt.Sprintf("package path element %q names a test double", el)})
			break
		}
	}
	fset := token.NewFileSet()
	for _, path := range p.GoFiles {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("nostub: %w", err)
		}
		report := func(pos token.Pos, what string) {
			out = append(out, Finding{Package: p.PkgPath, Where: fmt.Sprintf("%s:%d", filepath.Join(rel, filepath.Base(path)), fset.Position(pos).Line), What: what})
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
