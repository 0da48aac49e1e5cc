package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestDeployOrderPutsDependenciesFirst(t *testing.T) {
	dir := t.TempDir()
	manifest := `{"artifacts":{
	  "P-Outbox":{"type":"aws:cloudformation:stack","dependencies":["P-Platform","P-OrderFlow","P-Outbox.assets"]},
	  "P-OrderFlow":{"type":"aws:cloudformation:stack","dependencies":["P-Messaging","P-Platform"]},
	  "P-Messaging":{"type":"aws:cloudformation:stack","dependencies":["P-Platform"]},
	  "P-Platform":{"type":"aws:cloudformation:stack"},
	  "P-Outbox.assets":{"type":"cdk:asset-manifest"}}}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := deployOrder(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"P-Platform", "P-Messaging", "P-OrderFlow", "P-Outbox"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}
