package test

import (
	"cmp"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/constructs/orderflow"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/synthesized"
)

// TestOnlyTheWorkflowMayInvokeThePaymentTasks walks every environment's
// templates: cobro and reembolso have no resource-based permission (a
// Lambda function's policy can only add Allows, so there is none to add),
// and the only role any IAM policy of the app lets invoke them is the
// order workflow's. What the templates cannot cover, another identity of the
// account with lambda:InvokeFunction on "*", is the SCP in
// docs/README-security.md.
func TestOnlyTheWorkflowMayInvokeThePaymentTasks(t *testing.T) {
	paymentTask := regexp.MustCompile(`^mf-(cobro|reembolso)(-\w+)?$`) // mf-cobro, mf-cobro-dev
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			w := walkProducers(t, s, es)
			tasks := map[string]string{} // ARN -> name
			for _, fn := range w.app.Resources("AWS::Lambda::Function") {
				name, _ := fn.Properties["FunctionName"].(string)
				if paymentTask.MatchString(name) {
					tasks[w.str(t, fn.Stack, map[string]any{"Fn::GetAtt": []any{fn.LogicalID, "Arn"}})] = name
				}
			}
			if len(tasks) != 2 {
				t.Fatalf("found payment tasks %v, want cobro and reembolso", tasks)
			}
			for _, p := range w.app.Resources("AWS::Lambda::Permission") {
				target := w.str(t, p.Stack, p.Properties["FunctionName"])
				for arn, name := range tasks {
					if strings.HasPrefix(target, arn) || target == name {
						t.Errorf("%s grants %v invocation of %s", p.Path(), p.Properties["Principal"], name)
					}
				}
			}
			var workflowRole string
			for _, r := range w.app.Resources("AWS::IAM::Role") {
				if n, _ := r.Properties["RoleName"].(string); strings.Contains(n, orderflow.StateMachineName) {
					workflowRole = w.roleArn(t, r.Stack, map[string]any{"Ref": r.LogicalID})
				}
			}
			if workflowRole == "" {
				t.Fatal("no role named after the workflow")
			}
			invokers := map[string][]string{}
			for _, typ := range []string{"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::IAM::Role"} {
				for _, r := range w.app.Resources(typ) {
					for _, d := range policyDocs(t, w, r) {
						for _, st := range statements(d.doc) {
							if st["Effect"] != "Allow" || !slices.ContainsFunc(asStrings(st["Action"]), invokes) {
								continue
							}
							for _, res := range tryStrs(w, r.Stack, st["Resource"]) {
								for arn, name := range tasks {
									if arnPattern(res).MatchString(arn) {
										invokers[name] = append(invokers[name], d.roles...)
									}
								}
							}
						}
					}
				}
			}
			for _, name := range tasks {
				got := slices.Compact(slices.Sorted(slices.Values(invokers[name])))
				if len(got) != 1 || got[0] != workflowRole {
					t.Errorf("%s may be invoked by %v, want only the workflow's role %s", name, got, workflowRole)
				}
			}
		})
	}
}

type attachedDoc struct {
	roles []string
	doc   any
}

// policyDocs returns r's policy documents with the role ARNs they apply to.
func policyDocs(t *testing.T, w *producerWorld, r *synthesized.Resource) []attachedDoc {
	t.Helper()
	if r.Type == "AWS::IAM::Role" {
		self := w.roleArn(t, r.Stack, map[string]any{"Ref": r.LogicalID})
		var out []attachedDoc
		pols, _ := r.Properties["Policies"].([]any)
		for _, p := range pols {
			out = append(out, attachedDoc{[]string{self}, p.(map[string]any)["PolicyDocument"]})
		}
		return out
	}
	var roles []string
	rs, _ := r.Properties["Roles"].([]any)
	for _, ref := range rs {
		roles = append(roles, w.roleArn(t, r.Stack, ref))
	}
	return []attachedDoc{{roles, r.Properties["PolicyDocument"]}}
}

func statements(doc any) []map[string]any {
	var out []map[string]any
	switch sts := dig(doc, "Statement").(type) {
	case []any:
		for _, st := range sts {
			out = append(out, st.(map[string]any))
		}
	case map[string]any:
		out = append(out, sts)
	}
	return out
}

// invokes reports whether an IAM action pattern covers lambda:InvokeFunction.
func invokes(pattern string) bool { return arnPattern(pattern).MatchString("lambda:InvokeFunction") }

// arnPattern compiles an IAM pattern (* and ? wildcards, case-insensitive).
func arnPattern(p string) *regexp.Regexp {
	q := regexp.QuoteMeta(p)
	q = strings.ReplaceAll(q, `\*`, ".*")
	q = strings.ReplaceAll(q, `\?`, ".")
	return regexp.MustCompile("(?i)^" + q + "(:.*)?$")
}

// TestEveryIdempotencyGrantCarriesLeadingKeys walks every environment's
// templates: every IAM statement on mercadofresco-idempotencia limits the
// role to its own key prefix (dynamodb:LeadingKeys), the prefixes are the
// ones the code writes (lambdas/idempotency's operations), and only the
// refund reads another prefix (the charge's, GetItem only).
func TestEveryIdempotencyGrantCarriesLeadingKeys(t *testing.T) {
	want := map[string][]string{ // function -> prefixes it writes
		"mf-cobro":               {idempotency.OpCobro + ":*"},
		"mf-reembolso":           {idempotency.OpReembolso + ":*"},
		"mf-correo-confirmacion": {idempotency.OpCorreoConfirmacion + ":*"},
		"mf-preparar-pedido":     {idempotency.OpPreparacion + ":*"},
		"mf-aviso-erp":           {idempotency.OpAvisoERP + ":*"},
	}
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			w := walkProducers(t, s, es)
			var table string
			for _, r := range w.app.Resources("AWS::DynamoDB::Table") {
				if n, _ := r.Properties["TableName"].(string); strings.Contains(n, "mercadofresco-idempotencia") {
					table = w.str(t, r.Stack, map[string]any{"Fn::GetAtt": []any{r.LogicalID, "Arn"}})
				}
			}
			if table == "" {
				t.Fatal("no idempotency table")
			}
			roleOf := map[string]string{} // role ARN -> function name
			for _, fn := range w.app.Resources("AWS::Lambda::Function") {
				name, _ := fn.Properties["FunctionName"].(string)
				roleOf[w.roleArn(t, fn.Stack, fn.Properties["Role"])] = name
			}
			base := map[string]string{} // physical function name -> its name in want
			for fn := range want {
				base[es.Env.PhysicalName(fn)] = fn
			}
			writes := map[string][]string{}
			for _, typ := range []string{"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::IAM::Role"} {
				for _, r := range w.app.Resources(typ) {
					for _, d := range policyDocs(t, w, r) {
						for _, st := range statements(d.doc) {
							if st["Effect"] != "Allow" || !slices.ContainsFunc(tryStrs(w, r.Stack, st["Resource"]), func(res string) bool { return arnPattern(res).MatchString(table) }) {
								continue
							}
							// ListStreams names no item (the carts pipe lists its own table's streams on "*").
							if !slices.ContainsFunc(asStrings(st["Action"]), func(a string) bool {
								return strings.HasPrefix(strings.ToLower(a), "dynamodb:") && !strings.EqualFold(a, "dynamodb:ListStreams")
							}) {
								continue
							}
							prefixes := asStrings(dig(st, "Condition", "ForAllValues:StringLike", "dynamodb:LeadingKeys"))
							for _, role := range d.roles {
								fn := cmp.Or(base[roleOf[role]], roleOf[role], role)
								switch {
								case len(prefixes) == 0:
									t.Errorf("%s (%s) may touch every record of the idempotency table: %v, no dynamodb:LeadingKeys", r.Path(), fn, st["Action"])
								case slices.Equal(asStrings(st["Action"]), []string{"dynamodb:GetItem"}) && fn == "mf-reembolso":
									if !slices.Equal(prefixes, want["mf-cobro"]) {
										t.Errorf("the refund reads %v, want the charge's %v", prefixes, want["mf-cobro"])
									}
								default:
									writes[fn] = append(writes[fn], prefixes...)
								}
							}
						}
					}
				}
			}
			for fn, prefixes := range want {
				got := slices.Compact(slices.Sorted(slices.Values(writes[fn])))
				if !slices.Equal(got, prefixes) {
					t.Errorf("%s writes %v of the idempotency table, want %v", fn, got, prefixes)
				}
			}
			if len(writes) != len(want) {
				t.Errorf("roles writing the idempotency table: %v, want those of %v", slices.Sorted(maps.Keys(writes)), slices.Sorted(maps.Keys(want)))
			}
		})
	}
}

// tryStrs resolves a statement's Resource, or nothing when it names a
// resource without a physical name (a secret): such a statement is not on
// the table or a function.
func tryStrs(w *producerWorld, stack string, v any) []string {
	r, err := w.app.Resolve(stack, v, w.phys)
	if err != nil {
		return nil
	}
	if s, ok := r.(string); ok {
		return []string{s}
	}
	var out []string
	for _, e := range r.([]any) {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
