package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/synthesized"
)

// startStepFunctions validates the templates' state machine definitions as
// written and runs them in localaws.StepFunctions, their waits and timeouts
// scaled: each execution the starter starts runs there, and its Task
// states run here (runTask).
func (w *World) startStepFunctions(ctx context.Context, task localaws.TaskFunc, done func(localaws.ExecutionResult)) *localaws.StepFunctions {
	s := localaws.NewStepFunctions(w.t, w.opts.Seed, w.opts.Logs)
	s.Definitions, s.Task, s.Done = map[string]map[string]any{}, task, done
	for _, r := range w.app.Resources("AWS::StepFunctions::StateMachine") {
		arn, _ := w.Physical().Ref(r)
		def, err := w.app.Definition(r)
		if err != nil {
			w.fatalf("%s: %v", r.Path(), err)
		}
		if errs := s.Validate(ctx, def); len(errs) > 0 {
			w.fatalf("%s: the definition does not validate: %v", r.Path(), errs)
		}
		s.Definitions[arn] = scaleDefinition(def, w.opts.WaitScale, w.opts.ExecScale)
	}
	return s
}

// runTask runs one Task state: a Lambda resource runs the real Go handler
// in-process, and the SendMessageBatch and sns:publish integrations act on
// the local queues and topics. Two faults are injected at this boundary:
// the first successful cobro of the lostAnswer order loses its answer
// (Lambda.ServiceException: an Invoke is at least once, so the state's
// Retry runs the function again), and the compOrder's confirmation publish
// fails.
func (r *Run) runTask(ctx context.Context, c localaws.TaskCall) (json.RawMessage, *localaws.TaskFailure) {
	w := r.w
	switch {
	case strings.HasPrefix(c.Resource, "arn:aws:lambda:"):
		f := w.functions[c.Resource]
		if f == nil {
			return nil, &localaws.TaskFailure{Error: "Lambda.ResourceNotFoundException", Cause: c.Resource}
		}
		out, fail := f.InvokeTask(context.WithoutCancel(ctx), c.Input)
		if fail == nil && f.Entry == "lambdas/cobro" && pedidoOf(c.Input) == r.lostAnswer && r.lostOnce.CompareAndSwap(false, true) {
			return nil, &localaws.TaskFailure{Error: "Lambda.ServiceException", Cause: "the invocation succeeded and its answer was lost (injected)"}
		}
		return out, fail
	case c.Resource == localaws.ResourceSendMessageBatch:
		return w.sqs.SendMessageBatchTask(ctx, c)
	case c.Resource == "arn:aws:states:::sns:publish":
		var p struct {
			TopicArn          string
			Message           json.RawMessage
			MessageAttributes map[string]struct{ DataType, StringValue string }
		}
		if err := json.Unmarshal(c.Input, &p); err != nil {
			return nil, &localaws.TaskFailure{Error: "States.Runtime", Cause: err.Error()}
		}
		msg := localaws.PublishedMessage(p.Message)
		if r.compOrder != "" && pedidoOf([]byte(msg)) == r.compOrder {
			return nil, &localaws.TaskFailure{Error: "SNS.InternalErrorException", Cause: "SNS is failing for this message (injected)"}
		}
		t := w.bus.Topic(p.TopicArn)
		if t == nil {
			return nil, &localaws.TaskFailure{Error: "SNS.NotFoundException", Cause: p.TopicArn}
		}
		attrs := map[string]types.MessageAttributeValue{}
		for k, a := range p.MessageAttributes {
			attrs[k] = types.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: aws.String(a.StringValue)}
		}
		id, err := t.publish(w.bus, msg, attrs)
		if err != nil {
			return nil, &localaws.TaskFailure{Error: "SNS.SnsException", Cause: err.Error()}
		}
		b, _ := json.Marshal(map[string]string{"MessageId": id})
		return b, nil
	}
	return nil, &localaws.TaskFailure{Error: "Harness.UnknownResource", Cause: "the run does not play " + c.Resource}
}

// scaleDefinition returns a copy of def with its Retry intervals, caps and
// Wait seconds divided by waitScale (waits, like the queues' delays) and
// its TimeoutSeconds by execScale (they bound how long code runs, like the
// functions' timeouts, so a task times out after its function would). A
// retrier of Lambda's throttle alone waits for the function's running
// invocations to end, which run in the code's time: its waits are divided
// by execScale, or the run would give up on a saturated function five
// times sooner than the deployed workflow does.
func scaleDefinition(def map[string]any, waitScale, execScale float64) map[string]any {
	raw, _ := json.Marshal(def)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	if v, ok := out["TimeoutSeconds"].(float64); ok {
		out["TimeoutSeconds"] = v / execScale
	}
	synthesized.WalkStates(out, func(_ string, s map[string]any) {
		if v, ok := s["TimeoutSeconds"].(float64); ok {
			s["TimeoutSeconds"] = v / execScale
		}
		if v, ok := s["Seconds"].(float64); ok && s["Type"] == "Wait" {
			s["Seconds"] = v / waitScale
		}
		retries, _ := s["Retry"].([]any)
		for _, rv := range retries {
			r, scale := rv.(map[string]any), waitScale
			if synthesized.ThrottleOnly(r) {
				scale = execScale
			}
			r["IntervalSeconds"] = cmp.Or(r["IntervalSeconds"], any(1.0)).(float64) / scale
			if v, ok := r["MaxDelaySeconds"].(float64); ok {
				r["MaxDelaySeconds"] = v / scale
			}
		}
	})
	return out
}

// Waits are divided by the wait scale, but a retrier of Lambda's throttle
// alone, which waits for invocations to end, by the execution scale, and so
// are timeouts.
func TestScaleDefinition(t *testing.T) {
	def := map[string]any{"TimeoutSeconds": 100.0, "StartAt": "T", "States": map[string]any{
		"T": map[string]any{"Type": "Task", "TimeoutSeconds": 50.0, "Retry": []any{
			map[string]any{"ErrorEquals": []any{lambdaapi.ErrLambdaThrottled}, "IntervalSeconds": 10.0, "MaxDelaySeconds": 30.0},
			map[string]any{"ErrorEquals": []any{lambdaapi.ErrLambdaThrottled, "PasarelaNoDisponible"}, "MaxDelaySeconds": 30.0},
		}, "End": true}}}
	out := scaleDefinition(def, 10, 5)
	task := out["States"].(map[string]any)["T"].(map[string]any)
	throttle, mixed := task["Retry"].([]any)[0].(map[string]any), task["Retry"].([]any)[1].(map[string]any)
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"workflow timeout", out["TimeoutSeconds"], 20.0}, {"task timeout", task["TimeoutSeconds"], 10.0},
		{"throttle interval", throttle["IntervalSeconds"], 2.0}, {"throttle cap", throttle["MaxDelaySeconds"], 6.0},
		{"mixed interval (default 1 s)", mixed["IntervalSeconds"], 0.1}, {"mixed cap", mixed["MaxDelaySeconds"], 3.0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}
