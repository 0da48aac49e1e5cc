// Package cfntemplate reads the CloudFormation templates the CDK app
// synthesizes for one environment (an App of stacks) and evaluates their
// intrinsic functions: Ref, Fn::GetAtt, Fn::Join, Fn::Select, Fn::Split,
// Fn::Sub, Fn::ImportValue (across the App's stacks) and the pseudo
// parameters. What a Ref or Fn::GetAtt of a resource means is the caller's
// (Locals); Render does the same for a value of an in-memory stack, asking
// a callback for every reference. A reference nobody knows, or an intrinsic
// it does not implement, is an error wrapping ErrUnresolvable that names it,
// never a guess. It is the one template resolver: synth-time rules
// (constructs/reachability, constructs/guardrails), the local end-to-end
// world (internal/cfnlocal) and the operator tools all use it.
package cfntemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrUnresolvable is wrapped by every evaluation error.
var ErrUnresolvable = errors.New("cfntemplate: cannot resolve")

// Keys of the template metadata the app's constructs write on a resource and
// its tools and rules read: one place for both sides.
const (
	// MetadataEntry: a Go function's entry ("lambdas/preparar-pedido"),
	// written by constructs/golambda.
	MetadataEntry = "mercadofresco:entry"
	// MetadataDependencies: a function's declared dependencies
	// (golambda.Props.Dependencies), read by the attempts and reachability rules.
	MetadataDependencies = "mercadofresco:dependencies"
	// MetadataProduces and MetadataAccepts: the event contracts a resource
	// declares (constructs/contract).
	MetadataProduces = "mercadofresco:produces"
	MetadataAccepts  = "mercadofresco:accepts"
)

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
		return nil, fmt.Errorf("cfntemplate: no template of environment %q in %s", env, dir)
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

// Add adds one stack's template (JSON).
func (a *App) Add(stack string, raw []byte) error {
	var doc struct {
		Resources map[string]struct {
			Type       string         `json:"Type"`
			Properties map[string]any `json:"Properties"`
			Metadata   map[string]any `json:"Metadata"`
		} `json:"Resources"`
		Outputs map[string]struct {
			Value  any `json:"Value"`
			Export struct {
				Name string `json:"Name"`
			} `json:"Export"`
		} `json:"Outputs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("cfntemplate: %s: %w", stack, err)
	}
	t := &Template{Stack: stack, Resources: map[string]*Resource{}}
	for id, r := range doc.Resources {
		t.Resources[id] = &Resource{Stack: stack, LogicalID: id, Type: r.Type, Properties: r.Properties, Metadata: r.Metadata}
	}
	a.Templates[stack] = t
	for _, o := range doc.Outputs {
		if o.Export.Name != "" {
			a.exports[o.Export.Name] = export{stack: stack, value: o.Value}
		}
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
// resource of stack) and returns plain JSON values. An Fn::ImportValue
// evaluates the export in its own stack.
func (a *App) Resolve(stack string, v any, locals Locals) (any, error) {
	out, err := Eval(v, func(r Reference) (any, error) {
		if r.Import != "" {
			e, ok := a.exports[r.Import]
			if !ok {
				return nil, fmt.Errorf("%w: in %s: no stack exports %q", ErrUnresolvable, stack, r.Import)
			}
			return a.Resolve(e.stack, e.value, locals)
		}
		if p, ok := a.pseudo(r.LogicalID); ok && r.Attribute == "" {
			return p, nil
		}
		res, ok := a.Resource(stack, r.LogicalID)
		if !ok {
			return nil, fmt.Errorf("%w: in %s: unknown resource %q", ErrUnresolvable, stack, r.LogicalID)
		}
		if r.Attribute == "" {
			return locals.Ref(res)
		}
		return locals.GetAtt(res, r.Attribute)
	})
	return out, err
}

// ResolveString resolves v and requires a string (a number or boolean is
// formatted).
func (a *App) ResolveString(stack string, v any, locals Locals) (string, error) {
	r, err := a.Resolve(stack, v, locals)
	if err != nil {
		return "", err
	}
	return str(r)
}

// ResolveImports returns v with every Fn::ImportValue replaced by the
// string the exporting stack gives it (resolved with locals) and the other
// intrinsics left as they are: the template as the deployed stack holds it.
func (a *App) ResolveImports(stack string, v any, locals Locals) (any, error) {
	return rewrite(v, func(m map[string]any) (any, bool, error) {
		if _, ok := m["Fn::ImportValue"]; !ok || len(m) != 1 {
			return nil, false, nil
		}
		s, err := a.ResolveString(stack, m, locals)
		return s, true, err
	})
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
	}
	return "", false
}
