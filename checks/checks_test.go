package checks

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mercadofresco/integration/synthesized"
)

// The cases are small apps synthesized once into testdata/cases, each in
// an environment of its own (checkcases_test.go at the module root builds
// them with the CDK and keeps the files current).
var (
	casesOnce sync.Once
	cases     *synthesized.Assembly
	casesErr  error
)

func caseApp(t *testing.T, name string) *synthesized.App {
	t.Helper()
	casesOnce.Do(func() { cases, casesErr = synthesized.Load("testdata/cases") })
	if casesErr != nil {
		t.Fatal(casesErr)
	}
	app := cases.Env(name)
	if app == nil {
		t.Fatalf("no case %s in testdata/cases", name)
	}
	return app
}

// findings are the texts of the findings of a case, those of rule only
// when rule is not "".
func findings(t *testing.T, name, rule string) []string {
	t.Helper()
	var out []string
	for _, f := range Check(caseApp(t, name)) {
		if rule == "" || f.Rule == rule {
			out = append(out, f.String())
		}
	}
	return out
}

func requireContains(t *testing.T, msgs []string, parts ...string) {
	t.Helper()
	for _, m := range msgs {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(m, p)
		}
		if ok {
			return
		}
	}
	t.Fatalf("no finding contains %q; got:\n%s", parts, strings.Join(msgs, "\n"))
}

// Each case gives exactly the findings listed (every rule's broken input
// fails it; the compliant ones pass), each naming the construct and the
// numbers.
func TestCases(t *testing.T) {
	tests := []struct {
		name string
		// want: one entry per finding, the parts it must contain (the rule
		// first); of that rule only when the first entry names the rule alone.
		want [][]string
	}{
		{"Compliant", nil},
		{"QueueWithoutDLQ", [][]string{{"[MF-SQS-DLQ]", "Checks-QueueWithoutDLQ/Lonely/Resource", `"cola-sola"`, "no dead-letter queue"}}},
		// The DLQ of a compliant queue is not reported for lacking a DLQ itself.
		{"QueueWithDLQ", nil},
		// A subscription's DLQ is a DLQ, and still needs its alarm.
		{"SubscriptionDLQ", [][]string{{"[MF-SQS-DLQ-ALARM]", "Checks-SubscriptionDLQ/SubDlq/Resource", "has no alarm on ApproximateNumberOfMessagesVisible"}}},
		{"DLQNoAlarm", [][]string{{"[MF-SQS-DLQ-ALARM]", `"fallidos"`, "no alarm on ApproximateNumberOfMessagesVisible > 0", "Checks-DLQNoAlarm/Src/Resource"}}},
		{"DLQSilentAlarm", [][]string{{"[MF-SQS-DLQ-ALARM]", `"fallidos"`, "no usable alarm", "no enabled AlarmActions"}}},
		{"DLQLateAlarm", [][]string{{"[MF-SQS-DLQ-ALARM]", `"fallidos"`, "does not fire on the first message"},
			{"[MF-SQS-DLQ]", "Checks-DLQLateAlarm/Other/Resource"}}}, // the other queue's alarm is not the DLQ's
		{"VisibilityShort", [][]string{{"[MF-SQS-VISIBILITY]", "VisibilityTimeout 120 s", "Checks-VisibilityShort/Cobro", "(180 s)", "= 1080 s"}}},
		{"VisibilityFixed", nil},
		{"VisibilityAlias", [][]string{{"[MF-SQS-VISIBILITY]", "VisibilityTimeout 100 s", "(15 s) + batching window 20 s = 110 s"}}},
		{"VisibilityLiteralArns", [][]string{{"[MF-SQS-VISIBILITY]", "VisibilityTimeout 30 s", "(10 s)", "= 60 s"}}},
		{"SNSLambda", [][]string{{"[MF-SNS-LAMBDA]", "mercadofresco-pedido-confirmado", "protocol lambda"}}},
		{"SNSInlineLambda", [][]string{{"[MF-SNS-LAMBDA]", "Checks-SNSInlineLambda/Inline"}}},
		{"FifoStandardDLQ", [][]string{{"[MF-SQS-FIFO-DLQ]", "Checks-FifoStandardDLQ/Fifo", "is FIFO but its DLQ", `"std-dlq"`, "is standard"}}},
		{"DLQRetention", [][]string{{"[MF-SQS-DLQ-RETENTION]", "345600 s", "Checks-DLQRetention/Src"}}},
		{"MappingNeither", [][]string{{"[MF-ESM-PARTIAL-BATCH]", "Checks-MappingNeither/Fn/SqsEventSource"}, {"[MF-ESM-MAXCONCURRENCY]", "Checks-MappingNeither/Fn/SqsEventSource"}}},
		{"MappingNoCeiling", [][]string{{"[MF-ESM-MAXCONCURRENCY]", "Checks-MappingNoCeiling/Fn/SqsEventSource"}}},
		{"MappingNoPartialBatch", [][]string{{"[MF-ESM-PARTIAL-BATCH]", "Checks-MappingNoPartialBatch/Fn/SqsEventSource"}}},
		// An acknowledged rule is not reported.
		{"Acknowledged", nil},
		{"ReservedFive", [][]string{
			{"[MF-ESM-RESERVED]", "allow 10 concurrent invocations", "ReservedConcurrentExecutions is 5"},
			{"[MF-ESM-RESERVED]", "allow 10 concurrent invocations", "ReservedConcurrentExecutions is 5"},
		}},
		{"ReservedTen", nil},
		{"SetBy", [][]string{{"[MF-SQS-VISIBILITY]", "to fix, change PedidosVisibility in constructs/example (VisibilityTimeout) or CobroTimeout in constructs/example (Timeout)"}}},
		// The attempts cases, their attempts findings only (their queues
		// lack alarms).
		{"RuleNoRetryPolicy", [][]string{{RuleAttempts}, {"[MF-ATTEMPTS]", "Checks-RuleNoRetryPolicy/Regla/Resource", "186 attempts", "185 retries + 1 (×186)"}}},
		{"PerWorkItem", [][]string{{RuleAttempts}}},
		{"AttemptsEight", [][]string{{RuleAttempts}}},
		{"Unreadable", [][]string{{RuleAttempts}, {"[MF-ATTEMPTS]", "Checks-Unreadable/Opaca", "cannot be counted", "Fn::If"}}},
		{"UnreadableAcknowledged", [][]string{{RuleAttempts}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rule := ""
			if len(tc.want) > 0 && len(tc.want[0]) == 1 && !strings.HasPrefix(tc.want[0][0], "[") {
				rule, tc.want = tc.want[0][0], tc.want[1:]
			}
			got := findings(t, tc.name, rule)
			if len(got) != len(tc.want) {
				t.Fatalf("%d findings, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i, parts := range tc.want {
				requireContains(t, got[i:i+1], parts...)
			}
		})
	}
}

// The 80-call layering fails, naming the path and each factor, for the
// gateway and for the AWS SDK's calls.
func TestEightyCallLayering(t *testing.T) {
	errs := findings(t, "AttemptsEighty", RuleAttempts)
	for _, dep := range []string{`"gateway"`, `"aws"`} {
		requireContains(t, errs, dep, "80 attempts", "more than 15",
			"queue cola-mercadofresco-pedidos: maxReceiveCount 4 (×4)", "state machine flujo-pedido (×1)", "Retry MaxAttempts 3 + 1 (×4)", "function cobro: ")
	}
	requireContains(t, errs, "GATEWAY_MAX_ATTEMPTS=5 (×5)")
	requireContains(t, errs, "AWS_MAX_ATTEMPTS=5 (×5)")
}

// The worst path of the fix is the one through the pipe: 4 x 1 x 2 = 8.
func TestAttemptsCountEveryLayer(t *testing.T) {
	var worst AttemptPath
	for _, p := range Attempts(caseApp(t, "AttemptsEight")) {
		if p.Dependency == "gateway" && p.Total > worst.Total {
			worst = p
		}
	}
	if worst.Total != 8 || len(worst.Factors) != 4 || !strings.Contains(worst.Path(), "maxReceiveCount 4") {
		t.Fatalf("worst gateway path %s = %v, want the pipe's 4 x 1 x 2 = 8", worst.Path(), worst.Total)
	}
	byDep := map[string]AttemptPath{}
	for _, p := range Attempts(caseApp(t, "PerWorkItem")) {
		byDep[p.Dependency] = p
	}
	if p := byDep["events"]; p.Total != 6 {
		t.Errorf("per work item: %s = %v, want 2 x 3 = 6 (not x the 3 asynchronous invocations)", p.Path(), p.Total)
	}
	if p := byDep["lambda:publicador"]; p.Total != 1 {
		t.Errorf("rule delivery to the function: %s = %v", p.Path(), p.Total)
	}
	// An unreadable definition is an unbounded path, not a skipped one; one
	// built with Fn::Sub and a variable map is read, its 99 retries counted.
	var unreadable bool
	for _, p := range Attempts(caseApp(t, "Unreadable")) {
		if p.Unreadable != "" {
			unreadable = p.Total == Unbounded
		}
	}
	if !unreadable {
		t.Error("the unreadable state machine's path is not reported unbounded")
	}
	var counted bool
	for _, p := range Attempts(caseApp(t, "SubVariableMap")) {
		if p.Unreadable != "" {
			t.Errorf("unreadable: %s", p.Unreadable)
		}
		counted = counted || p.Total >= 100 && p.Total != Unbounded
	}
	if !counted {
		t.Error("no path counts the 99 retries + 1 of the Sub-built definition")
	}
}

// The app as committed (test/testdata/snapshots) passes every check in
// every environment.
func TestTheCommittedTemplatesPassEveryCheck(t *testing.T) {
	asm, err := synthesized.Load(snapshots)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Run(asm) {
		t.Error(f)
	}
}

// Regression: MF-ESM-RESERVED findings were reported in map order.
func TestFindingsAreReportedInAStableOrder(t *testing.T) {
	first := findings(t, "ReservedOrder", RuleESMReservedConcurrency)
	if len(first) != 6 {
		t.Fatalf("want 6 findings, got %d: %v", len(first), first)
	}
	for range 10 {
		if again := findings(t, "ReservedOrder", RuleESMReservedConcurrency); !slices.Equal(again, first) {
			t.Fatalf("findings reported in a different order:\n%s\nthen\n%s", strings.Join(first, "\n"), strings.Join(again, "\n"))
		}
	}
}

// A retrier of Lambda.TooManyRequestsException alone is not counted (the
// function did not run); one that also names another error is.
func TestThrottleRetrierIsNotCounted(t *testing.T) {
	retrier := func(n float64, errs ...any) any { return map[string]any{"ErrorEquals": errs, "MaxAttempts": n} }
	const throttle = "Lambda.TooManyRequestsException"
	for _, tc := range []struct {
		name     string
		retriers []any
		want     float64 // 0: no factor
	}{
		{"no retry", nil, 0},
		{"throttle alone", []any{retrier(18, throttle)}, 0},
		{"throttle beside a transient retrier", []any{retrier(18, throttle), retrier(3, "PasarelaNoDisponible")}, 4},
		{"mixed retrier", []any{retrier(3, throttle, "PasarelaNoDisponible")}, 4},
		{"mixed beside throttle", []any{retrier(18, throttle), retrier(3, "Lambda.ServiceException", throttle)}, 4},
		{"any error", []any{retrier(2, "States.ALL")}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := retryFactor(map[string]any{"Retry": tc.retriers}, "Cobrar")
			if got := map[bool]float64{true: f.N}[ok]; got != tc.want {
				t.Fatalf("factor %v (%q), want %v", got, f.Layer, tc.want)
			}
		})
	}
}
