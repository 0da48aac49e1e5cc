package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// One NAT gateway (and its address) fewer than the cost package's fixture:
// `mf cost -before` names both lines and the monthly delta.
func TestCostDeltaReport(t *testing.T) {
	fixture, dir := filepath.Join("cost", "testdata", "app"), t.TempDir()
	files, err := os.ReadDir(fixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(fixture, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		raw = bytes.Replace(raw, []byte(`"Nat2": {"Type": "AWS::EC2::NatGateway"`), []byte(`"Nat2": {"Type": "AWS::EC2::Route"`), 1)
		raw = bytes.Replace(raw, []byte(`"Eip2": {"Type": "AWS::EC2::EIP"`), []byte(`"Eip2": {"Type": "AWS::EC2::Route"`), 1)
		if err := os.WriteFile(filepath.Join(dir, f.Name()), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errs strings.Builder
	if code := run([]string{"cost", "-e", "test", "-dir", dir, "-before", fixture, "-usage", filepath.Join("cost", "testdata", "usage.json")}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	for _, want := range []string{"NAT gateways", "public IPv4 addresses", "-38.69"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("delta report does not show %s:\n%s", want, out.String())
		}
	}
}
