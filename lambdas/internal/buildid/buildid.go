// Package buildid names the build a Lambda is running, for the records it
// leaves behind (dead-lettered messages say which consumer build refused
// them).
//
// The project's binaries are reproducible (golambda builds them with
// -trimpath, no VCS stamp and an empty Go build id), so the SHA-256 of the
// running executable identifies the code exactly, and equals across
// environments deployed from the same commit. It is the content of the
// Lambda asset, which is what `cdk diff` compares.
package buildid

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync"
)

var (
	once sync.Once
	id   string
	err  error
)

// Executable returns "sha256:" and the first 12 hex digits of the running
// executable's SHA-256. It reads the binary once per process (a few
// milliseconds for a Lambda bootstrap).
func Executable() (string, error) {
	once.Do(func() { id, err = hashFile(os.Executable) })
	return id, err
}

func hashFile(path func() (string, error)) (string, error) {
	p, err := path()
	if err != nil {
		return "", fmt.Errorf("buildid: %w", err)
	}
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("buildid: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("buildid: read %s: %w", p, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:12], nil
}
