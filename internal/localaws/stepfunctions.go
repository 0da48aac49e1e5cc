package localaws

// Step Functions: runs a state machine definition, as synthesised, in
// aws-local-stepfunctions and validates it with asl-validator (both from the
// project's node_modules), so construct tests can execute the workflow they
// define: task results are scripted per state, retry waits and Wait states
// are overridden to 0, and every scenario runs in one Node process.
//
// The harness is harness.mjs beside this file; its header documents the
// request and report shapes that RunWorkflow and WorkflowReport mirror.

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

	"github.com/mercadofresco/integration/synthesized"
	"time"
)

// TaskStep is one scripted answer of a Task state: a result, or an error name
// (the Lambda errorType, the SDK integration's error) with its cause.
type TaskStep struct {
	Result any    `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
	Cause  string `json:"cause,omitempty"`
}

// TaskOk is a TaskStep that returns result.
func TaskOk(result any) TaskStep { return TaskStep{Result: result} }

// TaskFail is a TaskStep that fails with the error name and cause.
func TaskFail(name, cause string) TaskStep { return TaskStep{Error: name, Cause: cause} }

// WorkflowScenario is one execution: its input and the answers of each Task state,
// by state name. The n-th call of a state gets the n-th step; the last step
// repeats. A Task state without steps fails with Harness.NoStep.
type WorkflowScenario struct {
	Name    string                `json:"name"`
	Input   any                   `json:"input"`
	Tasks   map[string][]TaskStep `json:"tasks"`
	Context map[string]any        `json:"context,omitempty"`
	// RealWaits lets the engine wait as the definition says (Retry
	// intervals, backoff, MaxDelaySeconds, jitter) instead of 0.
	RealWaits bool `json:"realWaits,omitempty"`
}

// WorkflowRetry is one retry the engine made: the state, the retrier (as written
// in the definition) and the retrier's attempt count after it.
type WorkflowRetry struct {
	State   string         `json:"state"`
	Retrier map[string]any `json:"retrier"`
	Attempt int            `json:"attempt"`
}

// WorkflowCatch is one error a Catch handled.
type WorkflowCatch struct {
	State   string         `json:"state"`
	Catcher map[string]any `json:"catcher"`
}

// WorkflowResult is what one scenario did.
type WorkflowResult struct {
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
	Retries   []WorkflowRetry      `json:"retries"`
	Caught    []WorkflowCatch      `json:"caught"`
	// States are the states entered, in order.
	States []string `json:"states"`
}

// CallCount is how many times state was invoked.
func (r *WorkflowResult) CallCount(state string) int { return len(r.Calls[state]) }

// Entered reports whether the execution entered state.
func (r *WorkflowResult) Entered(state string) bool { return slices.Contains(r.States, state) }

// WorkflowReport is the harness's answer.
type WorkflowReport struct {
	// Valid and ValidationErrors come from asl-validator.
	Valid            bool              `json:"valid"`
	ValidationErrors []json.RawMessage `json:"validationErrors"`
	Scenarios        []WorkflowResult  `json:"scenarios"`
}

// Scenario returns the result of the named scenario.
func (r *WorkflowReport) Scenario(name string) (*WorkflowResult, error) {
	for i := range r.Scenarios {
		if r.Scenarios[i].Name == name {
			return &r.Scenarios[i], nil
		}
	}
	return nil, fmt.Errorf("stepfunctions: no scenario %q in the report", name)
}

// ErrNoNode is returned when the project's node_modules cannot be found.
var ErrNoNode = errors.New("stepfunctions: node_modules/.bin/node not found above the working directory")

// RunWorkflow validates definition and executes every scenario in one Node
// process. ctx bounds the whole run.
func RunWorkflow(ctx context.Context, definition []byte, scenarios []WorkflowScenario) (*WorkflowReport, error) {
	node, err := nodeBin()
	if err != nil {
		return nil, err
	}
	_, self, _, _ := runtime.Caller(0)
	harness := filepath.Join(filepath.Dir(self), "stepfunctions.mjs")
	req, err := json.Marshal(struct {
		Definition json.RawMessage    `json:"definition"`
		Scenarios  []WorkflowScenario `json:"scenarios"`
	}{definition, scenarios})
	if err != nil {
		return nil, fmt.Errorf("stepfunctions: encode request: %w", err)
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
		return nil, fmt.Errorf("stepfunctions: harness: %w\n%s", err, stderr.String())
	}
	var rep WorkflowReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("stepfunctions: decode report: %w\n%s", err, stdout.String())
	}
	return &rep, nil
}

func nodeBin() (string, error) {
	const rel = "node_modules/.bin/node"
	dir, err := FindUp(rel)
	if err != nil {
		return "", ErrNoNode
	}
	return filepath.Join(dir, rel), nil
}

// WorkflowDefinition is the state machine logicalID of a synthesised
// template (as assertions.Template.ToJSON returns it) in the ASL Step
// Functions would run: synthesized.App.Definition, every reference given
// the meaning AWS gives it in region and account.
func WorkflowDefinition(template map[string]any, logicalID, region, account string) ([]byte, error) {
	raw, err := json.Marshal(template)
	if err != nil {
		return nil, err
	}
	app := synthesized.New("test", account, region)
	if err := app.Add("Stack", raw); err != nil {
		return nil, err
	}
	sm, ok := app.Resource("Stack", logicalID)
	if !ok {
		return nil, fmt.Errorf("stepfunctions: no resource %s", logicalID)
	}
	def, err := app.Definition(sm)
	if err != nil {
		return nil, err
	}
	return json.Marshal(def)
}
