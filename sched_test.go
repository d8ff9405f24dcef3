package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/minisched/minisched/chapters"
)

// TestDocsNameRealThings keeps the docs from drifting from the code. In
// every markdown file outside bin/ and hack/, every backquoted span outside
// code blocks that has the shape of code must name something that exists,
// and every relative link must lead to a file, and to a heading of it if it
// names an #anchor. The rules (docs_test.go has
// them, TestDocRefClassifier and TestDocRefContext show them on examples):
//
//   - A path (a span ending in .go, or with a slash and ending in / or an
//     extension) exists from the root or from the doc's directory; bin/ is
//     skipped (build outputs), and so are slashed paths whose first part is
//     not in the repository (upstream's test/integration/…).
//   - A scenario (ch<N>-…) is one of chapters.Stories (a Go story or a
//     file of scenarios/).
//   - pkg.Name, pkg.Type.Member and Type.Member are declared in the module:
//     go/parser reads every .go file outside bin/, hack/ (modules of their
//     own) and testdata/, and collects package-level funcs, types, consts
//     and vars by package clause, methods and fields by type, and what each
//     file declares.
//   - A call (Name(…), pkg.Name(…)) and a bare name with a camel hump
//     (scheduleOne, RunFilterPlugins) are declared in the module. A bare
//     name not written as a call may also be a JSON name of a module struct
//     field or of the Kubernetes types in apiTypes (configuration keys such
//     as leaderElect and percentageOfNodesToScore, plugin args such as
//     podLabels, extender keys such as FailedNodes), or an identifier-shaped
//     string literal of non-test code (the event reason FailedScheduling).
//     So a doc that names a function that was renamed fails, and a doc that
//     names a YAML key does not; the price is that a doc naming a function
//     whose name is also some API field's JSON name is not caught.
//   - A lower-case dotted path (spec.schedulerName) or YAML key
//     (`leaderElect: false`, `extenders:`) is a JSON name part by part.
//   - A name the prose ties to a file ("`X` in `f.go`", "`X` (`f.go`)",
//     "`f.go`: `X`", "`f.go`'s `X`", "`f.go` (`X`", deploy/README.md's
//     `f.go: X`) is declared in that file, even a one-word name like `Done`.
//   - Not checked: one-word names without a camel hump (Status, Run,
//     cache: English words, packages and values as often as Go names),
//     snake_case (metrics, environment variables), flags, spans with spaces
//     that are not calls (commands, messages), domain names, dotted names
//     of other modules (labels.Selector.Matches), and names right after
//     "upstream's", "kube-scheduler's", "crane's" or "crane-scheduler's".
//     docAllowlist holds the rest, each with its reason.
//
// A failure names the doc, the line and the span:
//
//	docs/README.md:123: `framework.RunFoo` names nothing in the module: package framework declares no RunFoo
func TestDocsNameRealThings(t *testing.T) {
	decls, err := loadModuleDecls(".")
	if err != nil {
		t.Fatalf("reading the module's declarations: %v", err)
	}
	c := &docChecker{decls: decls, apiNames: apiFieldNames(), scenarios: map[string]bool{},
		topLevel: map[string]bool{}, allowed: map[string]bool{}}
	stories, err := chapters.Stories(chapters.FilesDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stories {
		c.scenarios[s.Name] = true
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		c.topLevel[e.Name()] = true
	}
	docs, err := markdownDocs(".")
	if err != nil {
		t.Fatalf("listing the docs: %v", err)
	}
	for _, want := range []string{"README.md", "docs/README.md", "deploy/README.md"} {
		if !slices.Contains(docs, want) {
			t.Errorf("%s is not among the docs checked (%v)", want, docs)
		}
	}
	ran := 0
	for _, doc := range docs {
		t.Run(doc, func(t *testing.T) {
			ran++
			b, err := os.ReadFile(doc)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range extractRefs(string(b)) {
				if problem := c.check(doc, r); problem != "" {
					t.Errorf("%s:%d: `%s` %s", doc, r.line, r.text, problem)
				}
			}
			for _, l := range extractLinks(string(b)) {
				if problem := checkLink(doc, l); problem != "" {
					t.Errorf("%s:%d: %s", doc, l.line, problem)
				}
			}
		})
	}
	if ran < len(docs) {
		return // -run picked some docs: the allowlist may be used by others
	}
	for ref, reason := range docAllowlist {
		if !c.allowed[ref] {
			t.Errorf("docAllowlist has `%s` (%s), which no doc names any more", ref, reason)
		}
	}
}

// markdownDocs lists the repository's markdown files outside skippedDirs,
// by their paths from the root.
func markdownDocs(root string) ([]string, error) {
	var docs []string
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && path != root && skippedDirs[e.Name()] {
			return filepath.SkipDir
		}
		if !e.IsDir() && strings.HasSuffix(path, ".md") {
			docs = append(docs, filepath.ToSlash(path))
		}
		return nil
	})
	return docs, err
}
