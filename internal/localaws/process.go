package localaws

// Processes: what the harnesses that start local
// processes share: finding the project's files above the working directory
// (node_modules, go.mod), a free port, and a buffer that several goroutines
// write (a process's stderr, a logger's output).

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

// Buffer collects what goroutines write to it (exec copies a process's
// stderr from its own goroutine; handlers log concurrently). With Limit
// above 0 it keeps about the first Limit bytes and drops the rest: for a
// process's stderr the first error explains the rest.
type Buffer struct {
	Limit int
	mu    sync.Mutex
	buf   strings.Builder
}

// StderrLimit is what the harnesses keep of a child process's stderr.
const StderrLimit = 64 << 10

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Limit <= 0 || b.buf.Len() < b.Limit {
		b.buf.Write(p)
	}
	return len(p), nil
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
