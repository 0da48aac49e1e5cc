package main

import (
	"io"
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
// after the other.
func runDiffs(w io.Writer, cdkBin, app string, diffs []stackDiff) error {
	type result struct {
		out []byte
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
			results[i].out, results[i].err = cdkDiff(cdkBin, app, d.stack, d.base)
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r.err != nil {
			return r.err
		}
		if _, err := w.Write(r.out); err != nil {
			return err
		}
	}
	return nil
}
