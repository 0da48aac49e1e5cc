package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"sync"
)

// stackDiff is one `cdk diff` of a stack against its baseline template.
type stackDiff struct {
	stack, base string
}

// runDiffs runs the diffs side by side (as many at once as there are
// cores: each is a CLI start, mostly CPU) and writes their outputs to w
// whole and in the order given, so the report reads as if they ran one
// after the other. differs is true when any diff reported a difference
// (with -fail, the CLI's non-zero exit).
func runDiffs(w io.Writer, cdkBin, app string, fail bool, diffs []stackDiff) (differs bool, err error) {
	type result struct {
		out bytes.Buffer
		err error
	}
	results := make([]result, len(diffs))
	sem := make(chan struct{}, max(2, runtime.NumCPU()))
	var wg sync.WaitGroup
	for i, d := range diffs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			args := []string{"diff", "--app", app, "--exclusively", d.stack, "--template", d.base}
			if fail {
				args = append(args, "--fail")
			}
			cmd := exec.Command(cdkBin, args...)
			cmd.Stdout, cmd.Stderr = &results[i].out, &results[i].out
			results[i].err = cmd.Run()
		}()
	}
	wg.Wait()
	for i, r := range results {
		if _, err := w.Write(r.out.Bytes()); err != nil {
			return differs, err
		}
		if r.err != nil {
			var ee *exec.ExitError
			if !errors.As(r.err, &ee) {
				return differs, fmt.Errorf("cdk diff %s: %w", diffs[i].stack, r.err)
			}
			differs = true
		}
	}
	return differs, nil
}
