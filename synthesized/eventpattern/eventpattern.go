// Package eventpattern evaluates EventBridge event patterns (also the
// filter criteria of EventBridge Pipes and Lambda event source mappings,
// which use the same syntax) against JSON events, so a local run of the app
// routes events with the patterns of its synthesized templates instead of a
// re-declared copy.
//
// Supported, with EventBridge's semantics, the conditions the app's
// templates use: exact values (strings, numbers, booleans, null), "prefix"
// and "exists"; nested objects; arrays in the event (a condition matches
// when any element matches). Any other operator ("anything-but", "numeric",
// "wildcard", "$or", ...) makes Compile fail with ErrUnsupported: a local
// run that silently routed differently from AWS would prove nothing.
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
type Pattern struct{ root node }

// node is an object pattern: every key must match (AND).
type node struct {
	keys     []string
	children map[string]*node       // nested objects
	leaves   map[string][]condition // value lists (OR)
}

// condition is one element of a value list: an exact value, a prefix or an
// existence test.
type condition struct {
	exact  any
	prefix *string
	exists *bool
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
	return &Pattern{root: *root}, nil
}

func compileObject(m map[string]any, path string) (*node, error) {
	n := &node{keys: slices.Sorted(maps.Keys(m)), children: map[string]*node{}, leaves: map[string][]condition{}}
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
				c, err := compileCondition(cond, p)
				if err != nil {
					return nil, err
				}
				n.leaves[k] = append(n.leaves[k], c)
			}
		default:
			return nil, fmt.Errorf("%w: %s must be a list of values or an object, got %T", ErrInvalid, p, v)
		}
	}
	return n, nil
}

func compileCondition(c any, path string) (condition, error) {
	obj, ok := c.(map[string]any)
	if !ok {
		return condition{exact: c}, nil
	}
	if len(obj) != 1 {
		return condition{}, fmt.Errorf("%w: a condition object at %s must have exactly one operator, got %d", ErrInvalid, path, len(obj))
	}
	for op, arg := range obj {
		switch s, isString := arg.(string); {
		case op == "prefix" && isString:
			return condition{prefix: &s}, nil
		case op == "prefix":
			return condition{}, fmt.Errorf("%w: prefix at %s with %v (only a string is evaluated)", ErrUnsupported, path, arg)
		case op == "exists":
			b, ok := arg.(bool)
			if !ok {
				return condition{}, fmt.Errorf("%w: exists at %s needs true or false", ErrInvalid, path)
			}
			return condition{exists: &b}, nil
		default:
			return condition{}, fmt.Errorf("%w: %q at %s", ErrUnsupported, op, path)
		}
	}
	panic("unreachable")
}

// MatchValue reports whether an event, decoded with encoding/json, matches
// the pattern.
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
		if !slices.ContainsFunc(n.leaves[k], func(c condition) bool { return c.matches(v, present) }) {
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

// matches reports whether the condition admits a field's value (present
// false when the event lacks the field). Conditions apply to leaf values:
// an object matches none; an array matches when one of its elements does,
// or, for exists, by being there.
func (c condition) matches(v any, present bool) bool {
	_, isObject := v.(map[string]any)
	arr, isArray := v.([]any)
	switch {
	case !present:
		return c.exists != nil && !*c.exists
	case isObject:
		return false
	case c.exists != nil:
		return *c.exists
	case isArray:
		return slices.ContainsFunc(arr, func(e any) bool { return c.matches(e, true) })
	case c.prefix != nil:
		s, ok := v.(string)
		return ok && strings.HasPrefix(s, *c.prefix)
	}
	return v == c.exact
}
