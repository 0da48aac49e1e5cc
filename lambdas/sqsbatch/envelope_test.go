package sqsbatch_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// CheckEnvelope names the first rule a body breaks, the consumer's poison
// reason is its text, and mf-dlq's classification reads the same value.
func TestCheckEnvelope(t *testing.T) {
	rules := sqsbatch.EnvelopeRules{RequiredKeys: []string{"pedido_id", "cliente.email"}}
	tests := []struct {
		name, body string
		rules      sqsbatch.EnvelopeRules
		problem    sqsbatch.EnvelopeProblem // 0: passes
		major      int
		reason     string
	}{
		{"valid", `{"version":"1.2","pedido_id":"P","cliente":{"email":"a@b"}}`, rules, 0, 1, ""},
		{"empty", " \n", rules, sqsbatch.EmptyBody, 0, "malformed message: empty body"},
		{"not JSON", `{"version":1,`, rules, sqsbatch.NotJSON, 0, "malformed JSON at byte 13: unexpected end of JSON input"},
		{"an array", `[1]`, rules, sqsbatch.NotJSON, 0, "malformed message: body is a JSON array, want an object"},
		{"null", `null`, rules, sqsbatch.NullBody, 0, "malformed message: body is JSON null, want an object"},
		{"SNS envelope", `{"Type":"Notification","TopicArn":"arn","Message":"{}"}`, rules, sqsbatch.SNSEnvelope, 0, "body is an SNS notification envelope, not the event: enable raw message delivery on the subscription"},
		{"no version", `{"pedido_id":"P"}`, rules, sqsbatch.NoVersion, 0, `missing required key "version"`},
		{"bad version", `{"version":"x"}`, rules, sqsbatch.BadVersion, 0, `key "version": version "x" is not a version number`},
		{"unsupported version", `{"version":2,"pedido_id":"P"}`, rules, sqsbatch.UnsupportedVersion, 2, "unknown major version 2 (this consumer supports 1): deploy the consumer before the producer"},
		{"version 2 accepted", `{"version":2,"pedido_id":"P","cliente":{"email":"a@b"}}`, sqsbatch.EnvelopeRules{SupportedVersions: []int{1, 2}, RequiredKeys: rules.RequiredKeys}, 0, 2, ""},
		{"one key missing", `{"version":1,"pedido_id":"","cliente":{"email":"a@b"}}`, rules, sqsbatch.MissingKeys, 1, `missing required key "pedido_id"`},
		{"two keys missing", `{"version":1,"cliente":{}}`, rules, sqsbatch.MissingKeys, 1, `missing required keys "pedido_id", "cliente.email"`},
		{"a path through a string", `{"version":1,"pedido_id":"P","cliente":"x"}`, rules, sqsbatch.BadKey, 1, `key "cliente" is not an object`},
		{"version not checked", `{"pedido_id":"P","cliente":{"email":"a@b"}}`, sqsbatch.EnvelopeRules{DisableVersionCheck: true, RequiredKeys: rules.RequiredKeys}, 0, 0, ""},
		{"version in the detail", `{"detail":{"version":"v1"}}`, sqsbatch.EnvelopeRules{VersionKey: "detail.version"}, 0, 1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			major, err := sqsbatch.CheckEnvelope(tc.body, tc.rules)
			if major != tc.major {
				t.Errorf("major %d, want %d", major, tc.major)
			}
			var env *sqsbatch.EnvelopeError
			switch {
			case tc.problem == 0 && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.problem == 0:
				return
			case !errors.As(err, &env):
				t.Fatalf("error %v, want an *EnvelopeError", err)
			}
			if env.Problem != tc.problem || err.Error() != tc.reason {
				t.Errorf("problem %d %q, want %d %q", env.Problem, err, tc.problem, tc.reason)
			}
			wantMalformed := slices.Contains([]sqsbatch.EnvelopeProblem{sqsbatch.EmptyBody, sqsbatch.NotJSON, sqsbatch.NullBody, sqsbatch.SNSEnvelope}, tc.problem)
			if env.Problem.Malformed() != wantMalformed {
				t.Errorf("Malformed() %v, want %v", env.Problem.Malformed(), wantMalformed)
			}
		})
	}
}
