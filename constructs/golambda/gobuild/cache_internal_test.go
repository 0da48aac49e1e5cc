package gobuild

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// prune removes entries unused for maxAge with their sums, sums whose entry
// is gone, and temporary files older than an hour; it keeps the rest.
func TestPruneRemovesOldEntriesWithTheirSums(t *testing.T) {
	cache := t.TempDir()
	old := time.Now().Add(-30 * 24 * time.Hour)
	for _, f := range []struct {
		name  string
		dir   bool
		stale bool
	}{
		{"old", true, true}, {"old.sha256", false, false},
		{"fresh", true, false}, {"fresh.sha256", false, false},
		{"orphan.sha256", false, false},
		{".tmp-sum-1", false, true}, {".tmp-sum-2", false, false},
	} {
		p := filepath.Join(cache, f.name)
		var err error
		if f.dir {
			err = os.Mkdir(p, 0o755)
		} else {
			err = os.WriteFile(p, []byte("x"), 0o644)
		}
		if err == nil && f.stale {
			err = os.Chtimes(p, old, old)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	prune(cache, 14*24*time.Hour)
	for name, want := range map[string]bool{
		"old": false, "old.sha256": false, "orphan.sha256": false, ".tmp-sum-1": false,
		"fresh": true, "fresh.sha256": true, ".tmp-sum-2": true,
	} {
		if _, err := os.Stat(filepath.Join(cache, name)); (err == nil) != want {
			t.Errorf("%s: kept = %v, want %v", name, err == nil, want)
		}
	}
}
