package reachability

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Resource is one resource of a template.
type Resource struct {
	Stack      string
	LogicalID  string
	Type       string
	Properties map[string]any
	Metadata   map[string]any
}

// Path is the resource's construct path (aws:cdk:path), or stack/logical id.
func (r *Resource) Path() string {
	if p, ok := r.Metadata["aws:cdk:path"].(string); ok {
		return p
	}
	return r.Stack + "/" + r.LogicalID
}

// Prop returns a top-level property.
func (r *Resource) Prop(name string) any { return r.Properties[name] }

// Templates are the stacks of one environment. References resolve to
// "stack/logical id" (so a reference from any stack, Fn::ImportValue
// included, names the same resource), a VPC's or subnet's CidrBlock
// attribute to its value; Fn::Join, Fn::Select, Fn::Sub without a variable
// map and the pseudo parameters are evaluated. It is the little of
// internal/cfnlocal this rule needs: a construct package does not link the
// test infrastructure.
type Templates struct {
	// Region answers AWS::Region and names the endpoints' services.
	Account, Region string
	stacks          map[string]map[string]*Resource
	exports         map[string]export
}

type export struct {
	stack string
	value any
}

// New returns empty templates of account and region: Add the stacks.
func New(account, region string) *Templates {
	return &Templates{Account: account, Region: region, stacks: map[string]map[string]*Resource{}, exports: map[string]export{}}
}

// LoadDir adds every "<stack>-<env>.template.json" of dir.
func LoadDir(dir, env, account, region string) (*Templates, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*-"+env+".template.json"))
	if len(files) == 0 {
		return nil, fmt.Errorf("reachability: no template of environment %q in %s", env, dir)
	}
	t := New(account, region)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := t.Add(strings.TrimSuffix(filepath.Base(f), ".template.json"), raw); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Add adds one stack's template (JSON).
func (t *Templates) Add(stack string, raw []byte) error {
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
		return fmt.Errorf("reachability: %s: %w", stack, err)
	}
	rs := map[string]*Resource{}
	for id, r := range doc.Resources {
		rs[id] = &Resource{Stack: stack, LogicalID: id, Type: r.Type, Properties: r.Properties, Metadata: r.Metadata}
	}
	t.stacks[stack] = rs
	for _, o := range doc.Outputs {
		if o.Export.Name != "" {
			t.exports[o.Export.Name] = export{stack: stack, value: o.Value}
		}
	}
	return nil
}

// Resources returns the resources of type typ, by stack then logical id.
func (t *Templates) Resources(typ string) []*Resource {
	var out []*Resource
	for _, s := range slices.Sorted(maps.Keys(t.stacks)) {
		for _, id := range slices.Sorted(maps.Keys(t.stacks[s])) {
			if r := t.stacks[s][id]; r.Type == typ {
				out = append(out, r)
			}
		}
	}
	return out
}

// Resource returns the resource id of stack.
func (t *Templates) Resource(stack, id string) (*Resource, bool) {
	r, ok := t.stacks[stack][id]
	return r, ok
}

// resolveString evaluates v (a value of a resource of stack) to a string.
func (t *Templates) resolveString(stack string, v any) (string, error) {
	r, err := t.resolve(stack, v)
	if err != nil {
		return "", err
	}
	switch x := r.(type) {
	case string:
		return x, nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	return "", fmt.Errorf("reachability: %v is not a string", r)
}

func (t *Templates) resolve(stack string, v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for fn, arg := range x {
				if fn == "Ref" || strings.HasPrefix(fn, "Fn::") {
					return t.intrinsic(stack, fn, arg)
				}
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := t.resolve(stack, e)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := t.resolve(stack, e)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

func (t *Templates) pseudo(name string) (string, bool) {
	switch name {
	case "AWS::AccountId":
		return t.Account, true
	case "AWS::Region":
		return t.Region, true
	case "AWS::Partition":
		return "aws", true
	case "AWS::URLSuffix":
		return "amazonaws.com", true
	}
	return "", false
}

func (t *Templates) ref(stack, id, attr string) (string, error) {
	if attr == "" {
		if p, ok := t.pseudo(id); ok {
			return p, nil
		}
	}
	r, ok := t.Resource(stack, id)
	if !ok {
		return "", fmt.Errorf("reachability: %s: no resource %q", stack, id)
	}
	if attr == "CidrBlock" {
		if c, ok := r.Prop("CidrBlock").(string); ok {
			return c, nil
		}
	}
	return stack + "/" + id, nil
}

func (t *Templates) intrinsic(stack, fn string, arg any) (any, error) {
	bad := fmt.Errorf("reachability: %s: malformed or unsupported %s %v", stack, fn, arg)
	switch fn {
	case "Ref":
		id, _ := arg.(string)
		return t.ref(stack, id, "")
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
		if attr == "" {
			return nil, bad
		}
		return t.ref(stack, id, attr)
	case "Fn::ImportValue":
		name, err := t.resolveString(stack, arg)
		if err != nil {
			return nil, err
		}
		e, ok := t.exports[name]
		if !ok {
			return nil, fmt.Errorf("reachability: no stack exports %q", name)
		}
		return t.resolve(e.stack, e.value)
	case "Fn::Join":
		x, ok := arg.([]any)
		if !ok || len(x) != 2 {
			return nil, bad
		}
		sep, _ := x[0].(string)
		list, err := t.resolve(stack, x[1])
		if err != nil {
			return nil, err
		}
		parts, ok := list.([]any)
		if !ok {
			return nil, bad
		}
		ss := make([]string, len(parts))
		for i, p := range parts {
			if ss[i], err = t.resolveString(stack, p); err != nil {
				return nil, err
			}
		}
		return strings.Join(ss, sep), nil
	case "Fn::Select":
		x, ok := arg.([]any)
		if !ok || len(x) != 2 {
			return nil, bad
		}
		idx, err := t.resolveString(stack, x[0])
		if err != nil {
			return nil, err
		}
		list, err := t.resolve(stack, x[1])
		if err != nil {
			return nil, err
		}
		l, _ := list.([]any)
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 || i >= len(l) {
			return nil, bad
		}
		return l[i], nil
	case "Fn::Sub":
		tpl, ok := arg.(string)
		if !ok {
			return nil, bad
		}
		var b strings.Builder
		for {
			i := strings.Index(tpl, "${")
			j := strings.Index(tpl[max(i, 0):], "}")
			if i < 0 || j < 0 {
				b.WriteString(tpl)
				return b.String(), nil
			}
			b.WriteString(tpl[:i])
			name := tpl[i+2 : i+j]
			if strings.HasPrefix(name, "!") {
				b.WriteString("${" + name[1:] + "}")
			} else {
				id, attr, _ := strings.Cut(name, ".")
				s, err := t.ref(stack, id, attr)
				if err != nil {
					return nil, err
				}
				b.WriteString(s)
			}
			tpl = tpl[i+j+1:]
		}
	}
	return nil, bad
}
