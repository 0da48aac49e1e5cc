package main

import (
	"regexp"
	"slices"
	"strings"
)

// synthError is one error annotation of a synthesised stack.
type synthError struct {
	Env, Text string
}

// onceForAllEnvironments groups errors that differ only in the
// environment (its suffix on stack, construct and physical names) and
// prints each once, with the environments it occurs in, in the order of
// envs: a guardrail broken by a shared constant is reported once, not once
// per environment.
func onceForAllEnvironments(errs []synthError, envs []string) []string {
	if len(envs) == 0 {
		return nil
	}
	quoted := make([]string, len(envs))
	for i, e := range envs {
		quoted[i] = regexp.QuoteMeta(e)
	}
	suffix := regexp.MustCompile(`-(` + strings.Join(quoted, "|") + `)\b`)
	var order []string
	seen := map[string][]string{}
	for _, e := range errs {
		key := suffix.ReplaceAllString(e.Text, "")
		if _, ok := seen[key]; !ok {
			order = append(order, key)
		}
		if !slices.Contains(seen[key], e.Env) {
			seen[key] = append(seen[key], e.Env)
		}
	}
	out := make([]string, 0, len(order))
	for _, key := range order {
		in := seen[key]
		slices.SortFunc(in, func(a, b string) int { return slices.Index(envs, a) - slices.Index(envs, b) })
		if len(in) == 1 {
			// One environment: the message as it was, names and all.
			for _, e := range errs {
				if e.Env == in[0] && suffix.ReplaceAllString(e.Text, "") == key {
					out = append(out, e.Text)
					break
				}
			}
			continue
		}
		out = append(out, key+" (in "+strings.Join(in, ", ")+")")
	}
	return out
}
