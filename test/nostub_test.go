package test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mercadofresco/integration/internal/nostub"
	"github.com/mercadofresco/integration/synthesized"
)

// House rule: no stub on a deployed path. Every function the app deploys,
// in every environment, is scanned as its binary is built (the packages its
// main links); a test double's package or a declaration named or
// documented as a stub fails the test (internal/nostub; its own test shows
// it catches both).
func TestNoDeployedFunctionReachesAStub(t *testing.T) {
	s := synthApp(t)
	var entries []string
	for stack := range s.templates {
		for _, fn := range s.resources(t, stack, "AWS::Lambda::Function") {
			md, _ := fn["Metadata"].(map[string]any)
			if e, ok := md[synthesized.MetadataEntry].(string); ok && !slices.Contains(entries, e) {
				entries = append(entries, e)
			}
		}
	}
	if len(entries) < 4 {
		t.Fatalf("found only %d deployed entries (%v): is the entry metadata still written?", len(entries), entries)
	}
	slices.Sort(entries)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	findings, err := nostub.Scan(ctx, root, entries)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("scanned %v", entries)
	for _, f := range findings {
		t.Errorf("stand-in on a deployed path: %s", f)
	}
}
