package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/minisched/minisched/scenario"
)

// TestDocsNameRealThings keeps the tutorial and the README honest: every
// file path and every scenario they name in backquotes must exist.
func TestDocsNameRealThings(t *testing.T) {
	known := map[string]bool{}
	for _, s := range scenario.All() {
		known[s.Name] = true
	}
	code := regexp.MustCompile("`([^`]+)`")
	for _, doc := range []string{"README.md", "docs/README.md"} {
		t.Run(doc, func(t *testing.T) {
			b, err := os.ReadFile(doc)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range code.FindAllStringSubmatch(string(b), -1) {
				ref := m[1]
				switch {
				case strings.HasSuffix(ref, ".go") || strings.HasSuffix(ref, "/"):
					if _, err := os.Stat(ref); err != nil {
						t.Errorf("%s names %s, which does not exist", doc, ref)
					}
				case strings.HasPrefix(ref, "ch") && strings.Contains(ref, "-") && !strings.Contains(ref, " "):
					if !known[ref] {
						t.Errorf("%s names scenario %s, which does not exist", doc, ref)
					}
				}
			}
		})
	}
}
