package sqsbatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// envelope is the parsed top level of a message body.
type envelope = map[string]json.RawMessage

// checkEnvelope validates body against the schema rules of the processor and
// returns the major version found (0 when the check is disabled). Every
// failure is a poison error with a reason an operator can act on.
func (p *Processor) checkEnvelope(body string) (int, error) {
	if p.cfg.DisableEnvelopeCheck {
		return 0, nil
	}
	if strings.TrimSpace(body) == "" {
		return 0, Poisonf("malformed message: empty body")
	}
	var env envelope
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return 0, Poisonf("malformed JSON at byte %d: %v", syn.Offset, err)
		case errors.As(err, &typ):
			return 0, Poisonf("malformed message: body is a JSON %s, want an object", typ.Value)
		default:
			return 0, Poisonf("malformed JSON: %v", err)
		}
	}
	if env == nil {
		return 0, Poisonf("malformed message: body is JSON null, want an object")
	}
	if IsSNSEnvelope(env) {
		return 0, Poisonf("body is an SNS notification envelope, not the event: enable raw message delivery on the subscription")
	}
	major := 0
	if !p.cfg.DisableVersionCheck {
		raw, ok, err := Lookup(env, p.cfg.VersionKey)
		if err != nil {
			return 0, Poison(err)
		}
		if !ok {
			return 0, Poisonf("missing required key %q", p.cfg.VersionKey)
		}
		major, err = ParseMajor(raw)
		if err != nil {
			return 0, Poisonf("key %q: %w", p.cfg.VersionKey, err)
		}
		if !slices.Contains(p.cfg.SupportedVersions, major) {
			return major, Poisonf("unknown major version %d (this consumer supports %s): deploy the consumer before the producer", major, JoinInts(p.cfg.SupportedVersions))
		}
	}
	var missing []string
	for _, k := range p.cfg.RequiredKeys {
		_, ok, err := Lookup(env, k)
		if err != nil {
			return major, Poison(err)
		}
		if !ok {
			missing = append(missing, strconv.Quote(k))
		}
	}
	if len(missing) == 1 {
		return major, Poisonf("missing required key %s", missing[0])
	}
	if len(missing) > 1 {
		return major, Poisonf("missing required keys %s", strings.Join(missing, ", "))
	}
	return major, nil
}

// Lookup finds a dotted path ("detail.pedido_id") in a body's top level. A
// key that is absent, null or an empty string counts as not present; an
// intermediate key that is not an object is an error.
func Lookup(env map[string]json.RawMessage, path string) (json.RawMessage, bool, error) {
	parts := strings.Split(path, ".")
	cur := env
	for i, part := range parts {
		raw, ok := cur[part]
		if !ok || isEmpty(raw) {
			return nil, false, nil
		}
		if i == len(parts)-1 {
			return raw, true, nil
		}
		var next envelope
		if err := json.Unmarshal(raw, &next); err != nil || next == nil {
			return nil, false, fmt.Errorf("key %q is not an object", strings.Join(parts[:i+1], "."))
		}
		cur = next
	}
	return nil, false, nil
}

func isEmpty(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null")) || bytes.Equal(t, []byte(`""`))
}

// ParseMajor accepts 1, 1.0, "1", "1.2" and "v1" and returns the major
// version.
func ParseMajor(raw json.RawMessage) (int, error) {
	var n float64
	if err := json.Unmarshal(raw, &n); err == nil {
		if n < 0 || n > math.MaxInt32 || math.IsNaN(n) {
			return 0, fmt.Errorf("version %s is out of range", raw)
		}
		return int(n), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("version %s is neither a number nor a string", raw)
	}
	major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(s), "v"), ".")
	v, err := strconv.Atoi(major)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("version %q is not a version number", s)
	}
	return v, nil
}

// IsSNSEnvelope reports a body that is an SNS notification envelope (raw
// message delivery off) rather than the event.
func IsSNSEnvelope(env map[string]json.RawMessage) bool {
	_, hasTopic := env["TopicArn"]
	_, hasMessage := env["Message"]
	return hasTopic && hasMessage && string(bytes.TrimSpace(env["Type"])) == `"Notification"`
}

// JoinInts formats versions for a reason: "1, 2".
func JoinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
