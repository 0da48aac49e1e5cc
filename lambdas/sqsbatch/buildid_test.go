package sqsbatch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

func TestExecutableIsStableAndShaped(t *testing.T) {
	a, err := buildID()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := buildID()
	if a != b || !regexp.MustCompile(`^sha256:[0-9a-f]{12}$`).MatchString(a) {
		t.Fatalf("buildID() = %q then %q", a, b)
	}
	p, err := New(Config{Handler: HandlerFunc(func(context.Context, *Record) error { return nil })})
	if err != nil || p.cfg.ConsumerVersion != a {
		t.Fatalf("default ConsumerVersion = %q, %v; want the build id %q", p.cfg.ConsumerVersion, err, a)
	}
}

func TestHashFollowsContent(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bootstrap")
	at := func() (string, error) { return p, nil }
	os.WriteFile(p, []byte("v1"), 0o755)
	h1, err := hashFile(at)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, []byte("v2"), 0o755)
	h2, _ := hashFile(at)
	if h1 == h2 {
		t.Errorf("different content, same id %s", h1)
	}
	// sha256("v1") starts with 3bfc269594ef.
	if h1 != "sha256:3bfc269594ef" {
		t.Errorf("id of v1 = %s", h1)
	}
	if _, err := hashFile(func() (string, error) { return "", errors.New("no executable") }); err == nil {
		t.Error("want an error when the executable cannot be found")
	}
}
