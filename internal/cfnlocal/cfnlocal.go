// Package cfnlocal reads the CloudFormation templates the CDK app
// synthesizes for one environment and resolves their intrinsic functions
// (Ref, Fn::GetAtt, Fn::Join, Fn::Sub, Fn::Select, Fn::Split,
// Fn::ImportValue and the pseudo parameters) against local stand-ins of the
// resources, so a local run of the whole flow (the end-to-end test) takes its
// routing, configuration and state machine definitions from what would be
// deployed instead of a re-declared copy.
//
// What a Ref or Fn::GetAtt means locally is the caller's decision (the
// Locals interface); an intrinsic or a reference the caller does not know is
// an error that names it, never a silent guess.
package cfnlocal

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ErrUnresolvable is wrapped by Resolve errors.
var ErrUnresolvable = errors.New("cfnlocal: cannot resolve")

// Resource is one resource of a template.
type Resource struct {
	Stack      string
	LogicalID  string
	Type       string
	Properties map[string]any
	Metadata   map[string]any
}

// Path is the resource's construct path (aws:cdk:path metadata), or
// stack/logical id when absent.
func (r *Resource) Path() string {
	if p, ok := r.Metadata["aws:cdk:path"].(string); ok {
		return p
	}
	return r.Stack + "/" + r.LogicalID
}

// Prop returns a top-level property.
func (r *Resource) Prop(name string) any { return r.Properties[name] }

// Template is one stack's template.
type Template struct {
	Stack     string
	Resources map[string]*Resource
	outputs   map[string]map[string]any
}

// App is every stack of one environment.
type App struct {
	// Account, Region and Partition answer the pseudo parameters.
	Account, Region, Partition string
	Templates                  map[string]*Template
	exports                    map[string]export
}

type export struct {
	stack string
	value any
}

// LoadDir loads every "<stack>.template.json" in dir whose stack name ends
// in "-"+env.
func LoadDir(dir, env, account, region string) (*App, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*-"+env+".template.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("cfnlocal: no template of environment %q in %s", env, dir)
	}
	app := New(account, region)
	slices.Sort(files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := app.Add(strings.TrimSuffix(filepath.Base(f), ".template.json"), raw); err != nil {
			return nil, err
		}
	}
	return app, nil
}

// New returns an App of account and region (partition aws) without
// templates: Add them.
func New(account, region string) *App {
	return &App{Account: account, Region: region, Partition: "aws", Templates: map[string]*Template{}, exports: map[string]export{}}
}

// Add adds one stack's template.
func (a *App) Add(stack string, raw []byte) error {
	var doc struct {
		Resources map[string]struct {
			Type       string         `json:"Type"`
			Properties map[string]any `json:"Properties"`
			Metadata   map[string]any `json:"Metadata"`
		} `json:"Resources"`
		Outputs map[string]map[string]any `json:"Outputs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("cfnlocal: %s: %w", stack, err)
	}
	t := &Template{Stack: stack, Resources: map[string]*Resource{}, outputs: doc.Outputs}
	for id, r := range doc.Resources {
		t.Resources[id] = &Resource{Stack: stack, LogicalID: id, Type: r.Type, Properties: r.Properties, Metadata: r.Metadata}
	}
	a.Templates[stack] = t
	for _, o := range doc.Outputs {
		exp, _ := o["Export"].(map[string]any)
		name, ok := exp["Name"].(string)
		if !ok {
			continue
		}
		a.exports[name] = export{stack: stack, value: o["Value"]}
	}
	return nil
}

// Resources returns the resources of type typ across stacks, in a stable
// order (stack, then logical id).
func (a *App) Resources(typ string) []*Resource {
	var out []*Resource
	for _, s := range slices.Sorted(maps.Keys(a.Templates)) {
		t := a.Templates[s]
		for _, id := range slices.Sorted(maps.Keys(t.Resources)) {
			if r := t.Resources[id]; r.Type == typ {
				out = append(out, r)
			}
		}
	}
	return out
}

// Resource returns the resource of stack with logical id id.
func (a *App) Resource(stack, id string) (*Resource, bool) {
	t, ok := a.Templates[stack]
	if !ok {
		return nil, false
	}
	r, ok := t.Resources[id]
	return r, ok
}

// Locals gives the local meaning of references.
type Locals interface {
	// Ref is the value of {"Ref": r}.
	Ref(r *Resource) (string, error)
	// GetAtt is the value of {"Fn::GetAtt": [r, attr]}.
	GetAtt(r *Resource, attr string) (string, error)
}

// Resolve evaluates the intrinsic functions in v (a property value of a
// resource of stack) and returns plain JSON values.
func (a *App) Resolve(stack string, v any, locals Locals) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				if k == "Ref" || strings.HasPrefix(k, "Fn::") {
					return a.intrinsic(stack, k, arg, locals)
				}
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := a.Resolve(stack, e, locals)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := a.Resolve(stack, e, locals)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	default:
		return v, nil
	}
}

// ResolveString resolves v and requires a string.
func (a *App) ResolveString(stack string, v any, locals Locals) (string, error) {
	r, err := a.Resolve(stack, v, locals)
	if err != nil {
		return "", err
	}
	switch s := r.(type) {
	case string:
		return s, nil
	case float64:
		return strconv.FormatFloat(s, 'f', -1, 64), nil
	case bool:
		return strconv.FormatBool(s), nil
	}
	return "", fmt.Errorf("%w: %v is not a string", ErrUnresolvable, r)
}

func (a *App) pseudo(name string) (string, bool) {
	switch name {
	case "AWS::AccountId":
		return a.Account, true
	case "AWS::Region":
		return a.Region, true
	case "AWS::Partition":
		return a.Partition, true
	case "AWS::URLSuffix":
		return "amazonaws.com", true
	case "AWS::StackName":
		return "", false
	}
	return "", false
}

func (a *App) intrinsic(stack, fn string, arg any, locals Locals) (any, error) {
	fail := func(format string, args ...any) (any, error) {
		return nil, fmt.Errorf("%w: %s in %s: %s", ErrUnresolvable, fn, stack, fmt.Sprintf(format, args...))
	}
	switch fn {
	case "Ref":
		name, _ := arg.(string)
		if p, ok := a.pseudo(name); ok {
			return p, nil
		}
		r, ok := a.Resource(stack, name)
		if !ok {
			return fail("unknown resource %q", name)
		}
		return locals.Ref(r)
	case "Fn::GetAtt":
		var id, attr string
		switch x := arg.(type) {
		case []any:
			if len(x) == 2 {
				id, _ = x[0].(string)
				attr, _ = x[1].(string)
			}
		case string:
			id, attr, _ = strings.Cut(x, ".")
		}
		r, ok := a.Resource(stack, id)
		if !ok || attr == "" {
			return fail("%v", arg)
		}
		return locals.GetAtt(r, attr)
	case "Fn::ImportValue":
		name, err := a.ResolveString(stack, arg, locals)
		if err != nil {
			return nil, err
		}
		e, ok := a.exports[name]
		if !ok {
			return fail("no stack exports %q", name)
		}
		return a.Resolve(e.stack, e.value, locals)
	case "Fn::Join":
		x, ok := arg.([]any)
		if !ok || len(x) != 2 {
			return fail("%v", arg)
		}
		sep, _ := x[0].(string)
		list, err := a.Resolve(stack, x[1], locals)
		if err != nil {
			return nil, err
		}
		parts, ok := list.([]any)
		if !ok {
			return fail("not a list: %v", list)
		}
		ss := make([]string, len(parts))
		for i, p := range parts {
			s, err := a.ResolveString(stack, p, locals)
			if err != nil {
				return nil, err
			}
			ss[i] = s
		}
		return strings.Join(ss, sep), nil
	case "Fn::Select":
		x, ok := arg.([]any)
		if !ok || len(x) != 2 {
			return fail("%v", arg)
		}
		idx, err := a.ResolveString(stack, x[0], locals)
		if err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(idx)
		if err != nil {
			return fail("index %q", idx)
		}
		list, err := a.Resolve(stack, x[1], locals)
		if err != nil {
			return nil, err
		}
		l, ok := list.([]any)
		if !ok || i < 0 || i >= len(l) {
			return fail("index %d of %v", i, list)
		}
		return l[i], nil
	case "Fn::Split":
		x, ok := arg.([]any)
		if !ok || len(x) != 2 {
			return fail("%v", arg)
		}
		sep, _ := x[0].(string)
		s, err := a.ResolveString(stack, x[1], locals)
		if err != nil {
			return nil, err
		}
		var out []any
		for _, p := range strings.Split(s, sep) {
			out = append(out, p)
		}
		return out, nil
	case "Fn::Sub":
		var tpl string
		vars := map[string]any{}
		switch x := arg.(type) {
		case string:
			tpl = x
		case []any:
			if len(x) != 2 {
				return fail("%v", arg)
			}
			tpl, _ = x[0].(string)
			m, _ := x[1].(map[string]any)
			for k, v := range m {
				r, err := a.ResolveString(stack, v, locals)
				if err != nil {
					return nil, err
				}
				vars[k] = r
			}
		}
		var subErr error
		out := subVar.ReplaceAllStringFunc(tpl, func(m string) string {
			name := m[2 : len(m)-1]
			if v, ok := vars[name]; ok {
				return v.(string)
			}
			if p, ok := a.pseudo(name); ok {
				return p
			}
			id, attr, hasAttr := strings.Cut(name, ".")
			r, ok := a.Resource(stack, id)
			if !ok {
				subErr = fmt.Errorf("%w: Fn::Sub in %s: unknown %q", ErrUnresolvable, stack, name)
				return m
			}
			var s string
			var err error
			if hasAttr {
				s, err = locals.GetAtt(r, attr)
			} else {
				s, err = locals.Ref(r)
			}
			if err != nil {
				subErr = err
			}
			return s
		})
		if subErr != nil {
			return nil, subErr
		}
		return out, nil
	}
	return fail("unsupported intrinsic function")
}

var subVar = regexp.MustCompile(`\$\{[^!][^}]*\}`)
