package test

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	docReference = regexp.MustCompile(`docs/[A-Za-z0-9_/.-]+\.md(?:#[A-Za-z0-9_-]+)?`)
	heading      = regexp.MustCompile(`(?m)^#+ (.*)$`)
	notSlug      = regexp.MustCompile(`[^\w\- ]`)
)

// anchorsOf returns the heading anchors of a Markdown file, as GitHub
// makes them.
func anchorsOf(t *testing.T, path string) map[string]bool {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(string(raw), -1) {
		slug := notSlug.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), "")
		out[strings.ReplaceAll(slug, " ", "-")] = true
	}
	return out
}

// Every relative link of every Markdown file in the repository, and every
// docs/<file>.md#<section> a Go file cites, names a file of the repository
// and, with an anchor, one of its headings. No link leaves the repository.
func TestDocumentLinksResolve(t *testing.T) {
	out, err := exec.Command("git", "-C", "..", "ls-files", "*.md", "*.go").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	root, _ := filepath.Abs("..")
	anchors := map[string]map[string]bool{}
	checked := 0
	for _, file := range strings.Fields(string(out)) {
		if strings.HasPrefix(file, "test/testdata/") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		var links []string
		base := filepath.Dir(file)
		if strings.HasSuffix(file, ".md") {
			for _, m := range markdownLink.FindAllStringSubmatch(string(raw), -1) {
				links = append(links, m[1])
			}
		} else {
			links, base = docReference.FindAllString(string(raw), -1), "."
		}
		for _, link := range links {
			if regexp.MustCompile(`^[a-z]+:`).MatchString(link) {
				continue // a URL
			}
			path, anchor, _ := strings.Cut(link, "#")
			target := file
			if path != "" {
				target = filepath.Clean(filepath.Join(base, path))
			}
			checked++
			if strings.HasPrefix(target, "..") {
				t.Errorf("%s links %s, outside the repository", file, link)
				continue
			}
			if _, err := os.Stat(filepath.Join(root, target)); err != nil {
				t.Errorf("%s links %s: no such file", file, link)
				continue
			}
			if anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			if anchors[target] == nil {
				anchors[target] = anchorsOf(t, filepath.Join(root, target))
			}
			if !anchors[target][anchor] {
				t.Errorf("%s links %s: %s has no section %q", file, link, target, anchor)
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked %d links, expected many more: is the pattern right?", checked)
	}
}

// TestSecurityPageNamesExistingTests: every test docs/README-security.md
// names as proof of a claim is a test function of the repository, so the
// page cannot cite a test that was renamed or removed.
func TestSecurityPageNamesExistingTests(t *testing.T) {
	root, _ := filepath.Abs("..")
	page, err := os.ReadFile(filepath.Join(root, "docs", "README-security.md"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", "..", "ls-files", "*_test.go").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	defined := map[string]bool{}
	testFunc := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	for _, file := range strings.Fields(string(out)) {
		raw, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			continue // deleted in the work tree
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(raw), -1) {
			defined[m[1]] = true
		}
	}
	named := regexp.MustCompile("`(Test\\w+)`").FindAllStringSubmatch(string(page), -1)
	if len(named) < 40 {
		t.Fatalf("the page names %d tests, expected many more: is the pattern right?", len(named))
	}
	for _, m := range named {
		if !defined[m[1]] {
			t.Errorf("docs/README-security.md names %s, which no test file defines", m[1])
		}
	}
}

// maxPackageDoc is the longest package doc (comment lines) of non-test Go:
// a package doc states the contract; the reasoning goes to docs/design.md.
const maxPackageDoc = 15

// Every non-test Go file's package doc is at most maxPackageDoc lines.
func TestPackageDocsStateTheContractInFifteenLines(t *testing.T) {
	out, err := exec.Command("git", "-C", "..", "ls-files", "*.go").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	checked := 0
	for _, file := range strings.Fields(string(out)) {
		if strings.HasSuffix(file, "_test.go") || strings.HasPrefix(file, "test/testdata/") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", file), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc == nil {
			continue
		}
		checked++
		lines := 0
		for _, c := range f.Doc.List {
			lines += strings.Count(c.Text, "\n") + 1
		}
		if lines > maxPackageDoc {
			t.Errorf("%s: package doc of %d lines, want at most %d (state the contract; move the reasoning to a docs/design.md section and link it)", file, lines, maxPackageDoc)
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d package docs", checked)
	}
}

// No tracked Go file or document cites the course the project's figures
// came from: a reader of the repository does not have it. A figure is
// stated with its reasoning (docs/design.md), not attributed.
func TestNothingCitesTheCourse(t *testing.T) {
	out, err := exec.Command("git", "-C", "..", "ls-files", "*.go", "*.md", "Makefile", "scripts/*").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	word := "les" + "son" // this file may not hold the word either
	files := strings.Fields(string(out))
	if len(files) < 100 {
		t.Fatalf("git ls-files listed only %d files", len(files))
	}
	for _, file := range files {
		raw, err := os.ReadFile(filepath.Join("..", file))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(raw), "\n") {
			if strings.Contains(strings.ToLower(line), word) {
				t.Errorf("%s:%d cites the %s: state the number and link the design section instead", file, i+1, word)
			}
		}
	}
}
