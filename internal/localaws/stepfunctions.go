package localaws

// Step Functions: state machine definitions, as synthesised, validated and
// executed in aws-local-stepfunctions, in one Node process per test
// (stepfunctions.mjs beside this file; its header documents the protocol).
// Each Task state calls back here, where a TaskFunc answers it: a script of
// results and errors in the construct tests, the real handlers and the local
// queues and topics in the e2e run.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/mercadofresco/integration/constructs/golambda/gobuild"
	"github.com/mercadofresco/integration/synthesized"
)

// TaskCall is one call of a Task state.
type TaskCall struct {
	ExecutionARN, State, Resource string
	Input                         json.RawMessage
}

// TaskFailure is a failed task: the error name Step Functions sees (a
// Lambda errorType, an SDK integration's error) and its cause.
type TaskFailure struct {
	Error, Cause string
}

// TaskFunc answers a Task state's call with its result or its failure.
type TaskFunc func(ctx context.Context, c TaskCall) (json.RawMessage, *TaskFailure)

// TaskStep is one scripted answer of a Task state: a result, or an error name
// with its cause.
type TaskStep struct {
	Result any
	Error  string
	Cause  string
}

// TaskOk is a TaskStep that returns result.
func TaskOk(result any) TaskStep { return TaskStep{Result: result} }

// TaskFail is a TaskStep that fails with the error name and cause.
func TaskFail(name, cause string) TaskStep { return TaskStep{Error: name, Cause: cause} }

// Script answers the n-th call of a state with its n-th step, the last
// step repeating; a Task state without steps fails with Harness.NoStep.
func Script(steps map[string][]TaskStep) TaskFunc {
	var mu sync.Mutex
	calls := map[string]int{}
	return func(_ context.Context, c TaskCall) (json.RawMessage, *TaskFailure) {
		mu.Lock()
		n := calls[c.State]
		calls[c.State]++
		mu.Unlock()
		s := steps[c.State]
		if len(s) == 0 {
			return nil, &TaskFailure{Error: "Harness.NoStep", Cause: "no step for task state " + c.State}
		}
		step := s[min(n, len(s)-1)]
		if step.Error != "" {
			return nil, &TaskFailure{Error: step.Error, Cause: step.Cause}
		}
		b, err := json.Marshal(step.Result)
		if err != nil {
			return nil, &TaskFailure{Error: "Harness.BadStep", Cause: err.Error()}
		}
		return b, nil
	}
}

// Retry is one retry the engine made: the state, the retrier (as written in
// the definition) and the retrier's attempt count after it.
type Retry struct {
	State   string
	Retrier map[string]any
	Attempt int
}

// ExecutionResult is a finished execution.
type ExecutionResult struct {
	Execution
	// Status is SUCCEEDED or FAILED; Error and Cause are a FAILED one's.
	Status, Error, Cause string
	Output               json.RawMessage
	// States are the states entered, in order.
	States  []string
	Retries []Retry
	// Calls are the inputs each Task state received, in order; CallTimes
	// how long after the start each call came.
	Calls     map[string][]json.RawMessage
	CallTimes map[string][]time.Duration
}

// CallCount is how many times state was called.
func (r *ExecutionResult) CallCount(state string) int { return len(r.Calls[state]) }

// Entered reports whether the execution entered state.
func (r *ExecutionResult) Entered(state string) bool { return slices.Contains(r.States, state) }

// StepFunctions runs executions in one Node process, stopped when the test
// ends. Start makes it an Endpoint's Executor; Run executes one definition
// and waits for it. Safe for concurrent use.
type StepFunctions struct {
	// Definitions are the state machines Start runs, by ARN; Task answers
	// their Task states and Done, when set, receives each as it finishes.
	Definitions map[string]map[string]any
	Task        TaskFunc
	Done        func(ExecutionResult)

	cmd     *exec.Cmd
	stdinMu sync.Mutex
	stdin   io.WriteCloser
	exited  chan struct{}
	active  atomic.Int64

	mu          sync.Mutex
	running     map[string]*execution
	validated   map[string]chan []string
	validations atomic.Int64
}

type execution struct {
	result ExecutionResult
	start  time.Time // wall clock, for CallTimes
	task   TaskFunc
	done   func(ExecutionResult)
}

// NewStepFunctions starts the Node process with the project's node_modules;
// seed seeds the engine's jitter, and the process's stderr goes to logs
// (os.Stderr when nil).
func NewStepFunctions(t testing.TB, seed uint64, logs io.Writer) *StepFunctions {
	t.Helper()
	root, err := gobuild.FindUp("go.mod", "node_modules/.bin/node")
	if err != nil {
		t.Fatalf("stepfunctions: %v", err)
	}
	s := &StepFunctions{exited: make(chan struct{}), running: map[string]*execution{}, validated: map[string]chan []string{}}
	task := httptest.NewServer(http.HandlerFunc(s.serveTask))
	t.Cleanup(task.Close)
	s.cmd = exec.Command(filepath.Join(root, "node_modules", ".bin", "node"), filepath.Join(root, "internal", "localaws", "stepfunctions.mjs"))
	s.cmd.Dir = root
	s.cmd.Env = append(os.Environ(), "TASK_URL="+task.URL, "SEED="+strconv.FormatUint(seed%4294967296, 10))
	s.cmd.Stderr = logs
	if logs == nil {
		s.cmd.Stderr = os.Stderr
	}
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatalf("stepfunctions: %v", err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("stepfunctions: %v", err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("stepfunctions: node: %v", err)
	}
	t.Cleanup(func() {
		s.stdin.Close()
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
	go s.read(stdout)
	return s
}

func (s *StepFunctions) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.stdinMu.Lock()
	defer s.stdinMu.Unlock()
	_, err = s.stdin.Write(append(b, '\n'))
	return err
}

// Validate returns what asl-validator finds wrong with def, as deployed
// (ARNs and paths checked).
func (s *StepFunctions) Validate(ctx context.Context, def map[string]any) []string {
	ch := make(chan []string, 1)
	id := strconv.FormatInt(s.validations.Add(1), 10)
	s.mu.Lock()
	s.validated[id] = ch
	s.mu.Unlock()
	if err := s.send(map[string]any{"op": "validate", "id": id, "definition": def}); err != nil {
		return []string{err.Error()}
	}
	select {
	case errs := <-ch:
		return errs
	case <-s.exited:
		return []string{"the Node process exited"}
	case <-ctx.Done():
		return []string{ctx.Err().Error()}
	}
}

func (s *StepFunctions) read(stdout io.Reader) {
	defer close(s.exited)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var msg struct {
			Op, ID, ExecutionArn, Status, Error, Cause string
			Errors                                     []string
			Output                                     json.RawMessage
			States                                     []string
			Retries                                    []Retry
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			continue
		}
		s.mu.Lock()
		switch msg.Op {
		case "validated":
			if ch := s.validated[msg.ID]; ch != nil {
				delete(s.validated, msg.ID)
				ch <- msg.Errors
			}
		case "done":
			x := s.running[msg.ExecutionArn]
			delete(s.running, msg.ExecutionArn)
			if x == nil {
				break
			}
			r := &x.result
			r.Status, r.Error, r.Cause, r.Output, r.States, r.Retries = msg.Status, msg.Error, msg.Cause, msg.Output, msg.States, msg.Retries
			s.mu.Unlock()
			s.active.Add(-1)
			x.done(*r)
			continue
		}
		s.mu.Unlock()
	}
	_ = s.cmd.Wait()
}

// Start implements Executor: it runs the definition of e's state machine
// with Task, and hands the result to Done.
func (s *StepFunctions) Start(_ context.Context, e Execution) error {
	def := s.Definitions[e.StateMachineARN]
	if def == nil {
		return fmt.Errorf("state machine %s is not in the templates", e.StateMachineARN)
	}
	done := s.Done
	if done == nil {
		done = func(ExecutionResult) {}
	}
	return s.start(def, e, s.Task, false, done)
}

// Run executes def as e (its ARN names the execution; Start defaults to
// now) with task answering its Task states, and returns the result. With
// zeroWaits, Retry and Wait states wait 0 ms instead of what def says.
func (s *StepFunctions) Run(ctx context.Context, def map[string]any, e Execution, task TaskFunc, zeroWaits bool) (ExecutionResult, error) {
	if e.Start.IsZero() {
		e.Start = time.Now()
	}
	ch := make(chan ExecutionResult, 1)
	if err := s.start(def, e, task, zeroWaits, func(r ExecutionResult) { ch <- r }); err != nil {
		return ExecutionResult{}, err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-s.exited:
		return ExecutionResult{}, errors.New("stepfunctions: the Node process exited")
	case <-ctx.Done():
		return ExecutionResult{}, ctx.Err()
	}
}

func (s *StepFunctions) start(def map[string]any, e Execution, task TaskFunc, zeroWaits bool, done func(ExecutionResult)) error {
	var input any
	if err := json.Unmarshal([]byte(e.Input), &input); err != nil {
		return err
	}
	x := &execution{start: time.Now(), task: task, done: done, result: ExecutionResult{Execution: e,
		Calls: map[string][]json.RawMessage{}, CallTimes: map[string][]time.Duration{}}}
	s.mu.Lock()
	if s.running[e.ARN] != nil {
		s.mu.Unlock()
		return fmt.Errorf("stepfunctions: execution %s is running", e.ARN)
	}
	s.running[e.ARN] = x
	s.mu.Unlock()
	s.active.Add(1)
	err := s.send(map[string]any{"op": "start", "executionArn": e.ARN, "name": e.Name, "definition": def, "input": input,
		"startTime": e.Start.UTC().Format(time.RFC3339Nano), "zeroWaits": zeroWaits})
	if err != nil {
		s.mu.Lock()
		delete(s.running, e.ARN)
		s.mu.Unlock()
		s.active.Add(-1)
	}
	return err
}

// Active is the number of executions running.
func (s *StepFunctions) Active() int64 { return s.active.Load() }

// serveTask answers one Task state's call with its execution's TaskFunc.
func (s *StepFunctions) serveTask(rw http.ResponseWriter, r *http.Request) {
	var c TaskCall // {"executionArn","state","resource","input"}
	if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	x := s.running[c.ExecutionARN]
	if x != nil {
		x.result.Calls[c.State] = append(x.result.Calls[c.State], c.Input)
		x.result.CallTimes[c.State] = append(x.result.CallTimes[c.State], time.Since(x.start))
	}
	s.mu.Unlock()
	var out json.RawMessage
	fail := &TaskFailure{Error: "Harness.UnknownExecution", Cause: c.ExecutionARN}
	if x != nil {
		out, fail = x.task(r.Context(), c)
	}
	rw.Header().Set("Content-Type", "application/json")
	if fail != nil {
		_ = json.NewEncoder(rw).Encode(map[string]string{"error": fail.Error, "cause": fail.Cause})
		return
	}
	_ = json.NewEncoder(rw).Encode(map[string]json.RawMessage{"result": out})
}

// WorkflowDefinition is the state machine logicalID of a synthesised
// template (as assertions.Template.ToJSON returns it) in the ASL Step
// Functions would run: synthesized.App.Definition, every reference given
// the meaning AWS gives it in region and account.
func WorkflowDefinition(template map[string]any, logicalID, region, account string) (map[string]any, error) {
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
	return app.Definition(sm)
}

// Reserved is a function's reserved concurrency as Lambda enforces it: an
// invocation beyond Limit concurrent ones is refused (lambdaapi.ErrLambdaThrottled) before
// the function runs. A zero Limit is unreserved. Safe for concurrent use.
type Reserved struct {
	Limit                     int64
	inFlight, peak, throttled atomic.Int64
}

// Enter takes a slot for one invocation: release gives it back; ok is
// false when every slot is taken.
func (r *Reserved) Enter() (release func(), ok bool) {
	n := r.inFlight.Add(1)
	if r.Limit > 0 && n > r.Limit {
		r.inFlight.Add(-1)
		r.throttled.Add(1)
		return nil, false
	}
	for p := r.peak.Load(); n > p && !r.peak.CompareAndSwap(p, n); p = r.peak.Load() {
	}
	return func() { r.inFlight.Add(-1) }, true
}

// Peak is the most invocations in flight at once, Throttled how many were
// refused.
func (r *Reserved) Peak() int64      { return r.peak.Load() }
func (r *Reserved) Throttled() int64 { return r.throttled.Load() }

// ResourceSendMessageBatch is the resource of Step Functions' aws-sdk
// integration the workflow sends its stock batches with.
const ResourceSendMessageBatch = "arn:aws:states:::aws-sdk:sqs:sendMessageBatch"

// SendMessageBatchTask plays a ResourceSendMessageBatch call on f as Step
// Functions does: the task's parameters are the API's request, its result
// the API's answer (Failed[] included, the call succeeding), and an API
// error is the task's error "Sqs.<code>".
func (f *SQS) SendMessageBatchTask(ctx context.Context, c TaskCall) (json.RawMessage, *TaskFailure) {
	var in sqs.SendMessageBatchInput
	if err := json.Unmarshal(c.Input, &in); err != nil {
		return nil, &TaskFailure{Error: "States.Runtime", Cause: err.Error()}
	}
	out, err := f.SendMessageBatch(ctx, &in)
	var api smithy.APIError
	if errors.As(err, &api) {
		return nil, &TaskFailure{Error: "Sqs." + api.ErrorCode(), Cause: api.ErrorMessage()}
	} else if err != nil {
		return nil, &TaskFailure{Error: "States.TaskFailed", Cause: err.Error()}
	}
	b, _ := json.Marshal(map[string]any{"Successful": out.Successful, "Failed": out.Failed})
	return b, nil
}

// PublishedMessage is the message an sns:publish task's Message parameter
// publishes: a string as it is, an object serialised as JSON (as Step
// Functions does).
func PublishedMessage(message json.RawMessage) string {
	var s string
	if json.Unmarshal(message, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, message) != nil {
		return string(message)
	}
	return b.String()
}
