// Package cfnindex indexes the L1 resources of a synthesised-in-memory stack
// with their resolved properties and follows CloudFormation references
// between them (Ref, Fn::GetAtt, Fn::Join / Fn::Sub over literal names,
// literal ARNs, URLs and names), so synth-time checks (constructs/guardrails)
// can ask "which queue does this redrive policy, alarm or event source
// mapping point at?" without knowing which construct made the resource.
//
// Limits: properties set with raw overrides (AddPropertyOverride) are not
// seen, and references that cross stacks (Fn::ImportValue) cannot be followed.
package cfnindex

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
)

// CloudFormation types the index knows by name.
const (
	TypeQueue        = "AWS::SQS::Queue"
	TypeESM          = "AWS::Lambda::EventSourceMapping"
	TypeFunction     = "AWS::Lambda::Function"
	TypeAlias        = "AWS::Lambda::Alias"
	TypeVersion      = "AWS::Lambda::Version"
	TypeSubscription = "AWS::SNS::Subscription"
	TypeTopic        = "AWS::SNS::Topic"
	TypeAlarm        = "AWS::CloudWatch::Alarm"
)

// DefaultLambdaTimeout is Lambda's timeout (seconds) when a function sets none.
const DefaultLambdaTimeout = 3

// Resource is one L1 resource of the stack with its resolved properties.
type Resource struct {
	// ID is the logical id.
	ID string
	// Type is the CloudFormation type, e.g. "AWS::SQS::Queue".
	Type string
	// Cfn is the L1 construct.
	Cfn awscdk.CfnResource
	// Props are the resolved properties (CDK camelCase keys; read them with
	// Get, which ignores case).
	Props map[string]any

	path  string // the construct path, read once
	owner *Index
}

// Path is the construct path of the resource.
func (r *Resource) Path() string {
	if r.path == "" {
		r.path = *r.Cfn.Node().Path()
	}
	return r.path
}

// StackPath is the construct path of the stack that holds the resource.
func (r *Resource) StackPath() string {
	if r.owner == nil {
		return ""
	}
	return r.owner.StackPath()
}

// Str returns a top-level string property ("" when absent or not a string).
func (r *Resource) Str(key string) string {
	s, _ := Get(r.Props, key).(string)
	return s
}

// Index is the stack's L1 resources, in construct-tree order.
type Index struct {
	Stack awscdk.Stack
	// ByID maps logical ids to resources.
	ByID map[string]*Resource
	// Ordered lists the resources in construct-tree (pre-)order.
	Ordered   []*Resource
	queueName map[string]*Resource // literal physical names
	fnName    map[string]*Resource
	path, env string // read once, on first use
}

// StackPath is the construct path of the stack.
func (ix *Index) StackPath() string {
	if ix.path == "" {
		ix.path = *ix.Stack.Node().Path()
	}
	return ix.path
}

// Environment is the stack's environment ("aws://account/region", with
// tokens when the stack is environment-agnostic).
func (ix *Index) Environment() string {
	if ix.env == "" {
		ix.env = *ix.Stack.Environment()
	}
	return ix.env
}

// Tree is every stack under a root, each with its Index (nested stacks
// have their own), built from one listing of the construct tree.
type Tree struct {
	// Root is the app (the root of the construct tree).
	Root constructs.IConstruct
	// Whole reports whether the tree is the whole app (NewTree of the
	// root), not one stack's.
	Whole bool
	// Indexes are the stacks' indexes, in construct-tree order.
	Indexes []*Index
	byStack map[awscdk.Stack]*Index
}

// Of returns the index of stack, nil when stack is not in the tree.
func (t *Tree) Of(stack awscdk.Stack) *Index { return t.byStack[stack] }

// New indexes the resources of stack (not those of its nested stacks).
func New(stack awscdk.Stack) *Index { return NewTree(stack).Of(stack) }

// NewTree indexes every stack under scope (scope itself when it is one).
//
// It asks jsii as little as it can, since every question is a round trip
// to the Node process (docs/design.md#performance): the tree is listed
// once, stacks and L1 resources are told apart by their Go types, each
// resource's stack is the nearest stack above its path, and the logical
// ids and properties of a stack's resources are resolved in one call. Each
// L1's path and type come from one toString.
func NewTree(scope constructs.IConstruct) *Tree {
	t := &Tree{Root: scope.Node().Root(), byStack: map[awscdk.Stack]*Index{}}
	t.Whole = t.Root == scope
	var open []*Index // the stacks above the current construct, innermost last
	for _, c := range *scope.Node().FindAll(constructs.ConstructOrder_PREORDER) {
		if st, ok := c.(awscdk.Stack); ok {
			ix := &Index{Stack: st, ByID: map[string]*Resource{}, queueName: map[string]*Resource{}, fnName: map[string]*Resource{}}
			open = enclosing(open, ix.StackPath()+"/")
			open = append(open, ix)
			t.Indexes = append(t.Indexes, ix)
			t.byStack[st] = ix
			continue
		}
		cfn, ok := c.(awscdk.CfnResource)
		if !ok {
			continue
		}
		r := &Resource{Cfn: cfn}
		r.path, r.Type = pathAndType(cfn)
		if open = enclosing(open, r.path); len(open) == 0 {
			continue // not in a stack
		}
		r.owner = open[len(open)-1]
		r.owner.Ordered = append(r.owner.Ordered, r)
	}
	for _, ix := range t.Indexes {
		ix.index()
	}
	return t
}

// pathAndType reads an L1's construct path and CloudFormation type in one
// round trip: CfnResource.toString() is "<path> [<type>]". When an L1 says
// something else (a subclass overriding toString), both are asked for.
func pathAndType(cfn awscdk.CfnResource) (path, typ string) {
	s := *cfn.ToString()
	if i := strings.LastIndex(s, " ["); i > 0 && strings.HasSuffix(s, "]") && strings.Contains(s[i+2:], "::") {
		return s[:i], s[i+2 : len(s)-1]
	}
	return *cfn.Node().Path(), *cfn.CfnResourceType()
}

// enclosing drops the stacks of open that do not hold path.
func enclosing(open []*Index, path string) []*Index {
	for len(open) > 0 && !strings.HasPrefix(path, open[len(open)-1].StackPath()+"/") {
		open = open[:len(open)-1]
	}
	return open
}

func (ix *Index) index() {
	ix.resolveAll()
	for _, r := range ix.Ordered {
		ix.ByID[r.ID] = r
		switch r.Type {
		case TypeQueue:
			if n := r.Str("QueueName"); n != "" {
				ix.queueName[n] = r
			}
		case TypeFunction:
			if n := r.Str("FunctionName"); n != "" {
				ix.fnName[n] = r
			}
		}
	}
}

// resolveAll sets every resource's ID and Props with one Resolve of them
// all, falling back to one Resolve per resource when a value cannot be
// resolved (a resource whose properties fail gets empty Props).
func (ix *Index) resolveAll() {
	all := make([]any, len(ix.Ordered))
	for i, r := range ix.Ordered {
		// CfnProperties is the L1's current property bag in CDK (camelCase)
		// form; round-tripping it through RenderProperties from Go breaks
		// on lazy values, so keys are matched case-insensitively instead
		// (see Get).
		all[i] = []any{r.Cfn.LogicalId(), r.Cfn.CfnProperties()}
	}
	if resolved, ok := ix.resolve(all).([]any); ok && len(resolved) == len(all) {
		for i, r := range ix.Ordered {
			pair, _ := resolved[i].([]any)
			if len(pair) == 2 {
				r.ID, _ = pair[0].(string)
				r.Props, _ = pair[1].(map[string]any)
			}
		}
	} else {
		for i, r := range ix.Ordered {
			r.ID, _ = ix.resolve(all[i].([]any)[0]).(string)
			r.Props, _ = ix.resolve(all[i].([]any)[1]).(map[string]any)
		}
	}
	for _, r := range ix.Ordered {
		if r.Props == nil {
			r.Props = map[string]any{}
		}
	}
}

// resolve is Stack.Resolve, nil when it panics.
func (ix *Index) resolve(v any) (out any) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	return ix.Stack.Resolve(v)
}

// Target returns the in-stack resource a resolved value refers to, if any.
func (ix *Index) Target(v any) *Resource {
	switch x := v.(type) {
	case map[string]any:
		if ga, ok := x["Fn::GetAtt"].([]any); ok && len(ga) > 0 {
			id, _ := ga[0].(string)
			return ix.ByID[id]
		}
		if ga, ok := x["Fn::GetAtt"].(string); ok {
			return ix.ByID[strings.SplitN(ga, ".", 2)[0]]
		}
		if id, ok := x["Ref"].(string); ok {
			return ix.ByID[id]
		}
		if j, ok := x["Fn::Join"].([]any); ok && len(j) == 2 {
			parts, _ := j[1].([]any)
			if len(parts) > 0 {
				if last, ok := parts[len(parts)-1].(string); ok {
					if r := ix.ByName(last); r != nil {
						return r
					}
				}
			}
		}
		if s, ok := x["Fn::Sub"].(string); ok {
			if r := ix.ByName(s); r != nil {
				return r
			}
		}
		// Derived values (an alias name is Fn::Join of Fn::Select over the
		// alias ARN, for example): the first reference inside identifies it.
		for k, v := range x {
			if strings.HasPrefix(k, "Fn::") {
				if r := ix.FirstRef(v); r != nil {
					return r
				}
			}
		}
	case string:
		return ix.ByName(x)
	}
	return nil
}

// FirstRef returns the first in-stack resource referenced anywhere in v.
func (ix *Index) FirstRef(v any) *Resource {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["Ref"]; ok {
			return ix.Target(x)
		}
		if _, ok := x["Fn::GetAtt"]; ok {
			return ix.Target(x)
		}
		for _, e := range x {
			if r := ix.FirstRef(e); r != nil {
				return r
			}
		}
	case []any:
		for _, e := range x {
			if r := ix.FirstRef(e); r != nil {
				return r
			}
		}
	}
	return nil
}

// ByName maps an ARN, URL or name (or its literal tail) to a queue or function.
func (ix *Index) ByName(s string) *Resource {
	if strings.Contains(s, ":lambda:") {
		parts := strings.Split(s, ":")
		for i, p := range parts {
			if p == "function" && i+1 < len(parts) {
				return ix.fnName[parts[i+1]]
			}
		}
		return nil
	}
	tail := s[strings.LastIndexAny(s, ":/")+1:]
	if q := ix.queueName[tail]; q != nil {
		return q
	}
	return ix.fnName[tail]
}

// Function follows FunctionName through aliases and versions to the
// CfnFunction and returns it with its timeout.
func (ix *Index) Function(v any) (*Resource, float64) {
	for range 4 {
		r := ix.Target(v)
		if r == nil {
			return nil, 0
		}
		switch r.Type {
		case TypeFunction:
			return r, Num(Get(r.Props, "Timeout"), DefaultLambdaTimeout)
		case TypeAlias, TypeVersion:
			v = Get(r.Props, "FunctionName")
		default:
			return nil, 0
		}
	}
	return nil, 0
}

// Num reads a number (CloudFormation allows numbers as strings), or def.
func Num(v any, def float64) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	case string:
		var f float64
		if _, err := fmt.Sscan(x, &f); err == nil {
			return f
		}
	}
	return def
}

// ContainsString reports whether v is a list holding want.
func ContainsString(v any, want string) bool {
	xs, _ := v.([]any)
	for _, x := range xs {
		if x == want {
			return true
		}
	}
	return false
}

// Get navigates maps by keys compared case-insensitively: L1 properties are
// read in their CDK (camelCase) form, CloudFormation names differ only in case.
func Get(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		val, found := m[k]
		if !found {
			for mk, mv := range m {
				if strings.EqualFold(mk, k) {
					val, found = mv, true
					break
				}
			}
		}
		if !found {
			return nil
		}
		v = val
	}
	return v
}
