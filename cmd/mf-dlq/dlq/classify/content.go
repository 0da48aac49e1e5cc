package classify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/replaywindow"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// content is what a body says about itself.
type content struct {
	pedidoID string // the order's id, "" when the body names none
	problem  string // "" when the body passes every check
	version  string // the version found ("" when absent or not checked)
	entities map[string]string
}

// entityKeys are the body keys whose concentration explains a drip: one
// SKU or one customer behind most failures points at data, not at a
// dependency. Lines ("lineas": [{"sku": ...}]) are searched too.
var entityKeys = []string{"sku", "cliente_id"}

// inspectBody applies the consumer's envelope rules (sqsbatch.CheckEnvelope:
// a JSON object, a known major version, required keys present), then its
// content check (Options.Content), says a broken rule in words that group
// alike messages, and extracts the entities of a body that is a JSON object.
func inspectBody(body string, opts *Options) content {
	c := content{entities: map[string]string{}, pedidoID: pedidoID(body)}
	rules := sqsbatch.EnvelopeRules{SupportedVersions: opts.AcceptedVersions, VersionKey: opts.VersionKey,
		DisableVersionCheck: opts.VersionKey == "-", RequiredKeys: opts.RequiredKeys}
	_, err := sqsbatch.CheckEnvelope(body, rules)
	var env *sqsbatch.EnvelopeError
	if errors.As(err, &env) && env.Problem.Malformed() {
		c.problem = malformed(env)
		return c
	}
	var obj map[string]json.RawMessage
	_ = json.Unmarshal([]byte(body), &obj) // CheckEnvelope parsed it: an object
	findEntities(obj, c.entities, 0)
	if !rules.DisableVersionCheck {
		if raw, ok := dig(obj, opts.VersionKey); ok {
			c.version = string(raw)
			if s, err := strconv.Unquote(c.version); err == nil {
				c.version = s
			}
		}
	}
	if env == nil {
		if opts.Window > 0 && opts.CreatedAtKey != "" {
			// The consumer cannot apply its replay window to it: poison
			// (replaywindow.Window.Check).
			if _, err := replaywindow.CreatedAt([]byte(body), opts.CreatedAtKey); err != nil {
				c.problem = "schema: " + err.Error()
				return c
			}
		}
		if opts.Content != nil {
			if err := opts.Content(body); err != nil {
				var refused *failure.Error // the reason without its class
				if errors.As(err, &refused) {
					err = refused.Err
				}
				c.problem = "the consumer's validation refuses it: " + err.Error()
			}
		}
		return c
	}
	switch env.Problem {
	case sqsbatch.NoVersion:
		c.problem = fmt.Sprintf("schema: no %q key", env.Key)
	case sqsbatch.BadVersion:
		c.problem = fmt.Sprintf("schema: %q: %s", env.Key, env.Err)
	case sqsbatch.UnsupportedVersion:
		c.problem = fmt.Sprintf("schema: version %s, the consumer accepts %s", c.version, sqsbatch.JoinInts(env.Supported))
	case sqsbatch.MissingKeys:
		c.problem = "schema: missing " + strings.Join(env.Missing, ", ")
	default:
		c.problem = "schema: " + env.Error()
	}
	return c
}

// malformed says why a body is not a JSON object of the event.
func malformed(env *sqsbatch.EnvelopeError) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case env.Problem == sqsbatch.EmptyBody:
		return "malformed: empty body"
	case env.Problem == sqsbatch.NullBody:
		return "malformed: body is JSON null"
	case env.Problem == sqsbatch.SNSEnvelope:
		return "malformed: an SNS notification envelope (raw message delivery is off)"
	case errors.As(env.Err, &syn):
		return fmt.Sprintf("malformed: not JSON (syntax error at byte %d)", syn.Offset)
	case errors.As(env.Err, &typ):
		return "malformed: body is a JSON " + typ.Value + ", not an object"
	}
	return "malformed: " + fmt.Sprint(env.Err)
}

// pedidoRE is the shape of an order id, found in bodies that are not JSON.
var pedidoRE = regexp.MustCompile(`PED-[0-9]{4}-[0-9]+`)

// pedidoID is the body's pedido_id (top level or in an EventBridge
// event's detail), or an order id anywhere in a body that is not a JSON
// object.
func pedidoID(body string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(body), &obj) == nil && obj != nil {
		for _, k := range []string{"pedido_id", "detail.pedido_id"} {
			if raw, ok := dig(obj, k); ok {
				if s := scalar(raw); s != "" {
					return s
				}
			}
		}
	}
	return pedidoRE.FindString(body)
}

// dig follows a dotted path (sqsbatch.Lookup); absent, null, "" and a
// path through a non-object count as missing.
func dig(obj map[string]json.RawMessage, path string) (json.RawMessage, bool) {
	raw, ok, err := sqsbatch.Lookup(obj, path)
	return bytes.TrimSpace(raw), ok && err == nil
}

// findEntities collects entity keys at the top level, in "detail" and in
// arrays of objects ("lineas"), up to a small depth. Several values of one
// key are joined in sorted order ("A,B").
func findEntities(obj map[string]json.RawMessage, out map[string]string, depth int) {
	if depth > 3 {
		return
	}
	for _, k := range entityKeys {
		if raw, ok := obj[k]; ok {
			add(out, k, scalar(raw))
		}
	}
	for k, raw := range obj {
		if slices.Contains(entityKeys, k) {
			continue
		}
		t := bytes.TrimSpace(raw)
		switch {
		case len(t) > 0 && t[0] == '{':
			var sub map[string]json.RawMessage
			if json.Unmarshal(t, &sub) == nil {
				findEntities(sub, out, depth+1)
			}
		case len(t) > 0 && t[0] == '[':
			var arr []json.RawMessage
			if json.Unmarshal(t, &arr) == nil {
				for _, el := range arr {
					var sub map[string]json.RawMessage
					if json.Unmarshal(el, &sub) == nil && sub != nil {
						findEntities(sub, out, depth+1)
					}
				}
			}
		}
	}
}

func add(out map[string]string, k, v string) {
	if v == "" {
		return
	}
	vals := strings.Split(out[k], ",")
	if out[k] == "" {
		vals = nil
	}
	if !slices.Contains(vals, v) {
		vals = append(vals, v)
		sort.Strings(vals)
		out[k] = strings.Join(vals, ",")
	}
}

func scalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	t := strings.TrimSpace(string(raw))
	if t == "null" || strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		return ""
	}
	return t
}
