package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/mercadofresco/integration/schemas"
)

// git runs git in dir and returns its trimmed output.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// baseRef is the ref to compare with: against if set, else the merge-base
// of HEAD with origin/main or main, else HEAD (a fresh clone of main).
func baseRef(dir, against string) (string, error) {
	if against != "" {
		return against, nil
	}
	for _, main := range []string{"origin/main", "main"} {
		if mb, err := git(dir, "merge-base", "HEAD", main); err == nil && mb != "" {
			return mb, nil
		}
	}
	return "HEAD", nil
}

// checkAgainst compares every schema committed at ref under dir with the
// file in the working tree.
func checkAgainst(dir, ref string) ([]string, error) {
	prefix, err := git(dir, "rev-parse", "--show-prefix") // dir in the repository, "" at its top
	if err != nil {
		return nil, err
	}
	list, err := git(dir, "ls-tree", "-r", "--full-name", "--name-only", ref, "--", ".")
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, p := range strings.Split(list, "\n") {
		inDir := strings.TrimPrefix(p, prefix)
		name, major, ok := schemas.Parse(inDir)
		if p == "" || !ok {
			continue
		}
		oldText, err := git(dir, "show", ref+":"+p)
		if err != nil {
			return nil, err
		}
		newText, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(inDir)))
		if os.IsNotExist(err) {
			problems = append(problems, fmt.Sprintf("%s: the schema of %s version %d was published at %s and is deleted; consumers and archived events still use it", p, name, major, ref))
			continue
		}
		if err != nil {
			return nil, err
		}
		var oldS, newS map[string]any
		if err := json.Unmarshal([]byte(oldText), &oldS); err != nil {
			return nil, fmt.Errorf("%s at %s: %w", p, ref, err)
		}
		if err := json.Unmarshal(newText, &newS); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, b := range Breaking(oldS, newS) {
			problems = append(problems, fmt.Sprintf("%s (%s v%d): %s", p, name, major, b))
		}
	}
	return problems, nil
}
