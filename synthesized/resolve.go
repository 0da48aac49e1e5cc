package synthesized

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Reference is one reference an intrinsic function makes: a Ref (Attribute
// ""), an Fn::GetAtt or a ${Id.Attr} of Fn::Sub, or an Fn::ImportValue
// (Import set, LogicalID ""). Pseudo parameters are Refs ("AWS::Region").
type Reference struct {
	LogicalID, Attribute, Import string
}

// Eval evaluates the intrinsic functions in v into plain JSON values,
// asking ref for the value of every reference; an object that is not one
// intrinsic is evaluated member by member.
func Eval(v any, ref func(Reference) (any, error)) (any, error) {
	return rewrite(v, func(m map[string]any) (any, bool, error) {
		for fn, arg := range m {
			if len(m) == 1 && (fn == "Ref" || strings.HasPrefix(fn, "Fn::")) {
				r, err := intrinsic(fn, arg, ref)
				return r, true, err
			}
		}
		return nil, false, nil
	})
}

// rewrite copies v, replacing each object f takes (ok) by what f returns.
func rewrite(v any, f func(map[string]any) (any, bool, error)) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if r, ok, err := f(x); ok || err != nil {
			return r, err
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := rewrite(e, f)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := rewrite(e, f)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// EvalString is Eval of a value that must be a string (a number or boolean
// is formatted).
func EvalString(v any, ref func(Reference) (any, error)) (string, error) {
	r, err := Eval(v, ref)
	if err != nil {
		return "", err
	}
	return str(r)
}

func str(v any) (string, error) {
	switch s := v.(type) {
	case string:
		return s, nil
	case float64:
		return strconv.FormatFloat(s, 'f', -1, 64), nil
	case int:
		return strconv.Itoa(s), nil
	case bool:
		return strconv.FormatBool(s), nil
	}
	return "", fmt.Errorf("%w: %v is not a string", ErrUnresolvable, v)
}

func intrinsic(fn string, arg any, ref func(Reference) (any, error)) (any, error) {
	fail := func(format string, args ...any) (any, error) {
		return nil, fmt.Errorf("%w: %s: %s", ErrUnresolvable, fn, fmt.Sprintf(format, args...))
	}
	x, isPair := arg.([]any)
	if isPair = isPair && len(x) == 2; !isPair && (fn == "Fn::Join" || fn == "Fn::Select" || fn == "Fn::Split") {
		return fail("%v", arg)
	}
	switch fn {
	case "Ref", "Fn::GetAtt":
		r, ok := reference(fn, arg)
		if !ok {
			return fail("%v", arg)
		}
		return ref(r)
	case "Fn::ImportValue":
		name, err := EvalString(arg, ref)
		if err != nil {
			return nil, err
		}
		if name == "" {
			return fail("empty export name")
		}
		return ref(Reference{Import: name})
	case "Fn::Join":
		sep, _ := x[0].(string)
		list, err := Eval(x[1], ref)
		if err != nil {
			return nil, err
		}
		parts, ok := list.([]any)
		if !ok {
			return fail("not a list: %v", list)
		}
		ss := make([]string, len(parts))
		for i, p := range parts {
			if ss[i], err = str(p); err != nil {
				return nil, err
			}
		}
		return strings.Join(ss, sep), nil
	case "Fn::Select":
		idx, err := EvalString(x[0], ref)
		if err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(idx)
		if err != nil {
			return fail("index %q", idx)
		}
		list, err := Eval(x[1], ref)
		if err != nil {
			return nil, err
		}
		l, ok := list.([]any)
		if !ok || i < 0 || i >= len(l) {
			return fail("index %d of %v", i, list)
		}
		return l[i], nil
	case "Fn::Split":
		sep, _ := x[0].(string)
		s, err := EvalString(x[1], ref)
		if err != nil {
			return nil, err
		}
		var out []any
		for _, p := range strings.Split(s, sep) {
			out = append(out, p)
		}
		return out, nil
	case "Fn::Sub":
		tpl, ok := arg.(string)
		vars := map[string]string{}
		if isPair {
			tpl, ok = x[0].(string)
			m, _ := x[1].(map[string]any)
			for k, v := range m {
				s, err := EvalString(v, ref)
				if err != nil {
					return nil, err
				}
				vars[k] = s
			}
		}
		if !ok {
			return fail("%v", arg)
		}
		return sub(tpl, vars, ref)
	}
	return fail("unsupported intrinsic function")
}

// reference reads a Ref's or an Fn::GetAtt's argument (ok false when it is
// malformed).
func reference(fn string, arg any) (r Reference, ok bool) {
	switch x := arg.(type) {
	case string:
		if fn == "Ref" {
			return Reference{LogicalID: x}, x != ""
		}
		r.LogicalID, r.Attribute, _ = strings.Cut(x, ".")
	case []any:
		if len(x) > 0 && fn == "Fn::GetAtt" {
			r.LogicalID, _ = x[0].(string)
		}
		if len(x) == 2 && fn == "Fn::GetAtt" {
			r.Attribute, _ = x[1].(string)
		}
	}
	return r, r.LogicalID != "" && r.Attribute != ""
}

var subVar = regexp.MustCompile(`\$\{[^}]*\}`)

// sub substitutes ${Var}, ${Id} and ${Id.Attr}, and writes ${!Literal} as
// ${Literal}, as CloudFormation does.
func sub(tpl string, vars map[string]string, ref func(Reference) (any, error)) (string, error) {
	var subErr error
	out := subVar.ReplaceAllStringFunc(tpl, func(m string) string {
		name := m[2 : len(m)-1]
		if lit, ok := strings.CutPrefix(name, "!"); ok {
			return "${" + lit + "}"
		}
		if v, ok := vars[name]; ok {
			return v
		}
		id, attr, _ := strings.Cut(name, ".")
		v, err := ref(Reference{LogicalID: id, Attribute: attr})
		if err == nil {
			var s string
			if s, err = str(v); err == nil {
				return s
			}
		}
		if subErr == nil {
			subErr = err
		}
		return m
	})
	return out, subErr
}
