// Package synthesized is the one model of the synthesized app: Load reads a
// cloud assembly (manifest.json, the templates and the construct metadata
// the manifest carries), or a directory of templates, once, and splits its
// stacks by environment (the stack name's suffix after its last "-"). An
// App is one environment: its resources with their construct paths, the
// stacks' dependencies, the intrinsic functions resolved (Fn::ImportValue
// across its stacks), the resource a reference names (Find), what a
// reference means in AWS or on a local endpoint (Physical), and the graph
// of who sends what to whom (Edges). A reference nobody knows, or an
// intrinsic it does not implement, is an error wrapping ErrUnresolvable,
// never a guess. The synth-time rules, the operator tools and the local
// end-to-end run read the app through it.
package synthesized

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mercadofresco/integration/config"
)

// ErrUnresolvable is wrapped by every evaluation error.
var ErrUnresolvable = errors.New("synthesized: cannot resolve")

// Keys of the metadata the app's constructs write and the checks and tools
// read: one place for both sides. The first five are template metadata of a
// resource; the last two construct metadata, which the manifest carries.
const (
	// MetadataEntry: a Go function's entry ("lambdas/preparar-pedido").
	MetadataEntry = "mercadofresco:entry"
	// MetadataDependencies: a function's declared dependencies
	// (golambda.Props.Dependencies).
	MetadataDependencies = "mercadofresco:dependencies"
	// MetadataProduces and MetadataAccepts: the event contracts a resource
	// declares (constructs/core).
	MetadataProduces = "mercadofresco:produces"
	MetadataAccepts  = "mercadofresco:accepts"
	// MetadataOutsideConnections: on an RDS Proxy, the connections writers
	// outside the app open through it, by name (outbox.DatabaseProps).
	MetadataOutsideConnections = "mercadofresco:outside-connections"
	// MetadataAcknowledged: {"rule", "reason"}: a check's rule does not
	// apply to the construct and its children (core.Acknowledge).
	MetadataAcknowledged = "mercadofresco:acknowledged"
	// MetadataSetBy + property: the source constant that sets a property
	// of the construct's resources (core.SetBy).
	MetadataSetBy = "mercadofresco:set-by:"
)

// Declaration is one event contract a resource declares under
// MetadataProduces or MetadataAccepts (constructs/core writes them, the
// checks read them): an event type with its major versions; for a
// producer, To is the construct path of the destination's L1 resource (""
// when the resource's own targets say where it goes) and Source the
// event's source on a bus.
type Declaration struct {
	Type     string `json:"type"`
	Versions []int  `json:"versions"`
	To       string `json:"to,omitempty"`
	Source   string `json:"source,omitempty"`
}

// Declarations reads the declarations of a metadata value (none when it
// holds none).
func Declarations(v any) []Declaration {
	raw, _ := json.Marshal(v)
	var out []Declaration
	_ = json.Unmarshal(raw, &out)
	return out
}

// NoEgress is the egress rule the CDK writes for a security group that
// lets nothing out (AllowAllOutbound false, no rule): ICMP type 252 code 86
// to 255.255.255.255/32, which matches no traffic. It is not a rule
// anything uses.
var NoEgress = map[string]any{"CidrIp": "255.255.255.255/32", "Description": "Disallow all traffic", "IpProtocol": "icmp", "FromPort": 252, "ToPort": 86}

// Resource is one resource of a template.
type Resource struct {
	Stack      string
	LogicalID  string
	Type       string
	Properties map[string]any
	Metadata   map[string]any
	path       string // the construct path the manifest gives the logical id
}

// Path is the resource's construct path (its aws:cdk:path metadata, or
// the manifest's), or stack/logical id when neither says.
func (r *Resource) Path() string {
	if p, ok := r.Metadata["aws:cdk:path"].(string); ok {
		return p
	}
	if r.path != "" {
		return r.path
	}
	return r.Stack + "/" + r.LogicalID
}

// Prop returns a top-level property.
func (r *Resource) Prop(name string) any { return r.Properties[name] }

// Stack is one stack's template and what the manifest says of it.
type Stack struct {
	Name      string
	Resources map[string]*Resource
	// Template is the whole template as decoded (its resources' maps are
	// those of Resources).
	Template map[string]any
	// DependsOn are the stacks it deploys after, as the manifest says
	// (declared, and those its imports add).
	DependsOn []string
	imports   []string // the exports it imports
}

// Entry is one construct metadata entry of the manifest.
type Entry struct {
	Type string `json:"type"`
	Data any    `json:"data"`
}

// App is every stack of one environment.
type App struct {
	Env string
	// Account, Region and Partition answer the pseudo parameters.
	Account, Region, Partition string
	Stacks                     map[string]*Stack
	exports                    map[string]export
	// construct metadata by construct path ("Stack/Construct"), the
	// project's entries only.
	metadata map[string][]Entry
	index    map[string]*Resource // physical names, ARNs, URLs
	graph    *graph
}

type export struct {
	stack string
	value any
}

// Assembly is every environment of a directory.
type Assembly struct {
	Envs []*App // by name
}

// Env is the environment named name, nil when the assembly has none.
func (a *Assembly) Env(name string) *App {
	for _, e := range a.Envs {
		if e.Env == name {
			return e
		}
	}
	return nil
}

// EnvOf is the environment of a stack name: its suffix after the last "-".
func EnvOf(stack string) string { return stack[strings.LastIndex(stack, "-")+1:] }

// New returns an App of account and region (partition aws) without
// templates: Add them.
func New(env, account, region string) *App {
	return &App{Env: env, Account: account, Region: region, Partition: "aws", Stacks: map[string]*Stack{},
		exports: map[string]export{}, metadata: map[string][]Entry{}}
}

type manifest struct {
	Artifacts map[string]struct {
		Type        string `json:"type"`
		Environment string `json:"environment"`
		Properties  struct {
			TemplateFile string `json:"templateFile"`
			StackName    string `json:"stackName"`
		} `json:"properties"`
		Dependencies           []string           `json:"dependencies"`
		Metadata               map[string][]Entry `json:"metadata"`
		AdditionalMetadataFile string             `json:"additionalMetadataFile"`
	} `json:"artifacts"`
}

// Load reads the stacks of dir: a cloud assembly (its manifest.json names
// the templates, environments, dependencies and construct metadata), or a
// directory of "<stack>.template.json" files (the committed snapshots),
// whose environments' accounts and regions come from config.
func Load(dir string) (*Assembly, error) {
	asm := &Assembly{}
	add := func(stack, account, region string, raw []byte) (*App, error) {
		app := asm.Env(EnvOf(stack))
		if app == nil {
			app = New(EnvOf(stack), account, region)
			asm.Envs = append(asm.Envs, app)
		}
		return app, app.Add(stack, raw)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		files, err := filepath.Glob(filepath.Join(dir, "*.template.json"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			stack := strings.TrimSuffix(filepath.Base(f), ".template.json")
			env, err := config.Lookup(EnvOf(stack))
			if err != nil {
				return nil, fmt.Errorf("synthesized: %s has no manifest.json: %w", dir, err)
			}
			tpl, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			if _, err := add(stack, env.Account, env.Region, tpl); err != nil {
				return nil, err
			}
		}
	case err != nil:
		return nil, err
	default:
		var m manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("synthesized: %s/manifest.json: %w", dir, err)
		}
		for _, id := range slices.Sorted(maps.Keys(m.Artifacts)) {
			art := m.Artifacts[id]
			if art.Type != "aws:cloudformation:stack" {
				continue
			}
			name := cmp.Or(art.Properties.StackName, id)
			account, region, _ := strings.Cut(strings.TrimPrefix(art.Environment, "aws://"), "/")
			tpl, err := os.ReadFile(filepath.Join(dir, art.Properties.TemplateFile))
			if err != nil {
				return nil, err
			}
			app, err := add(name, account, region, tpl)
			if err != nil {
				return nil, err
			}
			for _, d := range art.Dependencies {
				if m.Artifacts[d].Type == "aws:cloudformation:stack" {
					app.Stacks[name].DependsOn = append(app.Stacks[name].DependsOn, d)
				}
			}
			meta := art.Metadata
			if art.AdditionalMetadataFile != "" {
				raw, err := os.ReadFile(filepath.Join(dir, art.AdditionalMetadataFile))
				if err == nil {
					err = json.Unmarshal(raw, &meta)
				}
				if err != nil {
					return nil, fmt.Errorf("synthesized: %s: %w", art.AdditionalMetadataFile, err)
				}
			}
			for path, entries := range meta {
				p := strings.TrimPrefix(path, "/")
				for _, e := range entries {
					id, _ := e.Data.(string)
					switch r := app.Stacks[name].Resources[id]; {
					case strings.HasPrefix(e.Type, "mercadofresco:"):
						app.metadata[p] = append(app.metadata[p], e)
					case e.Type == "aws:cdk:logicalId" && r != nil:
						r.path = p
					}
				}
			}
		}
	}
	if len(asm.Envs) == 0 {
		return nil, fmt.Errorf("synthesized: no template in %s", dir)
	}
	slices.SortFunc(asm.Envs, func(a, b *App) int { return strings.Compare(a.Env, b.Env) })
	return asm, nil
}

// LoadEnv loads the stacks of environment env from dir (see Load).
func LoadEnv(dir, env string) (*App, error) {
	asm, err := Load(dir)
	if err != nil {
		return nil, err
	}
	if app := asm.Env(env); app != nil {
		return app, nil
	}
	return nil, fmt.Errorf("synthesized: no template of environment %q in %s", env, dir)
}

// Add adds one stack's template (JSON).
func (a *App) Add(stack string, raw []byte) error {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("synthesized: %s: %w", stack, err)
	}
	s := &Stack{Name: stack, Resources: map[string]*Resource{}, Template: doc}
	resources, _ := doc["Resources"].(map[string]any)
	for id, v := range resources {
		r, _ := v.(map[string]any)
		typ, _ := r["Type"].(string)
		props, _ := r["Properties"].(map[string]any)
		meta, _ := r["Metadata"].(map[string]any)
		s.Resources[id] = &Resource{Stack: stack, LogicalID: id, Type: typ, Properties: props, Metadata: meta}
		_, _ = rewrite(props, func(m map[string]any) (any, bool, error) {
			name, ok := m["Fn::ImportValue"].(string)
			if ok {
				s.imports = append(s.imports, name)
			}
			return nil, ok, nil
		})
	}
	a.Stacks[stack] = s
	outputs, _ := doc["Outputs"].(map[string]any)
	for _, v := range outputs {
		o, _ := v.(map[string]any)
		if name, _ := Dig(o, "Export", "Name").(string); name != "" {
			a.exports[name] = export{stack: stack, value: o["Value"]}
		}
	}
	a.index, a.graph = nil, nil
	return nil
}

// StackNames are the stacks' names, sorted.
func (a *App) StackNames() []string { return slices.Sorted(maps.Keys(a.Stacks)) }

// Resources returns the resources of type typ across stacks, in a stable
// order (stack, then logical id); every resource when typ is "".
func (a *App) Resources(typ string) []*Resource {
	var out []*Resource
	for _, s := range a.StackNames() {
		st := a.Stacks[s]
		for _, id := range slices.Sorted(maps.Keys(st.Resources)) {
			if r := st.Resources[id]; typ == "" || r.Type == typ {
				out = append(out, r)
			}
		}
	}
	return out
}

// Resource returns the resource of stack with logical id id.
func (a *App) Resource(stack, id string) (*Resource, bool) {
	s, ok := a.Stacks[stack]
	if !ok {
		return nil, false
	}
	r, ok := s.Resources[id]
	return r, ok
}

// ConstructMetadata is the project's construct metadata on path and on
// each construct above it, the outermost first.
func (a *App) ConstructMetadata(path string) []Entry {
	var out []Entry
	for i := range len(path) + 1 {
		if i == len(path) || path[i] == '/' {
			out = append(out, a.metadata[path[:i]]...)
		}
	}
	return out
}

// DependsOn reports whether stack deploys after other: it depends on it
// (the manifest says so, or it imports one of its exports), directly or
// through the stacks it depends on.
func (a *App) DependsOn(stack, other string) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(s string) bool {
		st := a.Stacks[s]
		if seen[s] || st == nil {
			return false
		}
		seen[s] = true
		deps := slices.Clone(st.DependsOn)
		for _, name := range st.imports {
			deps = append(deps, a.exports[name].stack)
		}
		for _, d := range deps {
			if d == other || walk(d) {
				return true
			}
		}
		return false
	}
	return walk(stack)
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
	return Eval(v, a.ref(stack, locals))
}

// ResolveString resolves v and requires a string (a number or boolean is
// formatted).
func (a *App) ResolveString(stack string, v any, locals Locals) (string, error) {
	return EvalString(v, a.ref(stack, locals))
}

// ref is the value of a reference a resource of stack makes.
func (a *App) ref(stack string, locals Locals) func(Reference) (any, error) {
	return func(r Reference) (any, error) {
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
	}
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
