package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/synthesized"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Executor plays Step Functions: the templates' state machines run in
// aws-local-stepfunctions (sfnexec.mjs, one Node process for every
// execution), and each Task state calls back here (the engine's
// taskResourceLocalHandlers override, over HTTP), where Lambda resources
// run the real Go handlers in-process and the sqs:sendMessage and
// sns:publish integrations act on the local queues and topics.
type Executor struct {
	w    *World
	defs map[string]map[string]any // state machine ARN -> definition as run

	cmd     *exec.Cmd
	stdinMu sync.Mutex
	stdin   io.WriteCloser
	task    *httptest.Server

	mu        sync.Mutex
	running   map[string]localaws.Execution
	validated map[string]chan []string
	results   []ExecutionResult
	onDone    func(ExecutionResult)
	exited    chan struct{}
	active    atomic.Int64
	taskCalls sync.Map // state name -> *atomic.Int64
	faults    atomic.Pointer[TaskFaults]
}

// TaskFaults are the run's faults at the boundary of Step Functions' tasks.
type TaskFaults struct {
	// LoseAnswer: the Lambda task ran to success, and Step Functions gets
	// Lambda.ServiceException instead of its answer (an Invoke is at least
	// once: the state's Retry runs the function again).
	LoseAnswer func(entry string, in json.RawMessage) bool
	// FailPublish: an sns:publish of this message fails.
	FailPublish func(message string) bool
}

// TaskCalls is how many times the state's task was called.
func (x *Executor) TaskCalls(state string) int64 {
	if v, ok := x.taskCalls.Load(state); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

// ExecutionResult is a finished execution.
type ExecutionResult struct {
	ARN, Name, Input     string
	Status, Error, Cause string
	Output               json.RawMessage
	Retries              int
	Started, Finished    time.Time
}

// startExecutor validates the templates' state machine definitions as
// written and starts the Node executor with them, their waits and timeouts
// scaled.
func (w *World) startExecutor(ctx context.Context, onDone func(ExecutionResult)) *Executor {
	x := &Executor{w: w, defs: map[string]map[string]any{}, running: map[string]localaws.Execution{},
		validated: map[string]chan []string{}, onDone: onDone, exited: make(chan struct{})}
	x.task = httptest.NewServer(http.HandlerFunc(x.serveTask))
	w.t.Cleanup(x.task.Close)

	root, err := localaws.FindUp("go.mod")
	if err != nil {
		w.fatalf("%v", err)
	}
	x.cmd = exec.Command("node", filepath.Join(root, "internal", "e2e", "sfnexec.mjs"))
	x.cmd.Dir = root
	x.cmd.Env = append(os.Environ(), "TASK_URL="+x.task.URL, "SEED="+strconv.FormatUint(w.opts.Seed%4294967296, 10),
		"PATH="+filepath.Join(root, "node_modules", ".bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	x.cmd.Stderr = w.opts.Logs
	if x.stdin, err = x.cmd.StdinPipe(); err != nil {
		w.fatalf("%v", err)
	}
	stdout, err := x.cmd.StdoutPipe()
	if err != nil {
		w.fatalf("%v", err)
	}
	if err := x.cmd.Start(); err != nil {
		w.fatalf("node (aws-local-stepfunctions): %v", err)
	}
	w.t.Cleanup(func() {
		x.stdin.Close()
		select {
		case <-x.exited:
		case <-time.After(5 * time.Second):
			_ = x.cmd.Process.Kill()
			<-x.exited
		}
	})
	go x.read(stdout)

	for _, r := range w.app.Resources("AWS::StepFunctions::StateMachine") {
		arn, _ := w.Physical().Ref(r)
		def, err := w.app.Definition(r)
		if err != nil {
			w.fatalf("%s: %v", r.Path(), err)
		}
		if errs := x.validate(ctx, arn, def); len(errs) > 0 {
			w.fatalf("%s: the definition does not validate: %v", r.Path(), errs)
		}
		x.defs[arn] = w.scaleDefinition(def)
	}
	return x
}

func (x *Executor) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	x.stdinMu.Lock()
	defer x.stdinMu.Unlock()
	_, err = x.stdin.Write(append(b, '\n'))
	return err
}

func (x *Executor) validate(ctx context.Context, id string, def map[string]any) []string {
	ch := make(chan []string, 1)
	x.mu.Lock()
	x.validated[id] = ch
	x.mu.Unlock()
	if err := x.send(map[string]any{"op": "validate", "id": id, "definition": def}); err != nil {
		return []string{err.Error()}
	}
	select {
	case errs := <-ch:
		return errs
	case <-x.exited:
		return []string{"the executor exited"}
	case <-ctx.Done():
		return []string{ctx.Err().Error()}
	}
}

func (x *Executor) read(stdout io.Reader) {
	defer close(x.exited)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var msg struct {
			Op, ID, ExecutionArn, Status, Error, Cause string
			Errors                                     []string
			Output                                     json.RawMessage
			Retries                                    int
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			continue
		}
		switch msg.Op {
		case "validated":
			x.mu.Lock()
			ch := x.validated[msg.ID]
			x.mu.Unlock()
			if ch != nil {
				ch <- msg.Errors
			}
		case "done":
			x.mu.Lock()
			e := x.running[msg.ExecutionArn]
			delete(x.running, msg.ExecutionArn)
			res := ExecutionResult{ARN: msg.ExecutionArn, Name: e.Name, Input: e.Input, Status: msg.Status, Error: msg.Error,
				Cause: msg.Cause, Output: msg.Output, Retries: msg.Retries, Started: e.Start, Finished: x.w.clock.Now()}
			x.results = append(x.results, res)
			x.mu.Unlock()
			if x.onDone != nil {
				x.onDone(res)
			}
			x.active.Add(-1)
		}
	}
	_ = x.cmd.Wait()
}

// Start implements localaws.Executor.
func (x *Executor) Start(_ context.Context, e localaws.Execution) error {
	def := x.defs[e.StateMachineARN]
	if def == nil {
		return fmt.Errorf("state machine %s is not in the templates", e.StateMachineARN)
	}
	var input any
	if err := json.Unmarshal([]byte(e.Input), &input); err != nil {
		return err
	}
	x.mu.Lock()
	x.running[e.ARN] = e
	x.mu.Unlock()
	x.active.Add(1)
	err := x.send(map[string]any{"op": "start", "executionArn": e.ARN, "name": e.Name, "definition": def, "input": input,
		"startTime": e.Start.UTC().Format(time.RFC3339Nano)})
	if err != nil {
		x.mu.Lock()
		delete(x.running, e.ARN)
		x.mu.Unlock()
		x.active.Add(-1)
	}
	return err
}

// Active is the number of executions running.
func (x *Executor) Active() int64 { return x.active.Load() }

// Results returns the finished executions.
func (x *Executor) Results() []ExecutionResult {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]ExecutionResult(nil), x.results...)
}

// serveTask runs one Task state.
func (x *Executor) serveTask(rw http.ResponseWriter, r *http.Request) {
	var in struct {
		State, Resource string
		Input           json.RawMessage
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(rw, err.Error(), 400)
		return
	}
	v, _ := x.taskCalls.LoadOrStore(in.State, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
	out, fail := x.runTask(r.Context(), in.Resource, in.Input)
	rw.Header().Set("Content-Type", "application/json")
	if fail != nil {
		_ = json.NewEncoder(rw).Encode(map[string]string{"error": fail.Error, "cause": fail.Cause})
		return
	}
	_ = json.NewEncoder(rw).Encode(map[string]json.RawMessage{"result": out})
}

func (x *Executor) runTask(ctx context.Context, resource string, in json.RawMessage) (json.RawMessage, *TaskFailure) {
	w := x.w
	switch {
	case strings.HasPrefix(resource, "arn:aws:lambda:"):
		f := w.functions[resource]
		if f == nil {
			return nil, &TaskFailure{Error: "Lambda.ResourceNotFoundException", Cause: resource}
		}
		out, fail := f.InvokeTask(context.WithoutCancel(ctx), in)
		if tf := x.faults.Load(); fail == nil && tf != nil && tf.LoseAnswer != nil && tf.LoseAnswer(f.Entry, in) {
			return nil, &TaskFailure{Error: "Lambda.ServiceException", Cause: "the invocation succeeded and its answer was lost (injected)"}
		}
		return out, fail
	case resource == "arn:aws:states:::sqs:sendMessage":
		var p sqs.SendMessageInput // the task's parameters are the API's request
		if err := json.Unmarshal(in, &p); err != nil {
			return nil, &TaskFailure{Error: "States.Runtime", Cause: err.Error()}
		}
		out, err := w.sqs.SendMessage(ctx, &p)
		if err != nil {
			return nil, &TaskFailure{Error: "SQS.SqsException", Cause: err.Error()}
		}
		b, _ := json.Marshal(map[string]string{"MessageId": aws.ToString(out.MessageId), "SequenceNumber": aws.ToString(out.SequenceNumber)})
		return b, nil
	case resource == "arn:aws:states:::sns:publish":
		var p struct {
			TopicArn, Message string
			MessageAttributes map[string]struct{ DataType, StringValue string }
		}
		if err := json.Unmarshal(in, &p); err != nil {
			return nil, &TaskFailure{Error: "States.Runtime", Cause: err.Error()}
		}
		if tf := x.faults.Load(); tf != nil && tf.FailPublish != nil && tf.FailPublish(p.Message) {
			return nil, &TaskFailure{Error: "SNS.InternalErrorException", Cause: "SNS is failing for this message (injected)"}
		}
		t := w.bus.Topic(p.TopicArn)
		if t == nil {
			return nil, &TaskFailure{Error: "SNS.NotFoundException", Cause: p.TopicArn}
		}
		attrs := map[string]types.MessageAttributeValue{}
		for k, a := range p.MessageAttributes {
			attrs[k] = types.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: aws.String(a.StringValue)}
		}
		id, err := t.publish(w.bus, p.Message, attrs)
		if err != nil {
			return nil, &TaskFailure{Error: "SNS.SnsException", Cause: err.Error()}
		}
		b, _ := json.Marshal(map[string]string{"MessageId": id})
		return b, nil
	}
	return nil, &TaskFailure{Error: "Harness.UnknownResource", Cause: "the run does not play " + resource}
}

// scaleDefinition returns the definition with Retry intervals and caps
// divided by WaitScale (they are waits, like the queues' delays) and
// TimeoutSeconds divided by ExecScale (they bound how long code runs, like
// the functions' timeouts, so a task times out after its function would).
func (w *World) scaleDefinition(def map[string]any) map[string]any {
	raw, _ := json.Marshal(def)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	if v, ok := out["TimeoutSeconds"].(float64); ok {
		out["TimeoutSeconds"] = v / w.opts.ExecScale
	}
	synthesized.WalkStates(out, func(_ string, s map[string]any) {
		if v, ok := s["TimeoutSeconds"].(float64); ok {
			s["TimeoutSeconds"] = v / w.opts.ExecScale
		}
		if v, ok := s["Seconds"].(float64); ok && s["Type"] == "Wait" {
			s["Seconds"] = v / w.opts.WaitScale
		}
		if retries, ok := s["Retry"].([]any); ok {
			for _, rv := range retries {
				r := rv.(map[string]any)
				if v, ok := r["IntervalSeconds"].(float64); ok {
					r["IntervalSeconds"] = v / w.opts.WaitScale
				} else {
					r["IntervalSeconds"] = 1 / w.opts.WaitScale
				}
				if v, ok := r["MaxDelaySeconds"].(float64); ok {
					r["MaxDelaySeconds"] = v / w.opts.WaitScale
				}
			}
		}
	})
	return out
}
