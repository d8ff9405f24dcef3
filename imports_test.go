// TestImportDirection keeps the README's map of the packages true: the line
// "Imports flow one way: …" lists groups of packages, each allowed to import
// only from the groups before it, and `go list` must agree.

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// modulePath is the main module's import path.
const modulePath = "github.com/minisched/minisched"

// importLine finds the README's import-direction line (it may wrap) and
// returns its groups, in order, each a list of packages as written.
func importLine(t *testing.T) [][]string {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "Imports flow one way")
	if start < 0 {
		t.Fatal("README.md has no line starting \"Imports flow one way\"")
	}
	end := strings.Index(text[start:], "\n\n")
	paragraph := text[start : start+end]
	paragraph = paragraph[strings.Index(paragraph, "`):")+len("`):"):]
	var groups [][]string
	name := regexp.MustCompile("`([^`]+)`")
	for _, group := range strings.Split(paragraph, "←") {
		var names []string
		for _, m := range name.FindAllStringSubmatch(group, -1) {
			names = append(names, m[1])
		}
		if len(names) == 0 {
			t.Fatalf("an empty group in the import line: %q", group)
		}
		groups = append(groups, names)
	}
	return groups
}

// listedPackage is one package of `go list -json`, with what it needs.
type listedPackage struct {
	ImportPath string
	Deps       []string
}

// modulePackages lists the module's packages with their transitive
// dependencies (tests excluded).
func modulePackages(t *testing.T) []listedPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Deps", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// itemPath is the import path a name of the line stands for: sched.go is
// the module's root package.
func itemPath(name string) string {
	if name == "sched.go" {
		return modulePath
	}
	return modulePath + "/" + strings.TrimSuffix(name, "/")
}

// groupOf returns the group of the item that owns path (the longest item
// that is path or a parent of it), and whether any does.
func groupOf(groups [][]string, path string) (group int, item string, ok bool) {
	longest := 0
	for g, names := range groups {
		for _, name := range names {
			p := itemPath(name)
			owns := path == p || (p != modulePath && strings.HasPrefix(path, p+"/"))
			if owns && len(p) > longest {
				group, item, ok, longest = g, name, true, len(p)
			}
		}
	}
	return group, item, ok
}

// violations lists the packages that need a package of their own group or
// a later one (another item's), directly or through packages the line does
// not name.
func violations(groups [][]string, pkgs []listedPackage) []string {
	var out []string
	for _, p := range pkgs {
		g, item, ok := groupOf(groups, p.ImportPath)
		if !ok {
			continue // a package the line does not name (examples, internal, tests)
		}
		for _, dep := range p.Deps {
			if dg, depItem, ok := groupOf(groups, dep); ok && depItem != item && dg >= g {
				out = append(out, fmt.Sprintf("%s (group %d, %s) imports %s (group %d, %s)",
					p.ImportPath, g+1, item, dep, dg+1, depItem))
			}
		}
	}
	return out
}

func TestImportDirection(t *testing.T) {
	groups := importLine(t)
	pkgs := modulePackages(t)
	exists := map[string]bool{}
	for _, p := range pkgs {
		exists[p.ImportPath] = true
	}
	for _, names := range groups {
		for _, name := range names {
			if !exists[itemPath(name)] {
				t.Errorf("the import line names %s, which is no package of the module", name)
			}
		}
	}
	reversed := slices.Clone(groups)
	slices.Reverse(reversed)
	tests := []struct {
		name     string
		groups   [][]string
		wantNone bool
	}{
		{name: "the README's line holds", groups: groups, wantNone: true},
		{name: "the line reversed does not", groups: reversed},
		{name: "the loop beside the queue it imports does not",
			groups: [][]string{{"minisched/framework"}, {"queue", "minisched"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := violations(tt.groups, pkgs)
			if tt.wantNone && len(got) > 0 {
				t.Errorf("against go list, the README's import line is wrong:\n%s", strings.Join(got, "\n"))
			}
			if !tt.wantNone && len(got) == 0 {
				t.Errorf("no violation found in %v", tt.groups)
			}
		})
	}
}
