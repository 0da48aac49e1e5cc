package models

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The models name what they take from the code in comments:
//
//	#define X 30000 /* code: pkg.Name */      X is the constant Name (a duration in
//	                                          ms when X ends in _MS), or the default
//	                                          setDefaults gives the field Name of a
//	                                          Config (pkg.Config.Field)
//	mtype:m = { A, B } /* code: pkg.N pkg.M */ the constants' strings are names of m
//	/* code-text pkg: TEXT */                  TEXT is still in pkg's source
//
// where pkg is a package under lambdas/. TestModelsMirrorTheCode fails when
// the code no longer says what its model took from it.
var (
	reDefine = regexp.MustCompile(`^#define\s+(\w+)\s+(-?\d+)\s*/\*\s*code:\s*([\w.]+)[^*]*\*/`)
	reMtype  = regexp.MustCompile(`^mtype(?::\w+)?\s*=\s*\{([^}]*)\}\s*/\*\s*code:\s*([^*]+)\*/`)
	reText   = regexp.MustCompile(`^/\*\s*code-text\s+(\w+):\s*(.*?)\s*\*/$`)
)

func TestModelsMirrorTheCode(t *testing.T) {
	files, err := filepath.Glob("*.pml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no models: %v", err)
	}
	pkgs := map[string]*goPackage{}
	pkg := func(name string) *goPackage {
		if p, ok := pkgs[name]; ok {
			return p
		}
		p, err := loadPackage(filepath.Join("..", "lambdas", name))
		if err != nil {
			t.Fatalf("the code a model mirrors: %v", err)
		}
		pkgs[name] = p
		return p
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			claims := 0
			for i, line := range strings.Split(string(src), "\n") {
				line = strings.TrimSpace(line)
				at := f + ":" + strconv.Itoa(i+1)
				switch {
				case reDefine.MatchString(line):
					m := reDefine.FindStringSubmatch(line)
					claims++
					name, want, ref := m[1], m[2], m[3]
					p, rest, _ := strings.Cut(ref, ".")
					v, err := pkg(p).value(rest)
					if err != nil {
						t.Errorf("%s: %s: %v", at, ref, err)
						continue
					}
					if strings.HasSuffix(name, "_MS") {
						if d, ok := v.(int64); ok {
							v = d / int64(time.Millisecond)
						}
					}
					if got := strconv.FormatInt(asInt(v), 10); got != want || !isInt(v) {
						t.Errorf("%s: #define %s %s, but %s is %v in the code: update the model (and its README figures) with the code", at, name, want, ref, v)
					}
				case reMtype.MatchString(line):
					m := reMtype.FindStringSubmatch(line)
					names := map[string]bool{}
					for _, n := range strings.Split(m[1], ",") {
						names[strings.TrimSpace(n)] = true
					}
					for _, ref := range strings.Fields(m[2]) {
						claims++
						p, rest, _ := strings.Cut(ref, ".")
						v, err := pkg(p).value(rest)
						if err != nil {
							t.Errorf("%s: %s: %v", at, ref, err)
							continue
						}
						if s, ok := v.(string); !ok || !names[s] {
							t.Errorf("%s: %s is %v in the code, not a name of the model's mtype {%s}", at, ref, v, m[1])
						}
					}
				case reText.MatchString(line):
					m := reText.FindStringSubmatch(line)
					claims++
					if !strings.Contains(pkg(m[1]).text, m[2]) {
						t.Errorf("%s: lambdas/%s no longer says %q: update the model with the code", at, m[1], m[2])
					}
				case strings.Contains(line, "code:") || strings.Contains(line, "code-text"):
					t.Errorf("%s: a code reference the test cannot read: %s", at, line)
				}
			}
			if claims == 0 {
				t.Errorf("%s names nothing it takes from the code", f)
			}
		})
	}
}

func isInt(v any) bool { _, ok := v.(int64); return ok }

func asInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

// goPackage is the non-test source of one package: its text, its
// constants and its setDefaults assignments.
type goPackage struct {
	dir      string
	text     string
	consts   map[string]constSpec
	defaults map[string]ast.Expr // Config field -> the default setDefaults gives it
}

type constSpec struct {
	expr ast.Expr
	iota int64
}

func loadPackage(dir string) (*goPackage, error) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(paths) == 0 {
		return nil, &os.PathError{Op: "read", Path: dir, Err: os.ErrNotExist}
	}
	p := &goPackage{dir: dir, consts: map[string]constSpec{}, defaults: map[string]ast.Expr{}}
	var text strings.Builder
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		text.Write(src)
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				if d.Tok != token.CONST {
					continue
				}
				var last []ast.Expr
				for i, s := range d.Specs {
					vs := s.(*ast.ValueSpec)
					if len(vs.Values) > 0 {
						last = vs.Values
					}
					for j, n := range vs.Names {
						if j < len(last) {
							p.consts[n.Name] = constSpec{expr: last[j], iota: int64(i)}
						}
					}
				}
			case *ast.FuncDecl:
				if d.Name.Name != "setDefaults" || d.Body == nil {
					continue
				}
				ast.Inspect(d.Body, func(n ast.Node) bool {
					as, ok := n.(*ast.AssignStmt)
					if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
						return true
					}
					sel, ok := as.Lhs[0].(*ast.SelectorExpr)
					call, ok2 := as.Rhs[0].(*ast.CallExpr)
					if ok && ok2 && len(call.Args) == 2 { // c.F = cmp.Or(c.F, default)
						p.defaults[sel.Sel.Name] = call.Args[1]
					}
					return true
				})
			}
		}
	}
	p.text = text.String()
	return p, nil
}

// value is the constant name, or with "Config.Field" the default of Field.
func (p *goPackage) value(name string) (any, error) {
	if field, ok := strings.CutPrefix(name, "Config."); ok {
		e, ok := p.defaults[field]
		if !ok {
			return nil, fmt.Errorf("no default for Config.%s in %s's setDefaults", field, p.dir)
		}
		return p.eval(e, 0)
	}
	c, ok := p.consts[name]
	if !ok {
		return nil, fmt.Errorf("no constant %s in %s", name, p.dir)
	}
	return p.eval(c.expr, c.iota)
}

var durations = map[string]int64{
	"Nanosecond": int64(time.Nanosecond), "Microsecond": int64(time.Microsecond), "Millisecond": int64(time.Millisecond),
	"Second": int64(time.Second), "Minute": int64(time.Minute), "Hour": int64(time.Hour),
}

// eval evaluates the constant expressions the models refer to: literals,
// the package's constants, iota, time units, c.Field (a Config default)
// and + - * / between integers.
func (p *goPackage) eval(e ast.Expr, iota int64) (any, error) {
	switch e := e.(type) {
	case *ast.BasicLit:
		switch e.Kind {
		case token.INT:
			return strconv.ParseInt(e.Value, 0, 64)
		case token.STRING:
			return strconv.Unquote(e.Value)
		}
	case *ast.ParenExpr:
		return p.eval(e.X, iota)
	case *ast.Ident:
		if e.Name == "iota" {
			return iota, nil
		}
		return p.value(e.Name)
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && x.Name == "time" {
			if d, ok := durations[e.Sel.Name]; ok {
				return d, nil
			}
		}
		return p.value("Config." + e.Sel.Name)
	case *ast.BinaryExpr:
		x, err := p.eval(e.X, iota)
		if err != nil {
			return nil, err
		}
		y, err := p.eval(e.Y, iota)
		if err != nil {
			return nil, err
		}
		a, ok1 := x.(int64)
		b, ok2 := y.(int64)
		if ok1 && ok2 {
			switch e.Op {
			case token.ADD:
				return a + b, nil
			case token.SUB:
				return a - b, nil
			case token.MUL:
				return a * b, nil
			case token.QUO:
				if b != 0 {
					return a / b, nil
				}
			case token.SHL:
				return a << b, nil
			}
		}
	}
	return nil, fmt.Errorf("cannot evaluate %T in %s", e, p.dir)
}
