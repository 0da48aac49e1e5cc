package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The committed schemas are what the Go types generate.
func TestCommittedSchemasMatchTheGoTypes(t *testing.T) {
	problems, err := sync("../../schemas", false, io.Discard)
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

// The check against the history, in repositories made for the test, each
// a fresh clone of main: the last commit removes a field that an earlier
// commit published (fails, though HEAD is the merge-base with main), adds
// an optional one (passes), deletes a schema (fails) or adds a new major
// version (passes); a shallow clone fails loudly.
func TestCheckAgainstHistory(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is not on PATH (the evolution check reads the schemas' history): %v", err)
	}
	withNota := strings.Replace(v1, `"pedido_id":{"type":"string"},`, `"pedido_id":{"type":"string"},"nota":{"type":"string"},`, 1)
	const file = "schemas/PedidoConfirmado/v1.json"
	tests := []struct {
		name    string
		last    map[string]string // the last commit's files ("" deletes)
		shallow bool
		want    string // "" = passes
	}{
		{"optional field added", map[string]string{file: strings.Replace(withNota, `"tipo":{"type":"string","enum":["reserva","liberacion"]},`, `"tipo":{"type":"string","enum":["reserva","liberacion"]},"canal":{"type":"string"},`, 1)}, false, ""},
		{"new major version", map[string]string{"schemas/PedidoConfirmado/v2.json": `{"type":"object","required":["nuevo"]}`}, false, ""},
		{"field of an earlier commit removed", map[string]string{file: v1}, false, `schemas/PedidoConfirmado/v1.json (PedidoConfirmado v1): (root): field "nota" removed (against its version of commit`},
		{"schema deleted", map[string]string{file: ""}, false, "is deleted"},
		{"shallow clone", map[string]string{}, true, "history is shallow"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			origin, clone := t.TempDir(), t.TempDir()
			gitIn := func(dir string, args ...string) {
				t.Helper()
				cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false", "-c", "protocol.file.allow=always"}, args...)...)
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			commit := func(files map[string]string, msg string) {
				t.Helper()
				for rel, content := range files {
					p := filepath.Join(origin, rel)
					if content == "" {
						os.Remove(p)
						continue
					}
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				gitIn(origin, "add", "-A")
				gitIn(origin, "commit", "-qm", msg, "--allow-empty")
			}
			gitIn(origin, "init", "-q", "-b", "main")
			commit(map[string]string{file: v1, "schemas/MovimientoStock/v1.json": v1}, "v1")
			commit(map[string]string{file: withNota}, "an optional field")
			commit(tc.last, "the change under test")
			args := []string{"clone", "-q"}
			if tc.shallow {
				args = append(args, "--depth=1")
			}
			gitIn(t.TempDir(), append(args, "file://"+origin, clone)...)
			_, got, err := checkHistory(filepath.Join(clone, "schemas"))
			if tc.shallow {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("want an error with %q, got %v (problems %v)", tc.want, err, got)
				}
				return
			}
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
				t.Fatalf("want one problem with %q, got %v", tc.want, got)
			}
		})
	}
}

// CI: the schemas of the working tree against every version committed in
// HEAD's history.
func TestRunCheckOnTheRepository(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runSchemas([]string{"check", "-dir", "../../schemas"}, &out, &errb); code != 0 {
		t.Fatalf("mf schemas check = %d\n%s%s", code, out.String(), errb.String())
	}
	t.Log(strings.TrimSpace(out.String()))
}
