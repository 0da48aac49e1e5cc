// Package asltest runs a state machine definition, as synthesised, in
// aws-local-stepfunctions and validates it with asl-validator (both from the
// project's node_modules), so construct tests can execute the workflow they
// define: task results are scripted per state, retry waits and Wait states
// are overridden to 0, and every scenario runs in one Node process.
//
// The harness is harness.mjs beside this file; its header documents the
// request and report shapes that Run and Report mirror.
package asltest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/mercadofresco/integration/internal/testproc"
	"github.com/mercadofresco/integration/synthesized"
)

// Step is one scripted answer of a Task state: a result, or an error name
// (the Lambda errorType, the SDK integration's error) with its cause.
type Step struct {
	Result any    `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
	Cause  string `json:"cause,omitempty"`
}

// Ok is a Step that returns result.
func Ok(result any) Step { return Step{Result: result} }

// Fail is a Step that fails with the error name and cause.
func Fail(name, cause string) Step { return Step{Error: name, Cause: cause} }

// Scenario is one execution: its input and the answers of each Task state,
// by state name. The n-th call of a state gets the n-th step; the last step
// repeats. A Task state without steps fails with Harness.NoStep.
type Scenario struct {
	Name    string            `json:"name"`
	Input   any               `json:"input"`
	Tasks   map[string][]Step `json:"tasks"`
	Context map[string]any    `json:"context,omitempty"`
	// RealWaits lets the engine wait as the definition says (Retry
	// intervals, backoff, MaxDelaySeconds, jitter) instead of 0.
	RealWaits bool `json:"realWaits,omitempty"`
}

// Retry is one retry the engine made: the state, the retrier (as written
// in the definition) and the retrier's attempt count after it.
type Retry struct {
	State   string         `json:"state"`
	Retrier map[string]any `json:"retrier"`
	Attempt int            `json:"attempt"`
}

// Catch is one error a Catch handled.
type Catch struct {
	State   string         `json:"state"`
	Catcher map[string]any `json:"catcher"`
}

// Result is what one scenario did.
type Result struct {
	Name string `json:"name"`
	// Status is SUCCEEDED or FAILED.
	Status string          `json:"status"`
	Output json.RawMessage `json:"output"`
	// Error and Cause of a FAILED execution.
	Error string `json:"error"`
	Cause string `json:"cause"`
	// Calls are the inputs each Task state received, in order.
	Calls map[string][]json.RawMessage `json:"calls"`
	// CallTimes are the milliseconds from the start of the execution to
	// each call of a Task state.
	CallTimes map[string][]float64 `json:"callTimes"`
	Retries   []Retry              `json:"retries"`
	Caught    []Catch              `json:"caught"`
	// States are the states entered, in order.
	States []string `json:"states"`
}

// CallCount is how many times state was invoked.
func (r *Result) CallCount(state string) int { return len(r.Calls[state]) }

// Entered reports whether the execution entered state.
func (r *Result) Entered(state string) bool { return slices.Contains(r.States, state) }

// Report is the harness's answer.
type Report struct {
	// Valid and ValidationErrors come from asl-validator.
	Valid            bool              `json:"valid"`
	ValidationErrors []json.RawMessage `json:"validationErrors"`
	Scenarios        []Result          `json:"scenarios"`
}

// Scenario returns the result of the named scenario.
func (r *Report) Scenario(name string) (*Result, error) {
	for i := range r.Scenarios {
		if r.Scenarios[i].Name == name {
			return &r.Scenarios[i], nil
		}
	}
	return nil, fmt.Errorf("asltest: no scenario %q in the report", name)
}

// ErrNoNode is returned when the project's node_modules cannot be found.
var ErrNoNode = errors.New("asltest: node_modules/.bin/node not found above the working directory")

// Run validates definition and executes every scenario in one Node
// process. ctx bounds the whole run.
func Run(ctx context.Context, definition []byte, scenarios []Scenario) (*Report, error) {
	node, err := nodeBinary()
	if err != nil {
		return nil, err
	}
	_, self, _, _ := runtime.Caller(0)
	harness := filepath.Join(filepath.Dir(self), "harness.mjs")
	req, err := json.Marshal(struct {
		Definition json.RawMessage `json:"definition"`
		Scenarios  []Scenario      `json:"scenarios"`
	}{definition, scenarios})
	if err != nil {
		return nil, fmt.Errorf("asltest: encode request: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, node, harness)
	cmd.Stdin = bytes.NewReader(req)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("asltest: harness: %w\n%s", err, stderr.String())
	}
	var rep Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("asltest: decode report: %w\n%s", err, stdout.String())
	}
	return &rep, nil
}

func nodeBinary() (string, error) {
	const rel = "node_modules/.bin/node"
	dir, err := testproc.FindUp(rel)
	if err != nil {
		return "", ErrNoNode
	}
	return filepath.Join(dir, rel), nil
}

// Definition renders the DefinitionString of the state machine logicalID
// in a synthesised template (as assertions.Template.ToJSON returns it)
// into the ASL that Step Functions would run, with every reference
// replaced by a plausible value from FakeValues (ARNs, queue URLs, names).
func Definition(template map[string]any, logicalID, region, account string) ([]byte, error) {
	res, _ := template["Resources"].(map[string]any)
	sm, _ := res[logicalID].(map[string]any)
	if sm == nil {
		return nil, fmt.Errorf("asltest: no resource %s", logicalID)
	}
	props, _ := sm["Properties"].(map[string]any)
	def, err := synthesized.Render(props["DefinitionString"], FakeValues(template, region, account))
	if err != nil {
		return nil, err
	}
	if subs, ok := props["DefinitionSubstitutions"].(map[string]any); ok {
		for k, v := range subs {
			s, err := synthesized.Render(v, FakeValues(template, region, account))
			if err != nil {
				return nil, err
			}
			def = strings.ReplaceAll(def, "${"+k+"}", s)
		}
	}
	if !json.Valid([]byte(def)) {
		return nil, fmt.Errorf("asltest: the rendered definition is not JSON:\n%s", def)
	}
	return []byte(def), nil
}

// FakeValues resolves references of template the way CloudFormation would
// for a stack in region and account: pseudo parameters, Ref and Fn::GetAtt
// of functions (ARN), queues (URL / ARN / name), topics (ARN), log groups,
// roles, tables; Fn::ImportValue becomes "import:<name>".
func FakeValues(template map[string]any, region, account string) func(synthesized.Reference) (string, error) {
	res, _ := template["Resources"].(map[string]any)
	return func(r synthesized.Reference) (string, error) {
		if r.Import != "" {
			return "import:" + r.Import, nil
		}
		switch r.LogicalID {
		case "AWS::Region":
			return region, nil
		case "AWS::AccountId":
			return account, nil
		case "AWS::Partition":
			return "aws", nil
		case "AWS::URLSuffix":
			return "amazonaws.com", nil
		case "AWS::StackName":
			return "stack", nil
		}
		rsc, _ := res[r.LogicalID].(map[string]any)
		if rsc == nil {
			return "", fmt.Errorf("asltest: reference to unknown resource %s", r.LogicalID)
		}
		typ, _ := rsc["Type"].(string)
		props, _ := rsc["Properties"].(map[string]any)
		name := func(key string) string {
			if s, ok := props[key].(string); ok {
				return s
			}
			return strings.ToLower(r.LogicalID)
		}
		arn := func(service, resource string) string {
			return fmt.Sprintf("arn:aws:%s:%s:%s:%s", service, region, account, resource)
		}
		switch typ {
		case "AWS::Lambda::Function":
			return arn("lambda", "function:"+name("FunctionName")), nil
		case "AWS::SQS::Queue":
			switch r.Attribute {
			case "Arn":
				return arn("sqs", name("QueueName")), nil
			case "QueueName":
				return name("QueueName"), nil
			}
			return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", region, account, name("QueueName")), nil
		case "AWS::SNS::Topic":
			if r.Attribute == "TopicName" {
				return name("TopicName"), nil
			}
			return arn("sns", name("TopicName")), nil
		case "AWS::DynamoDB::Table":
			if r.Attribute == "" {
				return name("TableName"), nil
			}
			return arn("dynamodb", "table/"+name("TableName")), nil
		case "AWS::Events::EventBus":
			if r.Attribute == "Arn" {
				return arn("events", "event-bus/"+name("Name")), nil
			}
			return name("Name"), nil
		}
		if r.Attribute == "Arn" {
			return arn("fake", r.LogicalID), nil
		}
		return r.LogicalID, nil
	}
}
