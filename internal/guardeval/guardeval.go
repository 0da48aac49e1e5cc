// Package guardeval judges a synthesised known-producers guard
// (constructs/queues) without AWS: Refuses evaluates its Deny statement
// for a request by IAM's rules, ArnLike is IAM's ARN matching. Tests use it;
// no deployed code does.
package guardeval

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/mercadofresco/integration/constructs/queues"
)

// ErrNotAGuard is wrapped by Refuses when the statement is not a guard's.
var ErrNotAGuard = errors.New("guardeval: not a known-producers statement")

// Request is what a guard looks at in a request: its aws:PrincipalArn and
// aws:SourceArn ("" for a key the request does not carry).
type Request struct {
	PrincipalArn, SourceArn string
}

// Refuses reports whether statement, a guard's Deny as synthesised with its
// values resolved to strings (a template read back, intrinsics evaluated),
// refuses req, by IAM's rules for what the statement may hold: the Deny
// applies when every condition holds, and ArnNotLike holds when the key is
// absent from the request or its value matches none of the statement's ARN
// patterns (ArnLike: each of the six colon-separated parts matched on its
// own, * and ? as wildcards). It is how tests judge a synthesised guard
// without AWS; anything else in the statement (another effect, operator or
// key) is an error wrapping ErrNotAGuard, never a guess.
func Refuses(statement map[string]any, req Request) (bool, error) {
	if statement["Effect"] != "Deny" {
		return false, fmt.Errorf("%w: Effect %v", ErrNotAGuard, statement["Effect"])
	}
	cond, _ := statement["Condition"].(map[string]any)
	if len(cond) == 0 {
		return true, nil
	}
	for op, block := range cond {
		if op != queues.Operator {
			return false, fmt.Errorf("%w: condition operator %s", ErrNotAGuard, op)
		}
		keys, ok := block.(map[string]any)
		if !ok {
			return false, fmt.Errorf("%w: %s is not a map of keys", ErrNotAGuard, op)
		}
		for key, v := range keys {
			var got string
			switch key {
			case queues.KeyPrincipalArn:
				got = req.PrincipalArn
			case queues.KeySourceArn:
				got = req.SourceArn
			default:
				return false, fmt.Errorf("%w: condition key %s", ErrNotAGuard, key)
			}
			patterns, err := stringList(v)
			if err != nil {
				return false, fmt.Errorf("%w: %s: %v", ErrNotAGuard, key, err)
			}
			if got == "" {
				continue // a negated operator holds for a key the request lacks
			}
			for _, p := range patterns {
				if ArnLike(p, got) {
					return false, nil // this condition fails, so the Deny does not apply
				}
			}
		}
	}
	return true, nil
}

func stringList(v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("value %v is not a string (resolve the template first)", e)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("value %v is not a string or a list", v)
}

// ArnLike reports whether arn matches pattern as IAM's ArnLike does: both
// split into six colon-separated parts (the last keeps any further colons),
// each part matched on its own with * (any run of characters) and ? (one
// character).
func ArnLike(pattern, arn string) bool {
	pp, ap := strings.SplitN(pattern, ":", 6), strings.SplitN(arn, ":", 6)
	if len(pp) != 6 || len(ap) != 6 {
		return false
	}
	for i := range pp {
		if !glob(pp[i], ap[i]) {
			return false
		}
	}
	return true
}

// glob matches s against p, where * is any run of characters and ? one.
func glob(p, s string) bool {
	re := strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(p))
	ok, _ := regexp.MatchString("^"+re+"$", s) // QuoteMeta leaves no malformed expression
	return ok
}
