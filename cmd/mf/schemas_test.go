package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The committed schemas are what the Go types generate.
func TestCommittedSchemasMatchTheGoTypes(t *testing.T) {
	problems, err := drift("../../schemas")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

func schema(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}

const v1 = `{"type":"object","required":["version","pedido_id"],"properties":{
  "version":{"type":"integer","enum":[1]},
  "pedido_id":{"type":"string"},
  "tipo":{"type":"string","enum":["reserva","liberacion"]},
  "lineas":{"type":"array","items":{"type":"object","required":["sku"],"properties":{"sku":{"type":"string"}}}}}}`

func TestBreaking(t *testing.T) {
	tests := []struct {
		name string
		edit func(s string) string
		want string // "" = compatible
	}{
		{"unchanged", func(s string) string { return s }, ""},
		{"new optional field", func(s string) string {
			return strings.Replace(s, `"pedido_id":{"type":"string"},`, `"pedido_id":{"type":"string"},"nota":{"type":"string"},`, 1)
		}, ""},
		{"widened enum", func(s string) string {
			return strings.Replace(s, `["reserva","liberacion"]`, `["reserva","liberacion","ajuste"]`, 1)
		}, ""},
		{"removed field", func(s string) string {
			return strings.Replace(s, `"pedido_id":{"type":"string"},`, ``, 1)
		}, `field "pedido_id" removed`},
		{"new required field", func(s string) string {
			return strings.Replace(strings.Replace(s, `"pedido_id":{"type":"string"},`, `"pedido_id":{"type":"string"},"nota":{"type":"string"},`, 1),
				`["version","pedido_id"]`, `["version","pedido_id","nota"]`, 1)
		}, `new required field "nota"`},
		{"field made required in an item", func(s string) string {
			return strings.Replace(s, `"required":["sku"],"properties":{"sku":{"type":"string"}}`, `"required":["sku","cantidad"],"properties":{"sku":{"type":"string"},"cantidad":{"type":"integer"}}`, 1)
		}, `lineas[]: new required field "cantidad"`},
		{"type change", func(s string) string {
			return strings.Replace(s, `"pedido_id":{"type":"string"}`, `"pedido_id":{"type":"integer"}`, 1)
		}, "pedido_id: type changed from string to integer"},
		{"shrunk enum", func(s string) string {
			return strings.Replace(s, `["reserva","liberacion"]`, `["reserva"]`, 1)
		}, "enum value liberacion removed"},
		{"closed object", func(s string) string {
			return strings.Replace(s, `{"type":"object",`, `{"type":"object","additionalProperties":false,`, 1)
		}, "closed to new fields"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Breaking(schema(t, v1), schema(t, tc.edit(v1)))
			if tc.want == "" {
				if len(got) > 0 {
					t.Fatalf("want compatible, got %v", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0], tc.want) {
				t.Fatalf("want one problem with %q, got %v", tc.want, got)
			}
		})
	}
}

// The check against a git ref, in a repository made for the test: a
// removed field fails, an added optional field passes, a deleted schema
// fails, a new major version passes.
func TestCheckAgainstGitRef(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is not on PATH (the evolution check reads schemas at a git ref): %v", err)
	}
	repo := t.TempDir()
	gitT := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(repo, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitT("init", "-q", "-b", "release")
	write("schemas/PedidoConfirmado/v1.json", v1)
	gitT("add", ".")
	gitT("commit", "-qm", "release")
	dir := filepath.Join(repo, "schemas")
	tests := []struct {
		name  string
		apply func()
		want  string
	}{
		{"optional field added", func() {
			write("schemas/PedidoConfirmado/v1.json", strings.Replace(v1, `"pedido_id":{"type":"string"},`, `"pedido_id":{"type":"string"},"nota":{"type":"string"},`, 1))
		}, ""},
		{"new major version", func() { write("schemas/PedidoConfirmado/v2.json", `{"type":"object","required":["nuevo"]}`) }, ""},
		{"field removed", func() {
			write("schemas/PedidoConfirmado/v1.json", strings.Replace(v1, `"pedido_id":{"type":"string"},`, ``, 1))
		}, `schemas/PedidoConfirmado/v1.json (PedidoConfirmado v1): (root): field "pedido_id" removed`},
		{"schema deleted", func() { os.Remove(filepath.Join(dir, "PedidoConfirmado", "v1.json")) }, "is deleted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gitT("checkout", "-q", "--", ".")
			os.Remove(filepath.Join(dir, "PedidoConfirmado", "v2.json"))
			tc.apply()
			ref, err := baseRef(dir, "")
			if err != nil || ref != "HEAD" {
				t.Fatalf("baseRef = %q, %v; want HEAD in a clone without main", ref, err)
			}
			got, err := checkAgainst(dir, ref)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if len(got) > 0 {
					t.Fatalf("want no problem, got %v", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0], tc.want) {
				t.Fatalf("want %q, got %v", tc.want, got)
			}
		})
	}
}

// CI: the schemas of the working tree against the last release (the
// merge-base with main, or $MF_SCHEMAS_AGAINST).
func TestRunCheckOnTheRepository(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runSchemas([]string{"check", "-dir", "../../schemas"}, &out, &errb); code != 0 {
		t.Fatalf("mf schemas check = %d\n%s%s", code, out.String(), errb.String())
	}
	t.Log(strings.TrimSpace(out.String()))
}
