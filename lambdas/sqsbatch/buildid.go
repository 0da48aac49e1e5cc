package sqsbatch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync"
)

// buildID names the running build for the records it leaves (a
// dead-lettered message's consumer version, the default of
// Config.ConsumerVersion): "sha256:" and the first 12 hex digits of the
// executable's SHA-256, read once per process. The project's binaries are
// reproducible (constructs/golambda), so it names the code exactly, equal
// across environments deployed from one commit.
var buildID = sync.OnceValues(func() (string, error) { return hashFile(os.Executable) })

func hashFile(path func() (string, error)) (string, error) {
	p, err := path()
	if err != nil {
		return "", fmt.Errorf("sqsbatch: build id: %w", err)
	}
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("sqsbatch: build id: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("sqsbatch: build id: read %s: %w", p, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:12], nil
}
