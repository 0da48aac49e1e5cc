package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/outbox"
)

// Functions that the run kills with SIGKILL run in child processes: the test
// binary again, with MF_E2E_CHILD naming the part it plays and the
// function's environment as its own.
const (
	envChild    = "MF_E2E_CHILD"
	envDeadline = "MF_E2E_DEADLINE"
	envEntry    = "MF_E2E_ENTRY"

	childPublisher = "publisher"
	childConsumer  = "consumer"
)

// RunChild runs the child part named by MF_E2E_CHILD, if any, and exits;
// TestMain calls it first.
func RunChild() {
	mode := os.Getenv(envChild)
	if mode == "" {
		return
	}
	// The functions log to stdout, as in Lambda; the child's stdout is its
	// answer to the parent, so their logs go to stderr.
	answer := os.Stdout
	os.Stdout = os.Stderr
	deadline, err := time.ParseDuration(os.Getenv(envDeadline))
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e child: %s: %v\n", envDeadline, err)
		os.Exit(2)
	}
	switch mode {
	case childPublisher:
		err = runPublisher(deadline)
	case childConsumer:
		err = runConsumer(deadline, answer)
	default:
		err = fmt.Errorf("unknown child %q", mode)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e child %s: %v\n", mode, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runPublisher is one publisher sandbox: scheduled invocations back to
// back, each with the function's deadline, until the parent closes stdin or
// kills it.
func runPublisher(deadline time.Duration) error {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	env := lambdaenv.New(os.Getenv)
	handle, err := outbox.PublisherFunction(ctx, env, env.Logger("outbox-publisher"))
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		ictx, icancel := context.WithTimeout(ctx, deadline)
		_, err := handle(ictx)
		icancel()
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "e2e publisher invocation: %v\n", err)
			time.Sleep(50 * time.Millisecond) // as the next schedule tick would
		}
	}
	return nil
}

// runConsumer is one invocation of an SQS consumer: the batch from stdin,
// the response to answer.
func runConsumer(deadline time.Duration, answer io.Writer) error {
	var ev events.SQSEvent
	if err := json.NewDecoder(os.Stdin).Decode(&ev); err != nil {
		return err
	}
	build := sqsBuilders[os.Getenv(envEntry)]
	if build == nil {
		return fmt.Errorf("no consumer %q", os.Getenv(envEntry))
	}
	p, err := build(context.Background(), lambdaenv.New(os.Getenv))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	resp, err := p.Process(ctx, ev)
	if err != nil {
		return err
	}
	return json.NewEncoder(answer).Encode(resp)
}

// childCmd prepares a child process for function f.
func (w *World) childCmd(f *Function, mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	env := os.Environ()
	for _, k := range slices.Sorted(maps.Keys(f.Env)) {
		env = append(env, k+"="+f.Env[k])
	}
	cmd.Env = append(env, envChild+"="+mode, envDeadline+"="+f.Deadline.String(), envEntry+"="+f.Entry)
	cmd.Stderr = w.opts.Logs
	return cmd
}

// Publishers runs the outbox publisher in child processes and kills them
// when told (SIGKILL, as the Lambda runtime does at a timeout or an
// out-of-memory), restarting each at once.
type Publishers struct {
	w     *World
	f     *Function
	mu    sync.Mutex
	procs []*exec.Cmd
	stdin []io.WriteCloser
	Kills int
}

func (w *World) startPublishers(n int) *Publishers {
	var f *Function
	for _, fn := range w.functions {
		if fn.Entry == "lambdas/outbox-publicador" {
			f = fn
		}
	}
	if f == nil {
		w.fatalf("no lambdas/outbox-publicador function in the templates")
	}
	p := &Publishers{w: w, f: f, procs: make([]*exec.Cmd, n), stdin: make([]io.WriteCloser, n)}
	for i := range n {
		p.start(i)
	}
	w.t.Cleanup(p.stop)
	return p
}

func (p *Publishers) start(i int) {
	cmd := p.w.childCmd(p.f, childPublisher)
	in, err := cmd.StdinPipe()
	if err != nil {
		p.w.fatalf("%v", err)
	}
	if err := cmd.Start(); err != nil {
		p.w.fatalf("publisher child: %v", err)
	}
	p.procs[i], p.stdin[i] = cmd, in
}

// Kill SIGKILLs publisher i and starts another in its place.
func (p *Publishers) Kill(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i %= len(p.procs)
	_ = p.procs[i].Process.Kill()
	_ = p.procs[i].Wait()
	p.Kills++
	p.start(i)
}

func (p *Publishers) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, cmd := range p.procs {
		p.stdin[i].Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
}

// ConsumerKill kills the consumer invocation that is between its
// idempotency claim and its completion for one order: every batch holding
// the order runs in a child process, one at a time, until the warehouse has
// prepared the order for one of them; that child is SIGKILLed before the
// answer reaches it, so its claim stays EN_CURSO until its deadline and the
// batch comes back after its visibility timeout. The child handles its
// batch one record at a time (BATCH_CONCURRENCY=1): when it dies, the
// records before the order's have their completion records and those after
// it have not begun, so the order is the only one whose effect happened
// with its outcome lost.
type ConsumerKill struct {
	w      *World
	esm    *ESM
	Pedido string

	run    sync.Mutex // one child at a time
	mu     sync.Mutex
	child  *exec.Cmd
	killed bool
	Done   chan struct{}
	// Batch is the orders of the killed invocation's batch (Pedido's
	// among them).
	Batch []string
}

// victim is the killed order, "" when the kill did not happen (or the
// scenario has none).
func (k *ConsumerKill) victim() string {
	if k == nil {
		return ""
	}
	select {
	case <-k.Done:
		return k.Pedido
	default:
		return ""
	}
}

func (w *World) killConsumerOn(esm *ESM, pedido string) *ConsumerKill {
	k := &ConsumerKill{w: w, esm: esm, Pedido: pedido, Done: make(chan struct{})}
	hook := func(p string) {
		if p != k.Pedido {
			return
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.killed || k.child == nil {
			return
		}
		_ = k.child.Process.Kill()
		k.killed = true
		close(k.Done)
	}
	w.deps.afterPreparation.Store(&hook)
	esm.Intercept = k.intercept
	w.note("%s=1 in the killed %s's child process: only the killed order is between its effect and its completion record", lambdaapi.EnvBatchConcurrency, esm.Fn.Entry)
	return k
}

func (k *ConsumerKill) intercept(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error, bool) {
	var batch []string // the orders of the batch
	for _, r := range ev.Records {
		if id := orderIDPattern.FindString(r.Body); id != "" && !slices.Contains(batch, id) {
			batch = append(batch, id)
		}
	}
	if !slices.Contains(batch, k.Pedido) {
		return events.SQSEventResponse{}, nil, false
	}
	k.run.Lock()
	defer k.run.Unlock()
	k.mu.Lock()
	if k.killed {
		k.mu.Unlock()
		return events.SQSEventResponse{}, nil, false
	}
	cmd := k.w.childCmd(k.esm.Fn, childConsumer)
	cmd.Env = append(cmd.Env, lambdaapi.EnvBatchConcurrency+"=1") // the last value of a key wins
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		k.mu.Unlock()
		return events.SQSEventResponse{}, err, true
	}
	k.child = cmd
	k.mu.Unlock()
	_ = json.NewEncoder(in).Encode(ev)
	in.Close()
	var resp events.SQSEventResponse
	decErr := json.NewDecoder(bufio.NewReader(out)).Decode(&resp)
	waitErr := cmd.Wait()
	k.mu.Lock()
	k.child = nil
	killed := k.killed
	if killed {
		k.Batch = batch
	}
	k.mu.Unlock()
	switch {
	case killed:
		return resp, fmt.Errorf("consumer killed (SIGKILL) after the warehouse prepared %s", k.Pedido), true
	case decErr != nil || waitErr != nil:
		return resp, fmt.Errorf("consumer child failed: %v %v", decErr, waitErr), true
	}
	return resp, nil, true
}
