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

// baseRef is the merge-base of HEAD with origin/main or main, else HEAD
// (mf review lists the schemas a branch changes).
func baseRef(dir string) string {
	for _, main := range []string{"origin/main", "main"} {
		if mb, err := git(dir, "merge-base", "HEAD", main); err == nil && mb != "" {
			return mb
		}
	}
	return "HEAD"
}

// checkHistory compares each schema under dir in the working tree with
// every version of its file committed in HEAD's history (a fresh clone of
// main included: its last commit is in that history too). A clone without
// that history (shallow) is an error, not a pass.
func checkHistory(dir string) (versions int, problems []string, err error) {
	if shallow, err := git(dir, "rev-parse", "--is-shallow-repository"); err != nil || shallow != "false" {
		return 0, nil, fmt.Errorf("%s: the check compares each schema with every version committed before it, and this clone's history is shallow (git fetch --unshallow): %v", dir, err)
	}
	prefix, err := git(dir, "rev-parse", "--show-prefix") // dir in the repository, "" at its top
	if err != nil {
		return 0, nil, err
	}
	// Each commit (merges against each parent) and the files it wrote:
	// ":<mode> <mode> <old blob> <new blob> <status>\t<path>".
	log, err := git(dir, "log", "-m", "--full-history", "--no-renames", "--raw", "--no-abbrev", "--format=%h", "--", ".")
	if err != nil {
		return 0, nil, err
	}
	commit, seen := "", map[string]bool{}
	report := func(msg string) { // once, against the newest version
		if !seen[msg] {
			seen[msg] = true
			problems = append(problems, msg+" (against its version of commit "+commit+")")
		}
	}
	for _, line := range strings.Split(log, "\n") {
		f := strings.Fields(line)
		if len(f) == 1 {
			commit = f[0]
		}
		if len(f) != 6 || !strings.HasPrefix(f[0], ":") || f[4] == "D" || seen[f[3]+f[5]] {
			continue
		}
		seen[f[3]+f[5]] = true
		p, inDir := f[5], strings.TrimPrefix(f[5], prefix)
		name, major, ok := schemas.Parse(inDir)
		if !ok {
			continue
		}
		versions++
		newText, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(inDir)))
		if os.IsNotExist(err) {
			report(fmt.Sprintf("%s: the schema of %s version %d is deleted; consumers and archived events still use it", p, name, major))
			continue
		}
		if err != nil {
			return 0, nil, err
		}
		oldText, err := git(dir, "cat-file", "blob", f[3])
		if err != nil {
			return 0, nil, err
		}
		var oldS, newS map[string]any
		if err := json.Unmarshal([]byte(oldText), &oldS); err != nil {
			return 0, nil, fmt.Errorf("%s at %s: %w", p, commit, err)
		}
		if err := json.Unmarshal(newText, &newS); err != nil {
			return 0, nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, b := range Breaking(oldS, newS) {
			report(fmt.Sprintf("%s (%s v%d): %s", p, name, major, b))
		}
	}
	return versions, problems, nil
}
