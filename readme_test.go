// TestReadmeLayoutListsEveryPackage keeps the README's layout table
// complete: a package added anywhere in the repository, in this module or in
// one of hack/'s, fails the test until the table has a row for it.

package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// layoutRowRe is a row of the layout table, its first cell a backquoted path.
var layoutRowRe = regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")

// layoutRows returns the paths named by the first cells of the table under
// README.md's "## Layout" heading, as written (`cache/`, `sched.go`).
func layoutRows(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text, ok := section(string(data), "Layout")
	if !ok {
		t.Fatal(`README.md has no "## Layout" section`)
	}
	rows := map[string]bool{}
	for _, m := range layoutRowRe.FindAllStringSubmatch(text, -1) {
		rows[m[1]] = true
	}
	if len(rows) == 0 {
		t.Fatal(`README.md's "## Layout" section has no table rows of the form | ` + "`path`" + ` | what |`)
	}
	return rows
}

// skipsDir says whether the walk for packages skips a directory: hidden
// ones (.git, .ci), build outputs (bin), test inputs (testdata) and vendor.
func skipsDir(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
		name == "bin" || name == "testdata" || name == "vendor"
}

// packageDirs lists, by their slash paths from root ("." for root itself),
// the directories that hold .go files: the main module's packages and those
// of the modules under hack/.
func packageDirs(root string) ([]string, error) {
	seen := map[string]bool{}
	var dirs []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && p != root && skipsDir(e.Name()) {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		if dir := filepath.ToSlash(rel); !seen[dir] {
			seen[dir] = true
			dirs = append(dirs, dir)
		}
		return nil
	})
	return dirs, err
}

// registeredPlugins returns the directories (plugins/nodename) of the
// packages directly beneath plugins/ that package plugins imports: the
// plugins its registry names.
func registeredPlugins(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("plugins/*.go")
	if err != nil {
		t.Fatal(err)
	}
	plugins := map[string]bool{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			dir, ok := strings.CutPrefix(p, modulePath+"/")
			if ok && path.Dir(dir) == "plugins" {
				plugins[dir] = true
			}
		}
	}
	if len(plugins) == 0 {
		t.Fatal("package plugins imports no plugin: where is the registry?")
	}
	return plugins
}

// rowFor returns the layout row that covers the package in dir (a slash
// path from the root), or "" if none does. The rule:
//
//   - a row names a directory (`cache/`) or a Go file in one (`sched.go`,
//     the root package) and covers that directory's package only: a row for
//     a parent does not cover its children (`cache/` does not cover
//     cache/debugger);
//   - the one exception is the plugins: a package directly beneath plugins/
//     that the registry imports (plugins) is covered by the `plugins/` row,
//     "one package per plugin", since the README's Plugins table names each
//     of them. The other packages under plugins/ (helper, plugintesting, a
//     plugin's own sub-packages) need rows of their own.
func rowFor(dir string, rows, plugins map[string]bool) string {
	for row := range rows {
		named := strings.TrimSuffix(row, "/")
		if strings.HasSuffix(row, ".go") {
			named = path.Dir(row)
		}
		if named == dir {
			return row
		}
	}
	if plugins[dir] && rows["plugins/"] {
		return "plugins/"
	}
	return ""
}

// TestReadmeLayoutListsEveryPackage fails naming each directory with Go
// files that has no row in README.md's layout table, by rowFor's rule.
func TestReadmeLayoutListsEveryPackage(t *testing.T) {
	rows := layoutRows(t)
	plugins := registeredPlugins(t)
	dirs, err := packageDirs(".")
	if err != nil {
		t.Fatalf("listing the packages: %v", err)
	}
	for _, want := range []string{".", "cache", "examples/dradriver", "internal/cowmap", "hack/bench", "plugins/nodename"} {
		found := false
		for _, dir := range dirs {
			found = found || dir == want
		}
		if !found {
			t.Errorf("the walk did not find the package in %s (found %v)", want, dirs)
		}
	}
	for _, dir := range dirs {
		if rowFor(dir, rows, plugins) == "" {
			t.Errorf("README.md's layout table has no row for the package in %s/: add | `%s/` | what it is for |", dir, dir)
		}
	}
}

// TestReadmeLayoutRule shows rowFor's rule on examples.
func TestReadmeLayoutRule(t *testing.T) {
	rows := map[string]bool{"sched.go": true, "cache/": true, "plugins/": true, "plugins/helper/": true}
	plugins := map[string]bool{"plugins/nodename": true}
	tests := []struct {
		name, dir, want string
	}{
		{name: "a directory's own row", dir: "cache", want: "cache/"},
		{name: "a file's row covers its directory", dir: ".", want: "sched.go"},
		{name: "a parent's row does not cover a child", dir: "cache/debugger", want: ""},
		{name: "a registered plugin is covered by the plugins/ row", dir: "plugins/nodename", want: "plugins/"},
		{name: "a package under plugins/ that is no plugin needs its own row", dir: "plugins/plugintesting", want: ""},
		{name: "and has one", dir: "plugins/helper", want: "plugins/helper/"},
		{name: "a plugin's sub-package is no registered plugin", dir: "plugins/nodename/inner", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rowFor(tt.dir, rows, plugins); got != tt.want {
				t.Errorf("rowFor(%q) = %q, want %q", tt.dir, got, tt.want)
			}
		})
	}
}
