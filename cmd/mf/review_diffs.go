package main

import (
	"io"
	"runtime"

	"golang.org/x/sync/errgroup"
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
	outs := make([][]byte, len(diffs))
	var g errgroup.Group
	g.SetLimit(max(2, runtime.NumCPU()))
	for i, d := range diffs {
		g.Go(func() (err error) {
			outs[i], err = cdkDiff(cdkBin, app, d.stack, d.base)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, out := range outs {
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	return nil
}
