package localaws

// Processes: what the harnesses that start local
// processes share: a free port, and a buffer that several goroutines
// write (a process's stderr, a logger's output).

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago.
// Another process may take it before the server binds, so callers retry a
// failed start.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Buffer collects what goroutines write to it (exec copies a process's
// stderr from its own goroutine; handlers log concurrently). With Limit
// above 0 it keeps about the first Limit bytes and drops the rest: for a
// process's stderr the first error explains the rest.
type Buffer struct {
	Limit int
	mu    sync.Mutex
	buf   strings.Builder
}

// StderrLimit is what the harnesses keep of a child process's stderr.
const StderrLimit = 64 << 10

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Limit <= 0 || b.buf.Len() < b.Limit {
		b.buf.Write(p)
	}
	return len(p), nil
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// process is a child process a harness started: done closes when it has
// exited, err is then its Wait's result and stderr what it wrote (its
// stdout too, unless the caller took it).
type process struct {
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	stderr *Buffer
	once   sync.Once
}

// startProcess starts cmd and reaps it when it exits.
func startProcess(cmd *exec.Cmd) (*process, error) {
	p := &process{cmd: cmd, done: make(chan struct{}), stderr: &Buffer{Limit: StderrLimit}}
	cmd.Stderr = p.stderr
	if cmd.Stdout == nil {
		cmd.Stdout = p.stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// waitReady calls ready every 20 ms until it succeeds; it stops the process
// and fails when the process exits, timeout passes or ctx ends first.
func (p *process) waitReady(ctx context.Context, timeout time.Duration, ready func(context.Context) error) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		err := ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready (%v): %v: %s", filepath.Base(p.cmd.Path), p.err, err, p.stderr)
		case <-deadline.C:
			err = fmt.Errorf("%s not ready within %s: %v: %s", filepath.Base(p.cmd.Path), timeout, err, p.stderr)
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(20 * time.Millisecond):
			continue
		}
		p.stop(0)
		return err
	}
}

// stop ends the process (SIGTERM, then SIGKILL after grace; SIGKILL at once
// when grace is 0) and waits for it to exit. Only the first call acts.
func (p *process) stop(grace time.Duration) {
	p.once.Do(func() {
		if grace > 0 {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
				return
			case <-time.After(grace):
			}
		}
		_ = p.cmd.Process.Kill()
		<-p.done
	})
}

// onFreePort runs start on a free port of 127.0.0.1, and again on another
// when it fails (another process may take the port between the probe and
// the bind): five tries.
func onFreePort(ctx context.Context, start func(port int) error) error {
	var err error
	for range 5 {
		var port int
		if port, err = FreePort(); err == nil {
			if err = start(port); err == nil || ctx.Err() != nil {
				return err
			}
		}
	}
	return err
}
