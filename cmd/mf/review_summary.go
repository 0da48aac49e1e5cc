package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/mercadofresco/integration/synthesized"
)

// This file turns two sets of templates (the committed snapshots, and
// the environment synthesised now) into what a reviewer reads: the
// changed resources, risky first, the state machine definitions state by
// state, and the guardrail figures the change moves. It runs nothing.

// Risks, in the order the summary lists them.
const (
	RiskReplacement = "REPLACEMENT"
	RiskIAM         = "IAM"
	RiskRetries     = "RETRIES/TIMEOUTS"
	RiskDeletion    = "DELETION POLICY"
	RiskOther       = "other"
)

var riskOrder = []string{RiskReplacement, RiskIAM, RiskRetries, RiskDeletion, RiskOther}

// Change is one resource that differs between the templates.
type Change struct {
	Stack, LogicalID, Type string
	// Name is the resource's physical name (synthesized.Physical), else
	// its logical id.
	Name string
	// Kind is "+" (added), "-" (removed) or "~" (modified).
	Kind  string
	Props []PropChange
	// Risk is the riskiest of the change's risks (riskOrder).
	Risk string
	// States are the changed states of a state machine definition.
	States []StateChange
}

// PropChange is one changed property path of a modified resource.
type PropChange struct {
	Path          string
	Before, After any
}

// StateChange is one state of a state machine definition that differs.
type StateChange struct {
	State         string
	Before, After map[string]any // nil when added or removed
	Fields        []string       // the top-level fields that differ
}

// replacing are the properties whose change replaces the resource
// (CloudFormation's resource reference, "Update requires: Replacement"),
// for the types this app deploys.
var replacing = map[string][]string{
	"AWS::SQS::Queue":                   {"QueueName", "FifoQueue"},
	"AWS::SNS::Topic":                   {"TopicName", "FifoTopic"},
	"AWS::Lambda::Function":             {"FunctionName"},
	"AWS::Lambda::EventSourceMapping":   {"EventSourceArn", "StartingPosition"},
	"AWS::DynamoDB::Table":              {"TableName", "KeySchema"},
	"AWS::DynamoDB::GlobalTable":        {"TableName", "KeySchema"},
	"AWS::StepFunctions::StateMachine":  {"StateMachineName", "StateMachineType"},
	"AWS::IAM::Role":                    {"RoleName", "Path"},
	"AWS::Events::EventBus":             {"Name"},
	"AWS::Events::Rule":                 {"Name", "EventBusName"},
	"AWS::Events::Archive":              {"ArchiveName", "SourceArn"},
	"AWS::Logs::LogGroup":               {"LogGroupName"},
	"AWS::KMS::Alias":                   {"AliasName"},
	"AWS::SecretsManager::Secret":       {"Name"},
	"AWS::RDS::DBCluster":               {"DBClusterIdentifier", "Engine", "DatabaseName", "StorageEncrypted", "KmsKeyId", "DBSubnetGroupName"},
	"AWS::RDS::DBProxy":                 {"DBProxyName", "EngineFamily"},
	"AWS::EC2::VPC":                     {"CidrBlock"},
	"AWS::EC2::Subnet":                  {"CidrBlock", "AvailabilityZone", "VpcId"},
	"AWS::Pipes::Pipe":                  {"Name", "Source"},
	"AWS::ElastiCache::ServerlessCache": {"ServerlessCacheName", "Engine"},
}

var retryRE = regexp.MustCompile(`(?i)timeout|retry|retries|maxreceivecount|redrivepolicy|maximumretryattempts|maximumeventage|maximumrecordage|batchsize|batchingwindow|maximumconcurrency|reservedconcurrent|heartbeat`)

var iamTypes = []string{"AWS::Lambda::Permission", "AWS::SQS::QueuePolicy", "AWS::SNS::TopicPolicy", "AWS::KMS::Key", "AWS::SecretsManager::ResourcePolicy"}

// diffApps compares the stacks of before (nil: none) and after and
// returns the changed resources, riskiest first, then by stack and name.
func diffApps(before, after *synthesized.App) []Change {
	var out []Change
	for _, stack := range union(stacksOf(before), after.Stacks) {
		b, a := resourcesOf(before, stack), resourcesOf(after, stack)
		for _, id := range union(b, a) {
			rb, ra := b[id], a[id]
			c := Change{Stack: stack, LogicalID: id}
			switch {
			case rb == nil:
				c.Kind, c.Type, c.Name = "+", ra.Type, name(after, ra)
			case ra == nil:
				c.Kind, c.Type, c.Name = "-", rb.Type, name(before, rb)
			default:
				tb, ta := template(before, rb), template(after, ra)
				if reflect.DeepEqual(tb, ta) {
					continue
				}
				c.Kind, c.Type, c.Name = "~", ra.Type, name(after, ra)
				for _, attr := range []string{"DeletionPolicy", "UpdateReplacePolicy"} {
					if !reflect.DeepEqual(tb[attr], ta[attr]) {
						c.Props = append(c.Props, PropChange{Path: attr, Before: tb[attr], After: ta[attr]})
					}
				}
				leafDiff("", rb.Properties, ra.Properties, &c.Props)
				if c.Type == "AWS::StepFunctions::StateMachine" {
					c.States = diffDefinitions(states(before, rb), states(after, ra))
				}
			}
			c.Risk = risk(c)
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Change) int {
		return cmp.Or(cmp.Compare(slices.Index(riskOrder, a.Risk), slices.Index(riskOrder, b.Risk)),
			strings.Compare(a.Stack, b.Stack), strings.Compare(a.Name+a.LogicalID, b.Name+b.LogicalID))
	})
	return out
}

// union is the keys of a and b, sorted.
func union[A, B any](a map[string]A, b map[string]B) []string {
	keys := slices.AppendSeq(slices.Collect(maps.Keys(a)), maps.Keys(b))
	slices.Sort(keys)
	return slices.Compact(keys)
}

func stacksOf(app *synthesized.App) map[string]*synthesized.Stack {
	if app == nil {
		return nil
	}
	return app.Stacks
}

func resourcesOf(app *synthesized.App, stack string) map[string]*synthesized.Resource {
	if s := stacksOf(app)[stack]; s != nil {
		return s.Resources
	}
	return nil
}

// template is r as its template writes it, attributes and all.
func template(app *synthesized.App, r *synthesized.Resource) map[string]any {
	m, _ := synthesized.Dig(app.Stacks[r.Stack].Template, "Resources", r.LogicalID).(map[string]any)
	return m
}

// name is r's physical name when its template sets or implies one, else
// its logical id.
func name(app *synthesized.App, r *synthesized.Resource) string {
	if n, err := (synthesized.Physical{App: app}).Name(r); err == nil {
		return n
	}
	return r.LogicalID
}

// leafDiff appends the differing paths of two property values: maps are
// followed key by key; anything else (lists, scalars, intrinsics) is
// compared whole.
func leafDiff(path string, b, a any, out *[]PropChange) {
	mb, okB := b.(map[string]any)
	ma, okA := a.(map[string]any)
	if okB && okA && !isIntrinsic(mb) && !isIntrinsic(ma) {
		for _, k := range union(mb, ma) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			leafDiff(p, mb[k], ma[k], out)
		}
		return
	}
	if !reflect.DeepEqual(b, a) {
		*out = append(*out, PropChange{Path: path, Before: b, After: a})
	}
}

func isIntrinsic(m map[string]any) bool {
	if len(m) != 1 {
		return false
	}
	for k := range m {
		return k == "Ref" || strings.HasPrefix(k, "Fn::")
	}
	return false
}

func risk(c Change) string {
	iam := strings.HasPrefix(c.Type, "AWS::IAM::") || slices.Contains(iamTypes, c.Type)
	switch c.Kind {
	case "-":
		return RiskReplacement // a removal destroys the resource (and its data, unless retained)
	case "+":
		if iam {
			return RiskIAM
		}
		return RiskOther
	}
	anyPath := func(f func(path string) bool) bool {
		return slices.ContainsFunc(c.Props, func(p PropChange) bool { return f(p.Path) })
	}
	anyStateField := func(f func(field string) bool) bool {
		return slices.ContainsFunc(c.States, func(s StateChange) bool { return slices.ContainsFunc(s.Fields, f) })
	}
	switch {
	case anyPath(func(p string) bool { return slices.Contains(replacing[c.Type], strings.Split(p, ".")[0]) }):
		return RiskReplacement
	case iam || anyPath(func(p string) bool {
		return strings.Contains(p, "PolicyDocument") || strings.Contains(p, "ManagedPolicyArns") || strings.HasSuffix(p, "Role") ||
			strings.Split(p, ".")[0] == "Policy" // a bus's resource policy
	}):
		return RiskIAM
	case anyStateField(func(f string) bool { return retryRE.MatchString(f) || f == "Catch" }),
		anyPath(func(p string) bool { return p != "DefinitionString" && retryRE.MatchString(p) }):
		return RiskRetries
	case anyPath(func(p string) bool {
		return p == "DeletionPolicy" || p == "UpdateReplacePolicy" || strings.Contains(p, "DeletionProtection")
	}):
		return RiskDeletion
	}
	return RiskOther
}

// states are the states of a state machine's definition by name, those
// of Map and Parallel states included, each without the states inside it
// (none when the definition cannot be read).
func states(app *synthesized.App, sm *synthesized.Resource) map[string]map[string]any {
	out := map[string]map[string]any{}
	def, _ := app.Definition(sm)
	synthesized.WalkStates(def, func(name string, st map[string]any) {
		flat := maps.Clone(st)
		delete(flat, "Iterator")
		delete(flat, "ItemProcessor")
		delete(flat, "Branches")
		out[name] = flat
	})
	return out
}

// diffDefinitions compares two state machines' states.
func diffDefinitions(sb, sa map[string]map[string]any) []StateChange {
	var out []StateChange
	for _, n := range union(sb, sa) {
		b, a := sb[n], sa[n]
		if reflect.DeepEqual(b, a) {
			continue
		}
		sc := StateChange{State: n, Before: b, After: a}
		for _, k := range union(b, a) {
			if !reflect.DeepEqual(b[k], a[k]) {
				sc.Fields = append(sc.Fields, k)
			}
		}
		out = append(out, sc)
	}
	return out
}

// worstCase is the longest a Task state can take with its Retry: every
// attempt may run to TimeoutSeconds before it fails with an error a
// retrier catches, each retrier counts its own MaxAttempts (default 3), and
// the backoff between attempts (IntervalSeconds × BackoffRate^n, capped by
// MaxDelaySeconds) adds up; it returns the seconds and the attempts, 0
// when the state has no TimeoutSeconds.
func worstCase(st map[string]any) (float64, int) {
	timeout, ok := st["TimeoutSeconds"].(float64)
	if !ok || timeout <= 0 {
		return 0, 0
	}
	attempts, backoff := 1, 0.0
	retries, _ := st["Retry"].([]any)
	for _, r := range retries {
		rm, _ := r.(map[string]any)
		max, interval, rate := synthesized.Number(rm["MaxAttempts"], 3), synthesized.Number(rm["IntervalSeconds"], 1), synthesized.Number(rm["BackoffRate"], 2)
		capDelay, hasCap := rm["MaxDelaySeconds"].(float64)
		d := interval
		for range int(max) {
			if hasCap && d > capDelay {
				d = capDelay
			}
			backoff += d
			d *= rate
		}
		attempts += int(max)
	}
	return timeout*float64(attempts) + backoff, attempts
}

// figures are the guardrail figures the changes move, one line each, with
// the consumers and functions of the app after the change.
func figures(changes []Change, after *synthesized.App) []string {
	var out []string
	for _, c := range changes {
		if c.Kind != "~" {
			continue
		}
		for _, p := range c.Props {
			switch {
			case c.Type == "AWS::SQS::Queue" && p.Path == "VisibilityTimeout":
				out = append(out, fmt.Sprintf("%s VisibilityTimeout %s → %s s: must stay at least 6 × its consumer's timeout (MF-SQS-VISIBILITY)%s", c.Name, num(p.Before), num(p.After), consumerTimeout(after, c.Stack, c.LogicalID)))
			case c.Type == "AWS::SQS::Queue" && p.Path == "RedrivePolicy":
				b, a := num(synthesized.Redrive(p.Before)["maxReceiveCount"]), num(synthesized.Redrive(p.After)["maxReceiveCount"])
				if b != a {
					out = append(out, fmt.Sprintf("%s maxReceiveCount %s → %s: receives per message before the DLQ, a factor of every attempt count (MF-ATTEMPTS: at most 15 per dependency)", c.Name, b, a))
				}
			case c.Type == "AWS::SQS::Queue" && p.Path == "MessageRetentionPeriod":
				out = append(out, fmt.Sprintf("%s MessageRetentionPeriod %s → %s s: its DLQ must retain longer (MF-SQS-DLQ-RETENTION)", c.Name, num(p.Before), num(p.After)))
			case c.Type == "AWS::Lambda::Function" && p.Path == "Timeout":
				out = append(out, fmt.Sprintf("%s Timeout %s → %s s: its queue's VisibilityTimeout must stay at least 6 × %s = %s s (MF-SQS-VISIBILITY)", c.Name, num(p.Before), num(p.After), num(p.After), times6(p.After)))
			case c.Type == "AWS::Lambda::Function" && p.Path == "ReservedConcurrentExecutions",
				c.Type == "AWS::Lambda::EventSourceMapping" && p.Path == "ScalingConfig.MaximumConcurrency":
				out = append(out, fmt.Sprintf("%s %s %s → %s: the mappings' MaximumConcurrency must add up to at most the reserved concurrency (MF-ESM-RESERVED)", c.Name, p.Path, num(p.Before), num(p.After)))
			}
		}
		for _, s := range c.States {
			for _, f := range s.Fields {
				switch f {
				case "TimeoutSeconds", "Retry":
					line := fmt.Sprintf("%s %s %s → %s", s.State, f, brief(s.Before[f]), brief(s.After[f]))
					var notes []string
					if fn, t := stateFunction(after, c.Stack, c.LogicalID, s.State); fn != "" {
						note := fmt.Sprintf("worst-case time of one attempt %s s (%s's Timeout)", num(t), fn)
						if to, ok := s.After["TimeoutSeconds"].(float64); ok && to < t {
							note += ", ABOVE the state's TimeoutSeconds"
						}
						notes = append(notes, note)
					}
					before, _ := worstCase(s.Before)
					if after, attempts := worstCase(s.After); after > 0 {
						notes = append(notes, fmt.Sprintf("at most %s → %s s in the state over %d attempts", num(before), num(after), attempts))
					}
					if len(notes) > 0 {
						line += ": " + strings.Join(notes, "; ")
					}
					out = append(out, line)
				}
			}
		}
	}
	return out
}

// stateFunction is the Lambda function the state (of the state machine
// stack/id) invokes and its Timeout, "" when it invokes none.
func stateFunction(app *synthesized.App, stack, id, state string) (string, float64) {
	sm, _ := app.Resource(stack, id)
	for _, e := range app.Via(sm, synthesized.Task) {
		if t, ok := timeout(e.To); ok && e.State == state {
			return name(app, e.To), t
		}
	}
	return "", 0
}

// consumerTimeout names the consumer of the queue stack/id (the function
// an event source mapping invokes) and its timeout, "" when none.
func consumerTimeout(app *synthesized.App, stack, id string) string {
	q, _ := app.Resource(stack, id)
	for _, e := range app.From(q, synthesized.Mapping) {
		if t, ok := timeout(e.To); ok {
			return fmt.Sprintf("; %s's timeout %s s × 6 = %s s", name(app, e.To), num(t), times6(t))
		}
	}
	return ""
}

// timeout is a function's Timeout (ok false for anything else).
func timeout(fn *synthesized.Resource) (float64, bool) {
	if fn == nil || fn.Type != "AWS::Lambda::Function" {
		return 0, false
	}
	t, ok := fn.Prop("Timeout").(float64)
	return t, ok
}

func num(v any) string {
	switch x := v.(type) {
	case float64:
		return fmt.Sprintf("%g", x)
	case nil:
		return "(none)"
	case string:
		return x
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

func times6(v any) string {
	if f, ok := v.(float64); ok {
		return fmt.Sprintf("%g", 6*f)
	}
	return "?"
}

// brief is a value in one short line.
func brief(v any) string {
	if v == nil {
		return "(none)"
	}
	raw, _ := json.Marshal(v)
	s := string(raw)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// writeStates prints each changed state as pretty-printed JSON, before and
// after, only the fields that differ.
func writeStates(w io.Writer, changes []Change) {
	for _, c := range changes {
		if len(c.States) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nState machine %s (%s), state by state:\n", c.Name, c.Stack)
		for _, s := range c.States {
			switch {
			case s.Before == nil:
				fmt.Fprintf(w, "  [+] state %s\n%s", s.State, pretty(s.After, "      "))
			case s.After == nil:
				fmt.Fprintf(w, "  [-] state %s\n", s.State)
			default:
				fmt.Fprintf(w, "  [~] state %s\n", s.State)
				for _, f := range s.Fields {
					fmt.Fprintf(w, "      %s before:\n%s      %s after:\n%s", f, pretty(s.Before[f], "        "), f, pretty(s.After[f], "        "))
				}
			}
		}
	}
}

// pretty is v as indented JSON, every line prefixed with pre.
func pretty(v any, pre string) string {
	if v == nil {
		return pre + "(none)\n"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(pre, "  ")
	_ = enc.Encode(v) // values decoded from JSON encode again
	return pre + b.String()
}

// writeSummary prints the closing summary: the changed stacks and
// resources, risky first (one line per resource, at most maxResources and
// a count of the rest), the guardrail figures, the monthly cost and the
// function code.
func writeSummary(w io.Writer, env string, changes []Change, figs []string, cost string, code []string) {
	const maxResources = 8
	stacks := map[string]int{}
	for _, c := range changes {
		stacks[c.Stack]++
	}
	var names []string
	for _, s := range slices.Sorted(maps.Keys(stacks)) {
		names = append(names, fmt.Sprintf("%s (%d)", s, stacks[s]))
	}
	fmt.Fprintf(w, "\n=== Summary of %s ===\n", env)
	if len(changes) == 0 {
		fmt.Fprintf(w, "no stack changes\n")
	} else {
		fmt.Fprintf(w, "%d resources changed in %d stacks: %s\n", len(changes), len(stacks), strings.Join(names, ", "))
	}
	for i, c := range changes {
		if i == maxResources {
			fmt.Fprintf(w, "  … and %d more (the diffs above)\n", len(changes)-maxResources)
			break
		}
		fmt.Fprintf(w, "  %-16s [%s] %s %s%s\n", c.Risk, c.Kind, c.Type, c.Name, what(c))
	}
	if len(figs) > 0 {
		fmt.Fprintf(w, "guardrail figures moved:\n")
		for _, f := range figs {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	if cost != "" {
		fmt.Fprintf(w, "%s\n", cost)
	}
	if len(code) == 0 {
		fmt.Fprintf(w, "function code: unchanged\n")
	} else {
		fmt.Fprintf(w, "function code: %s\n", strings.Join(code, "; "))
	}
}

// what names the changed properties (or states) of a modified resource.
func what(c Change) string {
	if c.Kind != "~" {
		return ""
	}
	var parts []string
	for _, p := range c.Props {
		if p.Path == "DefinitionString" && len(c.States) > 0 {
			for _, s := range c.States {
				parts = append(parts, "state "+s.State+" "+strings.Join(s.Fields, ","))
			}
			continue
		}
		parts = append(parts, p.Path)
	}
	s := strings.Join(parts, ", ")
	if len(s) > 90 {
		s = s[:87] + "..."
	}
	return ": " + s
}
