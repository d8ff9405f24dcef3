// Tests that the package comment (doc.go) lists every package below plugins/,
// the in-tree plugins in the registry's order, under the names they are
// registered with.

package plugins

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// listedItem matches an item of the package comment's lists: "  - name: …".
var listedItem = regexp.MustCompile(`(?m)^  - (\w+): `)

// packageComment returns the text of doc.go's package comment and the
// packages its lists name, in their order.
func packageComment(t *testing.T) (string, []string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	text := f.Doc.Text()
	var listed []string
	for _, m := range listedItem.FindAllStringSubmatch(text, -1) {
		listed = append(listed, m[1])
	}
	return text, listed
}

// registryOrder returns the packages of NewInTreeRegistry's entries in the
// order registry.go writes them, each once.
func registryOrder(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "registry.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	ast.Inspect(f, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			return true
		}
		if sel, ok := kv.Key.(*ast.SelectorExpr); ok {
			if pkg, ok := sel.X.(*ast.Ident); ok && !slices.Contains(order, pkg.Name) {
				order = append(order, pkg.Name)
			}
		}
		return false
	})
	return order
}

// packageDirs lists the directories below plugins/ that hold packages.
func packageDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "testdata" {
			dirs = append(dirs, e.Name())
		}
	}
	return dirs
}

func TestPackageComment(t *testing.T) {
	text, listed := packageComment(t)
	t.Run("every package below plugins/ is listed once", func(t *testing.T) {
		got := slices.Sorted(slices.Values(listed))
		if diff := cmp.Diff(packageDirs(t), got); diff != "" {
			t.Errorf("doc.go lists (-directories +listed):\n%s", diff)
		}
	})
	t.Run("the in-tree plugins come in the registry's order", func(t *testing.T) {
		order := registryOrder(t)
		got := slices.DeleteFunc(slices.Clone(listed), func(p string) bool { return !slices.Contains(order, p) })
		if diff := cmp.Diff(order, got); diff != "" {
			t.Errorf("doc.go's order (-registry.go +doc.go):\n%s", diff)
		}
	})
	t.Run("every registered name is given", func(t *testing.T) {
		for _, name := range NewInTreeRegistry().Names() {
			if !regexp.MustCompile(`\b` + name + `\b`).MatchString(text) {
				t.Errorf("doc.go does not name the plugin %s", name)
			}
		}
	})
}
