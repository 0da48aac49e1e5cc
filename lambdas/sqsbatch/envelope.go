package sqsbatch

import (
	"github.com/mercadofresco/integration/lambdas/failure"

	"bytes"
	"cmp"
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

// EnvelopeRules are the body rules a consumer applies before its handler
// (Config.Envelope; a consumer's are its entry in lambdas/consumers).
type EnvelopeRules struct {
	// SupportedVersions are the major versions accepted (default {1}) at
	// the dotted path VersionKey (default "version"), unless
	// DisableVersionCheck (bodies not versioned by us).
	SupportedVersions   []int
	VersionKey          string
	DisableVersionCheck bool
	// RequiredKeys are dotted paths that must be present, non-null and
	// not "" (e.g. "pedido_id").
	RequiredKeys []string
	// Content, when set, is the consumer's own check of a body that passed
	// the rules above (Processor only; CheckEnvelope leaves it out): the
	// error says why the consumer refuses it.
	Content func(body string) error
}

// withDefaults fills the zero fields with their defaults.
func (r EnvelopeRules) withDefaults() EnvelopeRules {
	if len(r.SupportedVersions) == 0 {
		r.SupportedVersions = []int{1}
	}
	r.VersionKey = cmp.Or(r.VersionKey, DefaultVersionKey)
	return r
}

// EnvelopeProblem names the rule a body broke.
type EnvelopeProblem int

// The problems, in the order the rules are checked.
const (
	EmptyBody          EnvelopeProblem = iota + 1
	NotJSON                            // Err: the decoder's error (not an object, or not JSON at all)
	NullBody                           // JSON null
	SNSEnvelope                        // an SNS notification: raw message delivery is off
	BadKey                             // Err: a key on a dotted path is not an object
	NoVersion                          // Key: the version key
	BadVersion                         // Key; Err: ParseMajor's
	UnsupportedVersion                 // Major, Supported
	MissingKeys                        // Missing
)

// Malformed reports a body that is not a JSON object of the event, as
// against an object that breaks a schema rule.
func (p EnvelopeProblem) Malformed() bool { return p < BadKey }

// EnvelopeError is the reason a body breaks the rules. A consumer makes it
// poison; mf-dlq's classification reads the same value, so an operator's
// verdict and the consumer's are one check.
type EnvelopeError struct {
	Problem   EnvelopeProblem
	Key       string
	Major     int
	Supported []int
	Missing   []string
	Err       error
}

func (e *EnvelopeError) Error() string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch e.Problem {
	case EmptyBody:
		return "malformed message: empty body"
	case NotJSON:
		switch {
		case errors.As(e.Err, &syn):
			return fmt.Sprintf("malformed JSON at byte %d: %v", syn.Offset, e.Err)
		case errors.As(e.Err, &typ):
			return fmt.Sprintf("malformed message: body is a JSON %s, want an object", typ.Value)
		}
		return fmt.Sprintf("malformed JSON: %v", e.Err)
	case NullBody:
		return "malformed message: body is JSON null, want an object"
	case SNSEnvelope:
		return "body is an SNS notification envelope, not the event: enable raw message delivery on the subscription"
	case NoVersion:
		return fmt.Sprintf("missing required key %q", e.Key)
	case BadVersion:
		return fmt.Sprintf("key %q: %v", e.Key, e.Err)
	case UnsupportedVersion:
		return fmt.Sprintf("unknown major version %d (this consumer supports %s): deploy the consumer before the producer", e.Major, JoinInts(e.Supported))
	case MissingKeys:
		quoted := make([]string, len(e.Missing))
		for i, k := range e.Missing {
			quoted[i] = strconv.Quote(k)
		}
		if len(quoted) == 1 {
			return "missing required key " + quoted[0]
		}
		return "missing required keys " + strings.Join(quoted, ", ")
	}
	return fmt.Sprint(e.Err)
}

func (e *EnvelopeError) Unwrap() error { return e.Err }

// CheckEnvelope checks body against rules and returns the major version
// found (0 when the version is not checked or not read). A body that breaks
// a rule gets an *EnvelopeError; the major version is returned with it once
// read.
func CheckEnvelope(body string, rules EnvelopeRules) (int, error) {
	if strings.TrimSpace(body) == "" {
		return 0, &EnvelopeError{Problem: EmptyBody}
	}
	var env envelope
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		return 0, &EnvelopeError{Problem: NotJSON, Err: err}
	}
	if env == nil {
		return 0, &EnvelopeError{Problem: NullBody}
	}
	if IsSNSEnvelope(env) {
		return 0, &EnvelopeError{Problem: SNSEnvelope}
	}
	rules = rules.withDefaults()
	key, supported := rules.VersionKey, rules.SupportedVersions
	major := 0
	if !rules.DisableVersionCheck {
		raw, ok, err := Lookup(env, key)
		if err != nil {
			return 0, &EnvelopeError{Problem: BadKey, Key: key, Err: err}
		}
		if !ok {
			return 0, &EnvelopeError{Problem: NoVersion, Key: key}
		}
		major, err = ParseMajor(raw)
		if err != nil {
			return 0, &EnvelopeError{Problem: BadVersion, Key: key, Err: err}
		}
		if !slices.Contains(supported, major) {
			return major, &EnvelopeError{Problem: UnsupportedVersion, Major: major, Supported: supported}
		}
	}
	var missing []string
	for _, k := range rules.RequiredKeys {
		_, ok, err := Lookup(env, k)
		if err != nil {
			return major, &EnvelopeError{Problem: BadKey, Key: k, Err: err}
		}
		if !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return major, &EnvelopeError{Problem: MissingKeys, Missing: missing}
	}
	return major, nil
}

// checkEnvelope applies CheckEnvelope and the Content check with the
// processor's rules; every failure is a poison error with a reason an
// operator can act on.
func (p *Processor) checkEnvelope(body string) (int, error) {
	major, err := CheckEnvelope(body, p.envelope)
	if err == nil && p.envelope.Content != nil {
		err = p.envelope.Content(body)
	}
	return major, failure.Poison(err)
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
