// Package testproc holds what the test harnesses that start local
// processes share: finding the project's files above the working directory
// (node_modules, go.mod), a free port, and a bounded stderr buffer.
package testproc

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// FindUp returns the nearest directory at or above the working directory
// that holds every one of rels (slash-separated paths relative to it).
func FindUp(rels ...string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		found := true
		for _, rel := range rels {
			if _, err := os.Stat(filepath.Join(dir, rel)); err != nil {
				found = false
				break
			}
		}
		if found {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no directory above %s holds %s", wd, strings.Join(rels, " and "))
		}
	}
}

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago.
// Another process may take it before the server binds, so callers retry a
// failed start.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Stderr collects the first 64 KiB a process writes (the first error
// explains the rest) for error messages; exec writes to it from its own
// goroutine.
type Stderr struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *Stderr) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() < 64<<10 {
		b.buf.Write(p)
	}
	return len(p), nil
}

func (b *Stderr) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
