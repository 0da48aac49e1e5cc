package test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/constructs/orderflow"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/synthesized"
)

// TestOnlyTheSignerAndVerifiersReadTheSigningKey walks every environment's
// templates: the charge-signing key's secret is encrypted with the data
// key, generated with at least lambdaapi.MinSigningKeyBytes characters, has a
// resource policy that denies secretsmanager:GetSecretValue to every
// principal but the outbox publisher's, the starter's and cobro's roles,
// and those three are the only roles any IAM policy of the app lets read
// it; each of them is told where it is (lambdaapi.EnvSigningSecretARN).
func TestOnlyTheSignerAndVerifiersReadTheSigningKey(t *testing.T) {
	readers := []string{"lambdas/outbox-publicador", "lambdas/iniciar-pedido", "lambdas/cobro"}
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			w := walkProducers(t, s, es)
			loc := w.phys
			str := func(stack string, v any) string {
				t.Helper()
				r, err := w.app.ResolveString(stack, v, loc)
				if err != nil {
					t.Fatalf("%s: %v", stack, err)
				}
				return r
			}
			strs := func(stack string, v any) []string {
				r, err := w.app.Resolve(stack, v, loc)
				if err != nil {
					return nil // a statement on something else without a physical name
				}
				if s, ok := r.(string); ok {
					return []string{s}
				}
				var out []string
				for _, e := range r.([]any) {
					out = append(out, fmt.Sprint(e))
				}
				return out
			}
			var secret, secretStack, secretID string
			for _, r := range w.app.Resources("AWS::SecretsManager::Secret") {
				if r.Properties["Name"] != es.Env.PhysicalName(orderflow.SigningKeyName) {
					continue
				}
				secret, secretStack, secretID = str(r.Stack, map[string]any{"Ref": r.LogicalID}), r.Stack, r.LogicalID
				if _, ok := r.Properties["KmsKeyId"]; !ok {
					t.Error("the signing key is not encrypted with the data key")
				}
				if n, _ := dig(r.Properties, "GenerateSecretString", "PasswordLength").(float64); n < lambdaapi.MinSigningKeyBytes {
					t.Errorf("generated key of %v characters, want at least %d", n, lambdaapi.MinSigningKeyBytes)
				}
			}
			if secret == "" {
				t.Fatalf("no secret named %s", es.Env.PhysicalName(orderflow.SigningKeyName))
			}
			want := map[string]string{} // role ARN -> entry
			for _, fn := range w.app.Resources("AWS::Lambda::Function") {
				entry, _ := fn.Metadata[synthesized.MetadataEntry].(string)
				if !slices.Contains(readers, entry) {
					continue
				}
				want[w.roleArn(t, fn.Stack, fn.Properties["Role"])] = entry
				vars, _ := dig(fn.Properties, "Environment", "Variables").(map[string]any)
				if got := str(fn.Stack, vars[lambdaapi.EnvSigningSecretARN]); got != secret {
					t.Errorf("%s: %s = %q, want the signing key %s", entry, lambdaapi.EnvSigningSecretARN, got, secret)
				}
			}
			if len(want) != len(readers) {
				t.Fatalf("reader roles %v, want one per %v", want, readers)
			}
			wantRoles := slices.Sorted(func(yield func(string) bool) {
				for r := range want {
					if !yield(r) {
						return
					}
				}
			})

			// The resource policy: one Deny of GetSecretValue to everyone
			// whose ARN is not one of the three roles.
			var denied [][]string
			for _, r := range w.app.Resources("AWS::SecretsManager::ResourcePolicy") {
				if r.Stack != secretStack || refOf(r.Properties["SecretId"]) != secretID {
					continue
				}
				for _, st := range statements(r.Properties["ResourcePolicy"]) {
					if st["Effect"] != "Deny" || dig(st, "Principal", "AWS") != "*" || !slices.Contains(asStrings(st["Action"]), "secretsmanager:GetSecretValue") {
						continue
					}
					denied = append(denied, slices.Sorted(slices.Values(strs(r.Stack, dig(st, "Condition", "ArnNotEquals", "aws:PrincipalArn")))))
				}
			}
			if len(denied) != 1 || !slices.Equal(denied[0], wantRoles) {
				t.Fatalf("resource policy denies GetSecretValue to all but %v, want exactly %v", denied, wantRoles)
			}

			// IAM: who is allowed to read it.
			var got []string
			for _, typ := range []string{"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::IAM::Role"} {
				for _, r := range w.app.Resources(typ) {
					for _, d := range policyDocs(t, w, r) {
						for _, st := range statements(d.doc) {
							if st["Effect"] != "Allow" || !slices.ContainsFunc(asStrings(st["Action"]), func(a string) bool { return arnPattern(a).MatchString("secretsmanager:GetSecretValue") }) {
								continue
							}
							if slices.ContainsFunc(strs(r.Stack, st["Resource"]), func(res string) bool { return arnPattern(res).MatchString(secret) }) {
								got = append(got, d.roles...)
							}
						}
					}
				}
			}
			got = slices.Compact(slices.Sorted(slices.Values(got)))
			if !slices.Equal(got, wantRoles) {
				t.Errorf("IAM lets %v read the signing key, want exactly %v", got, wantRoles)
			}
			if !strings.HasPrefix(secret, "arn:aws:secretsmanager:") {
				t.Errorf("secret ARN %q", secret)
			}
		})
	}
}
