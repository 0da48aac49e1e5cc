package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/confirmationmail"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/orderstart"
	"github.com/mercadofresco/integration/lambdas/payment"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
	"github.com/mercadofresco/integration/lambdas/stock"
	"github.com/mercadofresco/integration/synthesized"
)

// The functions the run plays, by their mercadofresco:entry. A function of
// the templates that an event source mapping, a rule or the state machine
// invokes and that is not here fails the run at start.
var sqsBuilders = map[string]func(ctx context.Context, env *lambdaenv.Env) (*sqsbatch.Processor, error){
	"lambdas/iniciar-pedido": func(ctx context.Context, env *lambdaenv.Env) (*sqsbatch.Processor, error) {
		return sqsconsumer.Start(ctx, "iniciar-pedido", env, orderstart.FromRuntime)
	},
	"lambdas/preparar-pedido": func(ctx context.Context, env *lambdaenv.Env) (*sqsbatch.Processor, error) {
		return sqsconsumer.Start(ctx, "preparar-pedido", env, sqsconsumer.Preparation.FromRuntime)
	},
	"lambdas/correo-confirmacion": func(ctx context.Context, env *lambdaenv.Env) (*sqsbatch.Processor, error) {
		return sqsconsumer.Start(ctx, "correo-confirmacion", env, confirmationmail.FromRuntime)
	},
	"lambdas/aviso-erp": func(ctx context.Context, env *lambdaenv.Env) (*sqsbatch.Processor, error) {
		return sqsconsumer.Start(ctx, "aviso-erp", env, sqsconsumer.ERPNotice.FromRuntime)
	},
	"lambdas/movimientos-stock": func(ctx context.Context, env *lambdaenv.Env) (*sqsbatch.Processor, error) {
		return sqsconsumer.Start(ctx, "movimientos-stock", env, stock.FromRuntime)
	},
}

// taskHandler is a Step Functions task function's handler on raw JSON.
type taskHandler func(ctx context.Context, in json.RawMessage) (any, error)

var taskBuilders = map[string]func(ctx context.Context, env *lambdaenv.Env) (taskHandler, error){
	"lambdas/cobro": func(ctx context.Context, env *lambdaenv.Env) (taskHandler, error) {
		h, err := payment.CobroFunction(ctx, env, env.Logger("cobro"))
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, in json.RawMessage) (any, error) { return h(ctx, in) }, nil
	},
	"lambdas/reembolso": func(ctx context.Context, env *lambdaenv.Env) (taskHandler, error) {
		t, err := payment.TasksFromEnv(ctx, env, env.Logger("reembolso"))
		if err != nil {
			return nil, err
		}
		h := t.ReembolsoHandler()
		return func(ctx context.Context, in json.RawMessage) (any, error) { return h(ctx, in) }, nil
	},
}

// Function is one Lambda function of the templates with its environment as
// the run gives it.
type Function struct {
	w                *World
	Res              *synthesized.Resource
	Name, ARN, Entry string
	// Timeout is the template's; Deadline the wall-clock time an invocation
	// gets (Timeout / ExecScale).
	Timeout, Deadline time.Duration
	Env               map[string]string
	// Reserved is the template's ReservedConcurrentExecutions, which every
	// invocation enters before its sandbox runs.
	Reserved localaws.Reserved

	mu      sync.Mutex
	idle    []taskHandler // task sandboxes waiting for an invocation
	invoked atomic.Int64
	timeout atomic.Int64
}

// loadFunctions reads every function of the templates with its resolved
// environment and the run's overrides.
func (w *World) loadFunctions() {
	for _, r := range w.app.Resources("AWS::Lambda::Function") {
		entry, _ := r.Metadata[synthesized.MetadataEntry].(string)
		if entry == "" {
			continue // the CDK's own providers
		}
		name, _ := w.Physical().Ref(r)
		arn, _ := w.Physical().GetAtt(r, "Arn")
		f := &Function{w: w, Res: r, Name: name, ARN: arn, Entry: entry, Env: map[string]string{},
			Timeout: seconds(r.Prop("Timeout"), 3*time.Second)}
		f.Deadline = time.Duration(float64(f.Timeout) / w.opts.ExecScale)
		f.Reserved.Limit = int64(synthesized.Number(r.Prop("ReservedConcurrentExecutions"), 0))
		if entry == "lambdas/outbox-publicador" {
			// Its invocation's timing is its code's (lambdaapi: the
			// 20 s stop margin and lease of a 100 s invocation), not
			// configuration: it runs at full length.
			f.Deadline = f.Timeout
		}
		w.functions[arn] = f
		if sqsBuilders[entry] == nil && taskBuilders[entry] == nil && entry != "lambdas/outbox-publicador" {
			continue // not played (migrations, cleanup); resolved only if invoked
		}
		vars, _ := r.Prop("Environment").(map[string]any)
		for k, v := range vars["Variables"].(map[string]any) {
			s, err := w.resolveString(r, v)
			if err != nil {
				w.fatalf("function %s, %s: %v", entry, k, err)
			}
			f.Env[k] = s
		}
		w.override(f)
	}
}

func (w *World) note(format string, args ...any) {
	if s := fmt.Sprintf(format, args...); !slices.Contains(w.overrides, s) {
		w.overrides = append(w.overrides, s)
	}
}

// override applies the run's changes to a function's environment, the only
// places where it departs from the template (each listed in the report):
// endpoints of the external services, TLS to the local Redis and
// PostgreSQL and IAM authentication to the Redis, the run's database and
// role names, and durations divided by ExecScale.
func (w *World) override(f *Function) {
	scale := func(d time.Duration, floor time.Duration) time.Duration {
		d = time.Duration(float64(d) / w.opts.ExecScale).Round(time.Millisecond)
		return max(d, floor)
	}
	fakes := map[string]string{"GATEWAY_URL": w.deps.Gateway.URL(), "ALMACEN_URL": w.deps.Almacen.URL(),
		"ERP_URL": w.deps.ERP.URL(), "CORREO_SECUNDARIO_URL": w.deps.Correo2.URL()}
	for k, v := range f.Env {
		switch {
		case strings.HasSuffix(k, lambdaapi.EnvSuffixURL):
			u, ok := fakes[k]
			if !ok {
				w.fatalf("%s: no local fake for %s=%s", f.Entry, k, v)
			}
			f.Env[k] = u
			w.note("%s → local fake (template: %s)", k, v)
		case k == lambdaapi.EnvBreakerRedisTLS:
			f.Env[k] = "false"
			w.note("%s=false: the local Redis has no TLS", k)
		case k == lambdaapi.EnvBreakerRedisUser:
			delete(f.Env, k)
			w.note("%s unset: the local Redis has no IAM authentication (its ACL is tested in lambdas/breaker)", k)
		case k == lambdaapi.EnvDBName:
			f.Env[k] = w.db
			w.note("%s=<the run's database> (template: %s)", k, v)
		case k == lambdaapi.EnvDBUser:
			role, ok := w.runRoles[v]
			if !ok {
				w.fatalf("%s: %s %s is none of the migration's roles", f.Entry, k, v)
			}
			f.Env[k] = role
			w.note("%s=<run prefix>_%s: roles are cluster-wide, each run has its own", k, v)
		case strings.HasSuffix(k, lambdaapi.EnvSuffixReadTimeout):
			d, err := time.ParseDuration(v)
			if err != nil {
				w.fatalf("%s: %s=%s: %v", f.Entry, k, v, err)
			}
			f.Env[k] = scale(d, time.Second).String()
			w.note("%s=%s (template %s ÷ ExecScale, at least 1 s)", k, f.Env[k], v)
		}
	}
	if _, ok := f.Env[lambdaapi.EnvDBHost]; ok {
		f.Env[lambdaapi.EnvDBSSLMode] = "disable"
		w.note("%s=disable: the local PostgreSQL has no TLS (RDS Proxy requires it)", lambdaapi.EnvDBSSLMode)
	}
	if _, ok := f.Env[lambdaapi.EnvBreakerRedisAddr]; ok {
		f.Env[lambdaapi.EnvBreakerOpenPeriod] = scale(breaker.DefaultOpenPeriod, 5*time.Second).String()
		w.note("%s=%s (default %s ÷ ExecScale, at least 5 s)", lambdaapi.EnvBreakerOpenPeriod, f.Env[lambdaapi.EnvBreakerOpenPeriod], breaker.DefaultOpenPeriod)
	}
	if sqsBuilders[f.Entry] != nil {
		f.Env[lambdaapi.EnvDeadlineMargin] = scale(sqsbatch.DefaultDeadlineMargin, 50*time.Millisecond).String()
		w.note("%s=%s (default %s ÷ ExecScale)", lambdaapi.EnvDeadlineMargin, f.Env[lambdaapi.EnvDeadlineMargin], sqsbatch.DefaultDeadlineMargin)
	}
}

// invocationContext is the context a Lambda invocation gets: its deadline
// and the Lambda context (request id, function ARN).
func (f *Function) invocationContext(parent context.Context) (context.Context, context.CancelFunc) {
	n := f.invoked.Add(1)
	ctx, cancel := context.WithTimeout(parent, f.Deadline)
	return lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		AwsRequestID: fmt.Sprintf("%s-%06d", f.Name, n), InvokedFunctionArn: f.ARN}), cancel
}

// ErrTimedOut is an invocation that did not return by its deadline (the
// runtime would have stopped it).
var ErrTimedOut = errors.New("Sandbox.Timedout")

// runInvocation runs fn as one invocation of f: it returns fn's result, or
// ErrTimedOut when fn has not returned by the deadline (fn then finishes
// in the background and its result is dropped, as the runtime drops a
// timed-out invocation's). Its callers hold one of f.Reserved's slots
// while it runs, and a throttled invocation never reaches it.
func runInvocation[T any](parent context.Context, f *Function, fn func(ctx context.Context) (T, error)) (T, error) {
	ctx, cancel := f.invocationContext(parent)
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer cancel()
		v, err := fn(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-done:
			return r.v, r.err
		default:
		}
		f.timeout.Add(1)
		var zero T
		return zero, fmt.Errorf("%w after %s", ErrTimedOut, f.Deadline)
	}
}

// InvokeTask invokes a Step Functions task function with its input; the
// error, if any, carries the errorType Step Functions would see.
func (f *Function) InvokeTask(ctx context.Context, in json.RawMessage) (json.RawMessage, *localaws.TaskFailure) {
	build := taskBuilders[f.Entry]
	if build == nil {
		return nil, &localaws.TaskFailure{Error: "Harness.NotPlayed", Cause: f.Entry + " is not played by the run"}
	}
	release, ok := f.Reserved.Enter()
	if !ok {
		return nil, &localaws.TaskFailure{Error: lambdaapi.ErrLambdaThrottled, Cause: "Rate Exceeded."}
	}
	defer release()
	f.mu.Lock()
	var h taskHandler
	if n := len(f.idle); n > 0 {
		h, f.idle = f.idle[n-1], f.idle[:n-1]
	}
	f.mu.Unlock()
	if h == nil { // a new sandbox: its init runs outside the deadline
		var err error
		if h, err = build(ctx, lambdaenv.FromMap(f.Env)); err != nil {
			return nil, &localaws.TaskFailure{Error: "Runtime.InitError", Cause: err.Error()}
		}
	}
	out, err := runInvocation(ctx, f, func(ctx context.Context) (any, error) { return h(ctx, in) })
	if errors.Is(err, ErrTimedOut) {
		return nil, &localaws.TaskFailure{Error: "Sandbox.Timedout", Cause: err.Error()} // sandbox discarded
	}
	f.mu.Lock()
	f.idle = append(f.idle, h)
	f.mu.Unlock()
	if err != nil {
		typ, msg := invokeError(err)
		return nil, &localaws.TaskFailure{Error: typ, Cause: msg}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, &localaws.TaskFailure{Error: "Runtime.MarshalError", Cause: err.Error()}
	}
	return b, nil
}

// invokeError is the errorType and errorMessage aws-lambda-go reports for a
// handler's error (its lambdaErrorResponse): an InvokeResponse_Error value's
// own, else the error's Go type name (through one pointer) and text.
func invokeError(err error) (typ, msg string) {
	if ire, ok := err.(messages.InvokeResponse_Error); ok {
		return ire.Type, ire.Message
	}
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name(), err.Error()
}

// ESM is one SQS event source mapping of the templates, played as Lambda's
// pollers do: up to MaximumConcurrency concurrent invocations (one sandbox
// each), batches of BatchSize, partial batch responses, and nothing deleted
// when an invocation fails or times out.
type ESM struct {
	w              *World
	Fn             *Function
	Queue          *Queue
	BatchSize      int
	Concurrency    int
	ReportFailures bool

	// Intercept, when set, may take a batch instead of the in-process
	// sandbox (the run's kill of a consumer); it returns handled=false to
	// let the sandbox run it.
	Intercept func(ctx context.Context, ev events.SQSEvent) (resp events.SQSEventResponse, err error, handled bool)

	busy      atomic.Int64
	delivered atomic.Int64 // messages received, repeats included
}

// loadESMs reads the templates' event source mappings (Mapping edges).
func (w *World) loadESMs() []*ESM {
	var out []*ESM
	for _, m := range w.app.Edges() {
		if m.Kind != synthesized.Mapping {
			continue
		}
		q := w.queueByResource[m.From]
		var fn *Function
		for _, f := range w.functions {
			if f.Res == m.To {
				fn = f
			}
		}
		if q == nil || fn == nil || sqsBuilders[fn.Entry] == nil {
			w.fatalf("%s: a mapping to %s is not one the run can play", m.Via.Path(), m.Target)
		}
		e := &ESM{w: w, Fn: fn, Queue: q, BatchSize: 10, Concurrency: 1000}
		if n, ok := m.Settings["BatchSize"].(float64); ok {
			e.BatchSize = int(n)
		}
		if n, ok := synthesized.Dig(m.Settings, "ScalingConfig", "MaximumConcurrency").(float64); ok {
			e.Concurrency = int(n)
		}
		e.Concurrency = min(e.Concurrency, 50) // no cap in the template: Lambda's own scaling, bounded here
		types, _ := m.Settings["FunctionResponseTypes"].([]any)
		e.ReportFailures = slices.Contains(types, any("ReportBatchItemFailures"))
		if e.BatchSize > 10 {
			w.fatalf("%s: batch size %d needs a batching window, which the run does not play", m.Via.Path(), e.BatchSize)
		}
		// Production's invariant, kept by the scaling: a message's
		// visibility outlasts the invocation that received it.
		if w.clock.Real(q.Visibility) <= fn.Deadline {
			w.fatalf("%s: %s's visibility (%s ÷ WaitScale) ends before %s's deadline (%s ÷ ExecScale); change the scales",
				m.Via.Path(), q.Name, q.Visibility, fn.Entry, fn.Timeout)
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue.Name < out[j].Queue.Name })
	return out
}

// Run polls until ctx ends; it returns when every poller has stopped.
func (e *ESM) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range e.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.poll(ctx)
		}()
	}
	wg.Wait()
}

func (e *ESM) poll(ctx context.Context) {
	var sandbox *sqsbatch.Processor
	idle := 5 * time.Millisecond
	for ctx.Err() == nil {
		ev, err := e.w.sqs.Receive(ctx, e.Queue.URL, e.Queue.ARN, e.BatchSize)
		if err != nil || len(ev.Records) == 0 {
			t := time.NewTimer(idle)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			idle = min(idle*2, 100*time.Millisecond)
			continue
		}
		idle = 5 * time.Millisecond
		e.busy.Add(1)
		sandbox = e.invoke(ctx, sandbox, ev)
		e.busy.Add(-1)
	}
}

// invoke runs one batch and deletes what succeeded. It returns the sandbox
// to use next.
func (e *ESM) invoke(ctx context.Context, sandbox *sqsbatch.Processor, ev events.SQSEvent) *sqsbatch.Processor {
	e.delivered.Add(int64(len(ev.Records)))
	var resp events.SQSEventResponse
	var err error
	handled := false
	if e.Intercept != nil {
		resp, err, handled = e.Intercept(ctx, ev)
	}
	if !handled {
		resp, sandbox, err = e.run(ctx, sandbox, ev)
	}
	if err != nil || ctx.Err() != nil {
		return sandbox // the whole batch comes back after its visibility timeout
	}
	_ = e.w.sqs.Settle(context.WithoutCancel(ctx), e.Queue.URL, ev, resp, e.ReportFailures)
	return sandbox
}

// errThrottled is an invocation refused for the function's reserved
// concurrency: its batch comes back after its visibility timeout.
var errThrottled = errors.New(lambdaapi.ErrLambdaThrottled)

// run is one invocation of the function on ev in sandbox (a new one, a
// cold start, when nil) within a slot of its reserved concurrency. It
// returns the sandbox to use next: nil after a timeout (the runtime
// replaces a timed-out one).
func (e *ESM) run(ctx context.Context, sandbox *sqsbatch.Processor, ev events.SQSEvent) (events.SQSEventResponse, *sqsbatch.Processor, error) {
	release, ok := e.Fn.Reserved.Enter()
	if !ok {
		return events.SQSEventResponse{}, sandbox, errThrottled
	}
	defer release()
	if sandbox == nil {
		var err error
		if sandbox, err = sqsBuilders[e.Fn.Entry](ctx, lambdaenv.FromMap(e.Fn.Env)); err != nil {
			e.w.t.Errorf("e2e: %s cannot start: %v", e.Fn.Entry, err)
			return events.SQSEventResponse{}, nil, err
		}
	}
	resp, err := runInvocation(ctx, e.Fn, func(ctx context.Context) (events.SQSEventResponse, error) {
		return sandbox.Process(ctx, ev)
	})
	if errors.Is(err, ErrTimedOut) {
		sandbox = nil
	}
	return resp, sandbox, err
}

// coldStartsFor makes every batch that holds a message of the order run
// one message at a time, each in a new sandbox, as when Lambda hands the
// copies of a message to different instances: only the idempotency
// record in DynamoDB stands between them, not a sandbox's in-process
// cache of completed records.
func (e *ESM) coldStartsFor(pedido string) {
	e.Intercept = func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error, bool) {
		if !slices.ContainsFunc(ev.Records, func(m events.SQSMessage) bool { return orderIDPattern.FindString(m.Body) == pedido }) {
			return events.SQSEventResponse{}, nil, false
		}
		var resp events.SQSEventResponse
		for _, m := range ev.Records {
			one, _, err := e.run(ctx, nil, events.SQSEvent{Records: []events.SQSMessage{m}})
			if err != nil {
				return resp, err, true
			}
			resp.BatchItemFailures = append(resp.BatchItemFailures, one.BatchItemFailures...)
		}
		return resp, nil, true
	}
}
