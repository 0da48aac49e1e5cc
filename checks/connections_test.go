package checks

import (
	"strings"
	"testing"
)

// MF-DB-CONNECTIONS on the committed prod templates: they fit the proxy's
// share (2 × 2 + 1 + 1 + the shop's 50 of 834); a publisher reserved at 500
// does not, and the finding names every client and its share; a function
// that connects without a pool maximum is unbounded.
func TestConnectionBudget(t *testing.T) {
	function := func(res map[string]any, name string) map[string]any {
		for _, r := range res {
			if props, _ := r.(map[string]any)["Properties"].(map[string]any); props["FunctionName"] == name {
				return props
			}
		}
		t.Fatalf("no function %s", name)
		return nil
	}
	tests := []struct {
		name    string
		breakIt func(outbox map[string]any)
		want    [][]string
	}{
		{"as committed", func(map[string]any) {}, nil},
		{"publisher reserved 500", func(res map[string]any) {
			function(res, "mf-outbox-publicador")["ReservedConcurrentExecutions"] = 500.0
		},
			[][]string{{"[MF-DB-CONNECTIONS]", "proxy-mf-escritor may be asked for 1052 connections but opens at most 834 (50 % of Aurora PostgreSQL's 1669 max_connections at 8 ACU)",
				"mf-outbox-migraciones 1 × 1 = 1", "mf-outbox-publicador 500 × 2 = 1000", "mf-outbox-limpieza 1 × 1 = 1", "shop (outside) 50;"}}},
		{"cleanup without DB_MAX_CONNS", func(res map[string]any) {
			delete(function(res, "mf-outbox-limpieza")["Environment"].(map[string]any)["Variables"].(map[string]any), "DB_MAX_CONNS")
		}, [][]string{{"[MF-DB-CONNECTIONS]", "function mf-outbox-limpieza connects through proxy proxy-mf-escritor", "unbounded"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tpls := templates(t, "prod")
			tc.breakIt(resources(t, tpls, "Outbox"))
			var got []string
			for _, f := range Check(load(t, "prod", tpls)) {
				if f.Rule == RuleConnections {
					got = append(got, f.String())
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d findings, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i, parts := range tc.want {
				requireContains(t, got[i:i+1], parts...)
			}
		})
	}
}

// The documented table: 8 ACU is 1,669; between rows the lower one; a
// minimum below 1 ACU caps it at 2,000.
func TestMaxConnections(t *testing.T) {
	for _, tc := range []struct{ min, max, want float64 }{{0.5, 8, 1669}, {0.5, 6, 823}, {0.5, 1, 189}, {1, 16, 3360}, {0.5, 16, 2000}, {2, 64, 5000}} {
		if got := MaxConnections(tc.min, tc.max); got != tc.want {
			t.Errorf("MaxConnections(%g, %g) = %g, want %g", tc.min, tc.max, got, tc.want)
		}
	}
}
