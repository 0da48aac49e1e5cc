package orderflow_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/orderflow"
	"github.com/mercadofresco/integration/internal/cdktest"
)

// The key's resource policy denies GetSecretValue to everyone but the
// admitted roles; admitting nobody admits nobody; bad names and a missing
// data key are synthesis errors.
func TestSigningKeyAdmitsOnlyItsReaders(t *testing.T) {
	cases := []struct {
		name   string
		admit  []string
		want   []string // the ArnNotEquals list
		errors []string
	}{
		{"nobody admitted", nil, []string{"FirmaSecret"}, nil},
		{"a role of another stack", []string{"mercadofresco-publicador-outbox-eu-west-1", "mercadofresco-publicador-outbox-eu-west-1"},
			[]string{"role/mercadofresco-publicador-outbox-eu-west-1"}, nil},
		{"bad names", []string{"", "/x", "arn:aws:iam::1:role/x"}, []string{"FirmaSecret"}, []string{`AdmitRoleName: ""`, `AdmitRoleName: "/x"`, `AdmitRoleName: "arn:`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := cdktest.NewPlatform("Firma")
			k := orderflow.NewSigningKey(p.Stack, "Firma", &orderflow.SigningKeyProps{Context: core.Context{DataKey: p.Key}, SecretName: jsii.String(orderflow.SigningKeyName)})
			for _, n := range tc.admit {
				k.AdmitRoleName(n)
			}
			tpl := assertions.Template_FromStack(p.Stack, nil)
			pols := tpl.FindResources(jsii.String("AWS::SecretsManager::ResourcePolicy"), nil)
			raw, _ := json.Marshal(pols)
			var got []string
			for _, r := range *pols {
				st := (*r)["Properties"].(map[string]any)["ResourcePolicy"].(map[string]any)["Statement"].([]any)
				if len(st) != 1 {
					t.Fatalf("statements %s", raw)
				}
				s := st[0].(map[string]any)
				if s["Effect"] != "Deny" || s["Action"] != "secretsmanager:GetSecretValue" || s["Sid"] != orderflow.SigningKeyStatementSid {
					t.Fatalf("statement %v", s)
				}
				arns := s["Condition"].(map[string]any)["ArnNotEquals"].(map[string]any)["aws:PrincipalArn"]
				for _, a := range asList(arns) {
					b, _ := json.Marshal(a)
					got = append(got, string(b))
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("admitted %v, want %v", got, tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("admitted[%d] = %s, want one naming %s", i, got[i], w)
				}
			}
			errs := strings.Join(cdktest.Errors(p.Stack), "\n")
			for _, e := range tc.errors {
				if !strings.Contains(errs, e) {
					t.Errorf("errors %q lack %q", errs, e)
				}
			}
			if len(tc.errors) == 0 && errs != "" {
				t.Errorf("unexpected errors: %s", errs)
			}
		})
	}
	t.Run("no data key", func(t *testing.T) {
		p := cdktest.NewPlatform("SinClave")
		orderflow.NewSigningKey(p.Stack, "Firma", nil)
		if errs := cdktest.Errors(p.Stack); len(errs) == 0 {
			t.Fatal("a signing key without the data key synthesised without error")
		}
	})
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}
