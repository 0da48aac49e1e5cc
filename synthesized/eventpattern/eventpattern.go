// Package eventpattern evaluates EventBridge event patterns (also the
// filter criteria of EventBridge Pipes and Lambda event source mappings,
// which use the same syntax) against JSON events, so a local run of the app
// routes events with the patterns of its synthesized templates instead of a
// re-declared copy.
//
// Supported, with EventBridge's semantics: exact values (strings, numbers,
// booleans, null), "prefix", "suffix", "equals-ignore-case", "anything-but"
// (a value, a list of values, or a prefix/suffix), "exists", and "numeric"
// comparisons; nested objects; arrays in the event (a condition matches when
// any element matches). Any other operator ("wildcard", "cidr", "$or", ...)
// makes Compile fail with ErrUnsupported: a local run that silently routed
// differently from AWS would prove nothing.
package eventpattern

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ErrUnsupported is wrapped by Compile for operators this package does not
// evaluate.
var ErrUnsupported = errors.New("eventpattern: unsupported operator")

// ErrInvalid is wrapped by Compile for patterns that are not valid
// EventBridge patterns.
var ErrInvalid = errors.New("eventpattern: invalid pattern")

// Pattern is a compiled event pattern.
type Pattern struct {
	root node
	raw  string
}

// node is an object pattern: every key must match (AND).
type node struct {
	keys     []string
	children map[string]*node     // nested objects
	leaves   map[string][]matcher // value lists (OR)
}

type matcher interface {
	// match reports whether v (a decoded JSON value present in the event)
	// satisfies the condition.
	match(v any) bool
	// onAbsent is the result when the field is missing.
	onAbsent() bool
}

// Compile parses a pattern given as JSON.
func Compile(pattern []byte) (*Pattern, error) {
	var m map[string]any
	if err := json.Unmarshal(pattern, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return CompileValue(m)
}

// CompileValue compiles a pattern already decoded from JSON (as
// encoding/json decodes into any).
func CompileValue(m map[string]any) (*Pattern, error) {
	root, err := compileObject(m, "")
	if err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(m)
	return &Pattern{root: *root, raw: string(raw)}, nil
}

// String is the pattern as JSON.
func (p *Pattern) String() string { return p.raw }

func compileObject(m map[string]any, path string) (*node, error) {
	n := &node{keys: slices.Sorted(maps.Keys(m)), children: map[string]*node{}, leaves: map[string][]matcher{}}
	for _, k := range n.keys {
		p := path + "." + k
		if strings.HasPrefix(k, "$") {
			return nil, fmt.Errorf("%w: %s at %s", ErrUnsupported, k, p)
		}
		switch v := m[k].(type) {
		case map[string]any:
			c, err := compileObject(v, p)
			if err != nil {
				return nil, err
			}
			n.children[k] = c
		case []any:
			if len(v) == 0 {
				return nil, fmt.Errorf("%w: empty list at %s", ErrInvalid, p)
			}
			for _, cond := range v {
				mt, err := compileCondition(cond, p)
				if err != nil {
					return nil, err
				}
				n.leaves[k] = append(n.leaves[k], mt)
			}
		default:
			return nil, fmt.Errorf("%w: %s must be a list of values or an object, got %T", ErrInvalid, p, v)
		}
	}
	return n, nil
}

func compileCondition(c any, path string) (matcher, error) {
	obj, ok := c.(map[string]any)
	if !ok {
		return exact{c}, nil
	}
	if len(obj) != 1 {
		return nil, fmt.Errorf("%w: a condition object at %s must have exactly one operator, got %d", ErrInvalid, path, len(obj))
	}
	for op, arg := range obj {
		switch op {
		case "prefix", "suffix", "equals-ignore-case":
			if s, ok := arg.(string); ok {
				return text{op: op, s: s}, nil
			}
			if op != "equals-ignore-case" {
				if inner, ok := arg.(map[string]any); ok && len(inner) == 1 {
					if s, ok := inner["equals-ignore-case"].(string); ok {
						return text{op: op, s: s, fold: true}, nil
					}
				}
			}
			return nil, fmt.Errorf("%w: %s at %s needs a string", ErrInvalid, op, path)
		case "anything-but":
			return compileAnythingBut(arg, path)
		case "exists":
			b, ok := arg.(bool)
			if !ok {
				return nil, fmt.Errorf("%w: exists at %s needs true or false", ErrInvalid, path)
			}
			return exists(b), nil
		case "numeric":
			return compileNumeric(arg, path)
		default:
			return nil, fmt.Errorf("%w: %q at %s", ErrUnsupported, op, path)
		}
	}
	panic("unreachable")
}

func compileAnythingBut(arg any, path string) (matcher, error) {
	switch a := arg.(type) {
	case []any:
		return anythingBut{values: a}, nil
	case map[string]any:
		if len(a) == 1 {
			for op, v := range a {
				if s, ok := v.(string); ok && (op == "prefix" || op == "suffix") {
					return anythingBut{text: &text{op: op, s: s}}, nil
				}
			}
		}
		return nil, fmt.Errorf("%w: anything-but at %s with %v", ErrUnsupported, path, a)
	default:
		return anythingBut{values: []any{a}}, nil
	}
}

func compileNumeric(arg any, path string) (matcher, error) {
	list, ok := arg.([]any)
	if !ok || len(list) == 0 || len(list)%2 != 0 || len(list) > 4 {
		return nil, fmt.Errorf("%w: numeric at %s needs one or two [operator, number] pairs", ErrInvalid, path)
	}
	var n numeric
	for i := 0; i < len(list); i += 2 {
		op, ok1 := list[i].(string)
		f, ok2 := list[i+1].(float64)
		if !ok1 || !ok2 || !slices.Contains([]string{"=", "<", "<=", ">", ">="}, op) {
			return nil, fmt.Errorf("%w: numeric at %s: %v", ErrInvalid, path, list)
		}
		n = append(n, [2]any{op, f})
	}
	return n, nil
}

// Match reports whether event (a JSON document) matches the pattern.
func (p *Pattern) Match(event []byte) (bool, error) {
	var v map[string]any
	if err := json.Unmarshal(event, &v); err != nil {
		return false, fmt.Errorf("eventpattern: event is not a JSON object: %w", err)
	}
	return p.MatchValue(v), nil
}

// MatchValue matches an event already decoded with encoding/json.
func (p *Pattern) MatchValue(event map[string]any) bool { return p.root.match(event) }

func (n *node) match(obj map[string]any) bool {
	for _, k := range n.keys {
		v, present := obj[k]
		if c, ok := n.children[k]; ok {
			if !present || !matchNested(c, v) {
				return false
			}
			continue
		}
		if !matchLeaf(n.leaves[k], v, present) {
			return false
		}
	}
	return true
}

// matchNested applies an object pattern to a value that may be an object or
// an array of objects (any element may match).
func matchNested(c *node, v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return c.match(x)
	case []any:
		for _, e := range x {
			if m, ok := e.(map[string]any); ok && c.match(m) {
				return true
			}
		}
	}
	return false
}

// matchLeaf applies a list of conditions (OR) to a value; an object
// matches none (conditions apply to leaf values only).
func matchLeaf(conds []matcher, v any, present bool) bool {
	leaf := func(c matcher, v any) bool { _, isObj := v.(map[string]any); return !isObj && c.match(v) }
	for _, c := range conds {
		if !present {
			if c.onAbsent() {
				return true
			}
			continue
		}
		if arr, ok := v.([]any); ok {
			if _, isExists := c.(exists); isExists {
				if c.match(arr) {
					return true
				}
				continue
			}
			for _, e := range arr {
				if leaf(c, e) {
					return true
				}
			}
			continue
		}
		if leaf(c, v) {
			return true
		}
	}
	return false
}

type exact struct{ v any }

func (e exact) match(v any) bool {
	return v == e.v
}
func (exact) onAbsent() bool { return false }

type text struct {
	op, s string
	fold  bool
}

func (t text) match(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	want := t.s
	if t.fold {
		s, want = strings.ToLower(s), strings.ToLower(want)
	}
	switch t.op {
	case "prefix":
		return strings.HasPrefix(s, want)
	case "suffix":
		return strings.HasSuffix(s, want)
	default: // equals-ignore-case
		return strings.EqualFold(s, want)
	}
}
func (text) onAbsent() bool { return false }

type anythingBut struct {
	values []any
	text   *text
}

func (a anythingBut) match(v any) bool {
	if a.text != nil {
		return !a.text.match(v)
	}
	for _, x := range a.values {
		if x == v {
			return false
		}
	}
	return true
}
func (anythingBut) onAbsent() bool { return false }

type exists bool

func (e exists) match(v any) bool {
	return bool(e)
}
func (e exists) onAbsent() bool { return !bool(e) }

type numeric [][2]any

func (n numeric) match(v any) bool {
	f, ok := v.(float64)
	if !ok {
		return false
	}
	for _, c := range n {
		want := c[1].(float64)
		switch c[0].(string) {
		case "=":
			ok = f == want
		case "<":
			ok = f < want
		case "<=":
			ok = f <= want
		case ">":
			ok = f > want
		case ">=":
			ok = f >= want
		}
		if !ok {
			return false
		}
	}
	return true
}
func (numeric) onAbsent() bool { return false }
