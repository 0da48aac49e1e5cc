package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Breaking lists the changes from old to new that break FULL
// compatibility within a major version: a consumer of either schema must
// read a message of the other. Allowed: a new optional field, a widened
// enum, a new or changed description. Refused: a removed field, a changed
// type, a new required field (also a field made required), a shrunk enum
// (or an enum where there was none), an object closed to new fields.
func Breaking(old, new map[string]any) []string {
	var out []string
	compare("", old, new, &out)
	sort.Strings(out)
	return out
}

func compare(path string, old, new map[string]any, out *[]string) {
	at := path
	if at == "" {
		at = "(root)"
	}
	if ot, nt := types(old["type"]), types(new["type"]); !slices.Equal(ot, nt) && len(ot) > 0 {
		*out = append(*out, fmt.Sprintf("%s: type changed from %s to %s", at, strings.Join(ot, "|"), cmp.Or(strings.Join(nt, "|"), "none")))
		return
	}
	if oe, ok := old["enum"].([]any); ok || new["enum"] != nil {
		ne, _ := new["enum"].([]any)
		switch {
		case !ok:
			*out = append(*out, fmt.Sprintf("%s: an enum now restricts a value that was free", at))
		default:
			for _, v := range oe {
				if !slices.ContainsFunc(ne, func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(v) }) {
					*out = append(*out, fmt.Sprintf("%s: enum value %v removed (shrunk enum)", at, v))
				}
			}
		}
	}
	if old["additionalProperties"] != false && new["additionalProperties"] == false {
		*out = append(*out, fmt.Sprintf("%s: closed to new fields (additionalProperties false)", at))
	}
	oldReq, newReq := strs(old["required"]), strs(new["required"])
	for _, r := range newReq {
		if !slices.Contains(oldReq, r) {
			*out = append(*out, fmt.Sprintf("%s: new required field %q (a new field must be optional)", at, r))
		}
	}
	op, _ := old["properties"].(map[string]any)
	np, _ := new["properties"].(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(op)) {
		o, _ := op[k].(map[string]any)
		n, ok := np[k].(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: field %q removed", at, k))
			continue
		}
		compare(strings.TrimPrefix(path+"."+k, "."), o, n, out)
	}
	if oi, ok := old["items"].(map[string]any); ok {
		if ni, ok := new["items"].(map[string]any); ok {
			compare(path+"[]", oi, ni, out)
		} else {
			*out = append(*out, fmt.Sprintf("%s: items schema removed", at))
		}
	}
}

func types(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		out := strs(x)
		sort.Strings(out)
		return out
	}
	return nil
}

func strs(v any) []string {
	xs, _ := v.([]any)
	var out []string
	for _, x := range xs {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
