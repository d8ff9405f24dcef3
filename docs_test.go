// The machinery behind TestDocsNameRealThings: what the module declares (read
// with go/parser), the names the Kubernetes types the docs talk about give
// their fields, where markdown names code in backquotes, what shape each of
// those names has, and whether it names something real.

package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// skippedDirs are the directories whose markdown and Go files are not the
// module's: build outputs (bin/), the modules of their own under hack/
// (hack/tools builds the binaries, hack/descheduler the descheduler, hack/bench
// the benchmark program), and test inputs.
var skippedDirs = map[string]bool{".git": true, "bin": true, "hack": true, "vendor": true, "testdata": true}

// docAllowlist holds the few names a doc rightly writes in backquotes
// although nothing in the module or in the Kubernetes types declares them,
// each with the reason. TestDocsNameRealThings fails on an entry no doc uses.
var docAllowlist = map[string]string{
	"maxLimitPercent": "docs/README.md names the corrected spelling of crane's maxLimitPecent to say that minisched rejects it as an unknown field",
}

// refKind is the shape of a backquoted span, which decides how it is checked.
type refKind string

// The kinds of span. The first group is checked, the second is not.
const (
	// kindPath is a file or directory of the repository: it ends in .go,
	// or has a slash and ends in / or a file extension.
	kindPath refKind = "path"
	// kindFileLine is file.go:123.
	kindFileLine refKind = "file:line"
	// kindFileDecl is `file.go: Func` or `file.go: Type.Method`, deploy/README.md's form.
	kindFileDecl refKind = "file: declaration"
	// kindScenario is a scenario's name, ch<N>-<words>.
	kindScenario refKind = "scenario"
	// kindYAMLKey is a configuration key, `leaderElection.leaderElect: true` or `extenders:`.
	kindYAMLKey refKind = "YAML key"
	// kindCall is a call, `scheduleOne()` or `app.NewCommand(app.WithPlugin(name, factory))`.
	kindCall refKind = "call"
	// kindQualified is pkg.Name, Type.Member, pkg.Type.Member or a JSON path (spec.schedulerName).
	kindQualified refKind = "qualified name"
	// kindName is a bare identifier with a camel hump: scheduleOne, RunFilterPlugins.
	kindName refKind = "name"

	// kindWord is a bare identifier without a hump (Status, Run, cache,
	// pods): as likely an English word, a package or a YAML value as a Go
	// name, so it is checked only where prose ties it to a file.
	kindWord refKind = "word"
	// kindSnake is snake_case or SHOUTING_CASE: metric names, environment variables.
	kindSnake refKind = "snake_case"
	// kindFlag is a command-line flag, --foo or -v 4.
	kindFlag refKind = "flag"
	// kindDomain is an API group or a host, events.k8s.io.
	kindDomain refKind = "domain"
	// kindOther is everything else: shell commands, messages, URL paths,
	// label keys, values.
	kindOther refKind = "other"
)

// checked says whether spans of the kind are checked against the module.
func (k refKind) checked() bool {
	switch k {
	case kindPath, kindFileLine, kindFileDecl, kindScenario, kindYAMLKey, kindCall, kindQualified, kindName:
		return true
	}
	return false
}

// identLike says whether the kind names a Go declaration, so that prose
// around it ("X in file.go", "upstream's X") can change how it is checked.
func (k refKind) identLike() bool {
	return k == kindCall || k == kindQualified || k == kindName || k == kindWord
}

// classified is a span's kind and the parts the check needs.
type classified struct {
	kind refKind
	// name is the Go name (a call's callee, without arguments), the path,
	// the YAML key path or the scenario.
	name string
	// file and line are set for kindFileDecl and kindFileLine.
	file string
	line int
}

const ident = `[A-Za-z_][A-Za-z0-9_]*`

var (
	fileDeclRe = regexp.MustCompile(`^(\S+\.go): (` + ident + `(?:\.` + ident + `)?)$`)
	fileLineRe = regexp.MustCompile(`^(\S+\.go):(\d+)$`)
	pathRe     = regexp.MustCompile(`^[\w.-]+(?:/[\w.-]+)*/?$`)
	extRe      = regexp.MustCompile(`\.[A-Za-z0-9]+$`)
	fileNameRe = regexp.MustCompile(`^[\w.-]+\.(?:md|ya?ml|json|png|svg|txt|mod|sum|sh|pprof|html)$`)
	scenarioRe = regexp.MustCompile(`^ch\d+(?:-[a-z0-9]+)+$`)
	yamlKeyRe  = regexp.MustCompile(`^([a-z][A-Za-z0-9]*(?:\.[a-z][A-Za-z0-9]*)*):(?: .+)?$`)
	callRe     = regexp.MustCompile(`^(` + ident + `(?:\.` + ident + `)*)\(.*\)$`)
	qualRe     = regexp.MustCompile(`^` + ident + `(?:\.` + ident + `)+$`)
	identRe    = regexp.MustCompile(`^` + ident + `$`)
	humpRe     = regexp.MustCompile(`[a-z0-9][A-Z]|[A-Z]{2}[a-z]`)
)

// domainTails are the last labels that make a dotted span a DNS name.
var domainTails = map[string]bool{"io": true, "com": true, "org": true, "net": true, "dev": true}

// classify tells from its shape alone what a backquoted span names. The
// rules, in order:
//
//   - a leading - is a flag;
//   - file.go: Name is a declaration in that file, file.go:123 a line of it;
//   - a span without spaces ending in .go, or with a slash and ending in /
//     or an extension (.md, .yaml), is a path; other slashed spans
//     (pods/binding, k8s.io/api, /metrics) are not;
//   - another file name (latest.md, policy.yaml) is not checked: the prose
//     says which directory it is in;
//   - ch<N>-words is a scenario;
//   - lowerCamel.keys: value (or key:) is configuration;
//   - Name(…) and pkg.Name(…).Method() are calls of their first name;
//   - other spans with spaces are commands or prose;
//   - a.b.c is a qualified name, unless it has an underscore (a metric) or
//     ends in a top-level domain (events.k8s.io);
//   - a bare identifier is a name if it has a camel hump (scheduleOne,
//     FitError, HTTPExtender), snake_case if it has an underscore, and a
//     word otherwise.
func classify(span string) classified {
	s := strings.TrimSpace(span)
	switch {
	case s == "":
		return classified{kind: kindOther}
	case strings.HasPrefix(s, "-"):
		return classified{kind: kindFlag}
	}
	if m := fileDeclRe.FindStringSubmatch(s); m != nil {
		return classified{kind: kindFileDecl, file: m[1], name: m[2]}
	}
	if m := fileLineRe.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[2])
		return classified{kind: kindFileLine, file: m[1], line: n}
	}
	spaced := strings.ContainsAny(s, " \t")
	if !spaced && strings.HasSuffix(s, ".go") {
		return classified{kind: kindPath, name: s}
	}
	if !spaced && strings.Contains(s, "/") {
		last := s[strings.LastIndex(strings.TrimSuffix(s, "/"), "/")+1:]
		if pathRe.MatchString(s) && (strings.HasSuffix(s, "/") || extRe.MatchString(last)) {
			return classified{kind: kindPath, name: s}
		}
		return classified{kind: kindOther}
	}
	if !spaced && fileNameRe.MatchString(s) {
		return classified{kind: kindOther} // a file named without its directory: the prose says where
	}
	if scenarioRe.MatchString(s) {
		return classified{kind: kindScenario, name: s}
	}
	if m := yamlKeyRe.FindStringSubmatch(s); m != nil {
		return classified{kind: kindYAMLKey, name: m[1]}
	}
	if m := callRe.FindStringSubmatch(s); m != nil {
		if strings.Contains(m[1], "_") {
			return classified{kind: kindSnake}
		}
		return classified{kind: kindCall, name: m[1]}
	}
	switch {
	case spaced:
		return classified{kind: kindOther}
	case qualRe.MatchString(s):
		if strings.Contains(s, "_") {
			return classified{kind: kindSnake}
		}
		if domainTails[s[strings.LastIndex(s, ".")+1:]] {
			return classified{kind: kindDomain}
		}
		return classified{kind: kindQualified, name: s}
	case identRe.MatchString(s):
		if strings.Contains(s, "_") {
			return classified{kind: kindSnake}
		}
		if humpRe.MatchString(s) {
			return classified{kind: kindName, name: s}
		}
		return classified{kind: kindWord, name: s}
	}
	return classified{kind: kindOther}
}

// docRef is one backquoted span of a doc, with what the prose around it says.
type docRef struct {
	// line is where the span starts, from 1.
	line int
	// text is the span, its line breaks folded into spaces.
	text string
	// file is the .go file the prose ties the name to: "`X` in `f.go`",
	// "`X` (`f.go`)", "`f.go`: `X`", "`f.go`'s `X`", "`f.go` (`X`". The name
	// must then be declared in that file.
	file string
	// upstream is set when the span follows "upstream's", "kube-scheduler's",
	// "crane's" or "crane-scheduler's": a name of that code, not of ours.
	upstream bool
}

var (
	spanRe     = regexp.MustCompile("`([^`]+)`")
	linkRe     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	fenceRe    = regexp.MustCompile("^\\s*(```|~~~)")
	inFileRe   = regexp.MustCompile(`^\s+in\s+$|^\s*\(\s*$`)
	fileIsRe   = regexp.MustCompile(`^(?::|'s)\s+$|^\s+\(\s*$`)
	upstreamRe = regexp.MustCompile(`(?:upstream|kube-scheduler|crane|crane-scheduler)'s\s+$`)
)

// prose returns the markdown with the contents of fenced code blocks blanked
// out, line breaks kept so that offsets still give line numbers: a block is
// a shell session or a YAML file, not prose that names code.
func prose(markdown string) string {
	lines := strings.Split(markdown, "\n")
	fenced := false
	for i, l := range lines {
		if fenceRe.MatchString(l) {
			fenced = !fenced
			lines[i] = ""
		} else if fenced {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// lineAt is the line, from 1, of the byte offset.
func lineAt(text string, offset int) int {
	return 1 + strings.Count(text[:offset], "\n")
}

// extractRefs lists a doc's backquoted spans outside code blocks, with
// their context.
func extractRefs(markdown string) []docRef {
	text := prose(markdown)
	ms := spanRe.FindAllStringSubmatchIndex(text, -1)
	refs := make([]docRef, len(ms))
	for i, m := range ms {
		refs[i] = docRef{line: lineAt(text, m[0]), text: strings.Join(strings.Fields(text[m[2]:m[3]]), " ")}
		prev := 0
		if i > 0 {
			prev = ms[i-1][1]
		}
		refs[i].upstream = upstreamRe.MatchString(text[prev:m[0]])
	}
	for i := 0; i+1 < len(ms); i++ {
		between := text[ms[i][1]:ms[i+1][0]]
		a, b := refs[i].text, refs[i+1].text
		switch {
		case strings.HasSuffix(b, ".go") && inFileRe.MatchString(between) && classify(a).kind.identLike():
			refs[i].file = b
		case strings.HasSuffix(a, ".go") && fileIsRe.MatchString(between) && classify(b).kind.identLike():
			refs[i+1].file = a
		}
	}
	return refs
}

// docLink is a relative markdown link: its line, the file it leads to
// (empty for the doc itself) and the #anchor, if any.
type docLink struct {
	line   int
	target string
	anchor string
}

// extractLinks lists a doc's relative links.
func extractLinks(markdown string) []docLink {
	text := prose(markdown)
	var links []docLink
	for _, m := range linkRe.FindAllStringSubmatchIndex(text, -1) {
		target := text[m[2]:m[3]]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		target, anchor, _ := strings.Cut(target, "#")
		links = append(links, docLink{line: lineAt(text, m[0]), target: target, anchor: anchor})
	}
	return links
}

var headingRe = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)

// anchors returns the anchors GitHub gives a doc's headings: lower case,
// punctuation dropped, spaces turned into hyphens, -1, -2 … after repeats.
func anchors(markdown string) map[string]bool {
	found := map[string]bool{}
	seen := map[string]int{}
	for _, l := range strings.Split(prose(markdown), "\n") {
		m := headingRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			found[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			found[a] = true
		}
		seen[a]++
	}
	return found
}

// checkLink returns what is wrong with a link of the doc, or "".
func checkLink(doc string, l docLink) string {
	target := doc
	if l.target != "" {
		target = filepath.Join(filepath.Dir(doc), l.target)
	}
	if _, err := os.Stat(target); err != nil {
		return fmt.Sprintf("links to %s, which does not exist", l.target)
	}
	if l.anchor == "" || !strings.HasSuffix(target, ".md") {
		return ""
	}
	b, err := os.ReadFile(target)
	if err != nil {
		return err.Error()
	}
	if !anchors(string(b))[l.anchor] {
		return fmt.Sprintf("links to #%s, which no heading of %s has", l.anchor, filepath.ToSlash(target))
	}
	return ""
}

// moduleDecls is what the module declares, read from every .go file outside
// skippedDirs with go/parser.
type moduleDecls struct {
	// names holds every package-level func, type, const and var, every
	// method, every struct field (nested ones too) and interface method.
	names map[string]bool
	// pkgs maps a package clause (without _test) to its package-level names.
	pkgs map[string]map[string]bool
	// types holds every type's name.
	types map[string]bool
	// members maps a type, bare and package-qualified (Snapshot,
	// cache.Snapshot), to its methods, fields and interface methods.
	members map[string]map[string]bool
	// files maps a .go file's path from the root to the names it declares,
	// members also as Type.Member.
	files map[string]map[string]bool
	// jsonNames holds the json and yaml tags of the module's struct fields,
	// so that a doc may name a plugin's args (podLabels) or a policy's keys.
	jsonNames map[string]bool
	// literals holds the identifier-shaped string literals of non-test code:
	// event reasons (FailedScheduling) and result labels a doc may name.
	literals map[string]bool
}

// add records a name in a set of the map, creating the set.
func add(m map[string]map[string]bool, key, name string) {
	if m[key] == nil {
		m[key] = map[string]bool{}
	}
	m[key][name] = true
}

// typeName is the name of a receiver's or embedded field's type, without
// pointer, type arguments or package.
func typeName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.StarExpr:
		return typeName(t.X)
	case *ast.ParenExpr:
		return typeName(t.X)
	case *ast.IndexExpr:
		return typeName(t.X)
	case *ast.IndexListExpr:
		return typeName(t.X)
	case *ast.SelectorExpr:
		return t.Sel.Name
	}
	return ""
}

// loadModuleDecls parses the module under root.
func loadModuleDecls(root string) (*moduleDecls, error) {
	d := &moduleDecls{names: map[string]bool{}, pkgs: map[string]map[string]bool{},
		types: map[string]bool{}, members: map[string]map[string]bool{}, files: map[string]map[string]bool{},
		jsonNames: map[string]bool{}, literals: map[string]bool{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if path != root && skippedDirs[e.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		d.addFile(filepath.ToSlash(rel), f)
		return nil
	})
	return d, err
}

// addFile records the declarations of one parsed file.
func (d *moduleDecls) addFile(rel string, f *ast.File) {
	pkg := strings.TrimSuffix(f.Name.Name, "_test")
	if d.pkgs[pkg] == nil {
		d.pkgs[pkg] = map[string]bool{}
	}
	declare := func(name string) {
		d.names[name] = true
		d.pkgs[pkg][name] = true
		add(d.files, rel, name)
	}
	member := func(typ, name string) {
		d.names[name] = true
		add(d.members, typ, name)
		add(d.members, pkg+"."+typ, name)
		add(d.files, rel, name)
		add(d.files, rel, typ+"."+name)
	}
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Recv != nil && len(decl.Recv.List) == 1 {
				member(typeName(decl.Recv.List[0].Type), decl.Name.Name)
			} else {
				declare(decl.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range decl.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					declare(spec.Name.Name)
					d.types[spec.Name.Name] = true
					d.addType(spec, member)
				case *ast.ValueSpec:
					for _, n := range spec.Names {
						declare(n.Name)
					}
				}
			}
		}
	}
	if strings.HasSuffix(rel, "_test.go") {
		return
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && identRe.MatchString(s) {
				d.literals[s] = true
			}
		}
		return true
	})
}

// addType records a type's fields or interface methods as its members, and
// the fields and json tags of any struct nested in it as names.
func (d *moduleDecls) addType(spec *ast.TypeSpec, member func(typ, name string)) {
	switch t := spec.Type.(type) {
	case *ast.StructType:
		for _, f := range t.Fields.List {
			if len(f.Names) == 0 {
				member(spec.Name.Name, typeName(f.Type))
			}
			for _, n := range f.Names {
				member(spec.Name.Name, n.Name)
			}
		}
	case *ast.InterfaceType:
		for _, m := range t.Methods.List {
			for _, n := range m.Names {
				member(spec.Name.Name, n.Name)
			}
		}
	}
	ast.Inspect(spec.Type, func(n ast.Node) bool {
		st, ok := n.(*ast.StructType)
		if !ok {
			return true
		}
		for _, f := range st.Fields.List {
			for _, n := range f.Names {
				d.names[n.Name] = true
			}
			if f.Tag == nil {
				continue
			}
			tag, err := strconv.Unquote(f.Tag.Value)
			if err != nil {
				continue
			}
			for _, key := range []string{"json", "yaml"} {
				if name, _, _ := strings.Cut(reflect.StructTag(tag).Get(key), ","); name != "" && name != "-" {
					d.jsonNames[name] = true
				}
			}
		}
		return true
	})
}

// apiTypes are the Kubernetes types whose fields the docs name: the
// scheduler's configuration with the in-tree plugins' args, the extender
// wire types (whose JSON keys are their Go field names), and the objects
// the scheduler reads and writes (storage, DRA and PodGroups included).
var apiTypes = []any{
	configv1.KubeSchedulerConfiguration{},
	configv1.DefaultPreemptionArgs{}, configv1.InterPodAffinityArgs{}, configv1.NodeAffinityArgs{},
	configv1.NodeResourcesBalancedAllocationArgs{}, configv1.NodeResourcesFitArgs{}, configv1.PodTopologySpreadArgs{},
	extenderv1.ExtenderArgs{}, extenderv1.ExtenderFilterResult{}, extenderv1.ExtenderPreemptionArgs{},
	extenderv1.ExtenderPreemptionResult{}, extenderv1.ExtenderBindingArgs{}, extenderv1.ExtenderBindingResult{},
	extenderv1.HostPriority{},
	v1.Pod{}, v1.Node{}, schedulingv1.PriorityClass{}, policyv1.PodDisruptionBudget{},
	rbacv1.Role{}, rbacv1.ClusterRole{}, coordinationv1.Lease{},
	configv1.VolumeBindingArgs{}, v1.PersistentVolumeClaim{}, v1.PersistentVolume{}, storagev1.StorageClass{},
	storagev1.CSINode{}, storagev1.CSIDriver{}, storagev1.CSIStorageCapacity{},
	configv1.DynamicResourcesArgs{}, resourceapi.DeviceClass{}, resourceapi.ResourceClaim{},
	resourceapi.ResourceClaimTemplate{}, resourceapi.ResourceSlice{}, resourceapi.DeviceTaintRule{},
	schedulingv1beta1.PodGroup{},
}

// apiFieldNames returns the Go names and JSON names of apiTypes' fields,
// and of the structs they hold, at any depth.
func apiFieldNames() map[string]bool {
	names := map[string]bool{}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for {
			switch t.Kind() {
			case reflect.Pointer, reflect.Slice, reflect.Array:
				t = t.Elem()
				continue
			case reflect.Map:
				walk(t.Key())
				t = t.Elem()
				continue
			}
			break
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			names[f.Name] = true
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
				names[name] = true
			}
			walk(f.Type)
		}
	}
	for _, v := range apiTypes {
		walk(reflect.TypeOf(v))
	}
	return names
}

// docChecker checks docRefs against the module.
type docChecker struct {
	decls *moduleDecls
	// apiNames are apiFieldNames().
	apiNames map[string]bool
	// scenarios are the names of chapters.Stories: the Go stories and the
	// files of scenarios/.
	scenarios map[string]bool
	// topLevel are the entries of the repository's root: a slashed path
	// starting with one of them names the repository, others (upstream's
	// test/integration/…) do not.
	topLevel map[string]bool
	// allowed records the allowlist entries used.
	allowed map[string]bool
}

// jsonName says whether a name is a configuration or API key.
func (c *docChecker) jsonName(name string) bool {
	return c.apiNames[name] || c.decls.jsonNames[name]
}

// exists says whether a path exists from the root or from the doc's directory.
func exists(doc, path string) bool {
	for _, p := range []string{path, filepath.Join(filepath.Dir(doc), path)} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// check returns what is wrong with a reference of the doc, or "".
func (c *docChecker) check(doc string, r docRef) string {
	if _, ok := docAllowlist[r.text]; ok {
		c.allowed[r.text] = true
		return ""
	}
	k := classify(r.text)
	if k.kind.identLike() {
		switch {
		case r.upstream:
			return ""
		case r.file != "":
			return c.checkInFile(doc, r.file, k.name)
		}
	}
	switch k.kind {
	case kindPath:
		first, _, _ := strings.Cut(k.name, "/")
		switch {
		case first == "bin":
			return "" // build outputs: not in a fresh checkout
		case exists(doc, k.name):
			return ""
		case strings.HasSuffix(k.name, ".go") || c.topLevel[first]:
			return "names a path that does not exist"
		}
	case kindFileLine:
		b, err := os.ReadFile(k.file)
		if err != nil {
			return "names a file that does not exist"
		}
		if n := strings.Count(string(b), "\n"); k.line < 1 || k.line > n {
			return fmt.Sprintf("names a line past the file's end (%d lines)", n)
		}
	case kindFileDecl:
		return c.checkInFile(doc, k.file, k.name)
	case kindScenario:
		if !c.scenarios[k.name] {
			return "names no scenario (chapters.Stories)"
		}
	case kindYAMLKey:
		for _, key := range strings.Split(k.name, ".") {
			if !c.jsonName(key) {
				return fmt.Sprintf("names the key %s, which no configuration or API type has", key)
			}
		}
	case kindCall:
		if !c.declared(k.name) {
			return "names nothing in the module"
		}
	case kindName:
		if !c.declared(k.name) && !c.jsonName(k.name) && !c.decls.literals[k.name] {
			return "names nothing in the module"
		}
	case kindQualified:
		return c.checkQualified(k.name)
	}
	return ""
}

// declared says whether a bare or qualified name is declared in the module.
func (c *docChecker) declared(name string) bool {
	if !strings.Contains(name, ".") {
		return c.decls.names[name]
	}
	return c.checkQualified(name) == ""
}

// checkQualified resolves a.b[.c]: a package's name (scheduler.New,
// cache.Snapshot.List), a type's member (Scheduler.Run), or a JSON path
// (spec.schedulerName). Dotted names that are none of these and have an
// upper-case part belong to other modules (labels.Selector.Matches).
func (c *docChecker) checkQualified(name string) string {
	parts := strings.Split(name, ".")
	d := c.decls
	switch {
	case d.pkgs[parts[0]] != nil:
		if !d.pkgs[parts[0]][parts[1]] {
			return fmt.Sprintf("names nothing in the module: package %s declares no %s", parts[0], parts[1])
		}
		if len(parts) > 2 && !d.members[parts[0]+"."+parts[1]][parts[2]] {
			return fmt.Sprintf("names nothing in the module: %s.%s has no %s", parts[0], parts[1], parts[2])
		}
	case d.types[parts[0]]:
		if !d.members[parts[0]][parts[1]] {
			return fmt.Sprintf("names nothing in the module: %s has no %s", parts[0], parts[1])
		}
	case lowerFirsts(parts):
		for _, p := range parts {
			if !c.jsonName(p) {
				return fmt.Sprintf("names nothing in the module, and %s is no configuration or API key", p)
			}
		}
	}
	return ""
}

// lowerFirsts says whether every part starts with a lower-case letter.
func lowerFirsts(parts []string) bool {
	for _, p := range parts {
		if p == "" || p[0] < 'a' || p[0] > 'z' {
			return false
		}
	}
	return true
}

// checkInFile checks that a file declares a name (Func, Type, Type.Member or pkg.Func).
func (c *docChecker) checkInFile(doc, file, name string) string {
	if !exists(doc, file) {
		return fmt.Sprintf("names %s, which does not exist", file)
	}
	names := c.decls.files[file]
	if names[name] {
		return ""
	}
	if pkg, rest, ok := strings.Cut(name, "."); ok && c.decls.pkgs[pkg] != nil && names[rest] {
		return ""
	}
	return fmt.Sprintf("names nothing declared in %s", file)
}

// TestDocRefClassifier shows the classification rules on examples of each
// kind, and which kinds are checked.
func TestDocRefClassifier(t *testing.T) {
	tests := []struct {
		span    string
		kind    refKind
		name    string
		checked bool
	}{
		{span: "minisched/schedule_one.go", kind: kindPath, name: "minisched/schedule_one.go", checked: true},
		{span: "plugins/", kind: kindPath, name: "plugins/", checked: true},
		{span: "bench/results/latest.md", kind: kindPath, name: "bench/results/latest.md", checked: true},
		{span: "sched.go", kind: kindPath, name: "sched.go", checked: true},
		{span: "hack/bench", kind: kindOther},
		{span: "latest.md", kind: kindOther},
		{span: "pods/binding", kind: kindOther},
		{span: "k8s.io/kube-scheduler/extender/v1", kind: kindOther},
		{span: "/metrics", kind: kindOther},
		{span: "podstatus/podstatus.go: Update", kind: kindFileDecl, name: "Update", checked: true},
		{span: "scheduler/service.go: Service.Run", kind: kindFileDecl, name: "Service.Run", checked: true},
		{span: "queue/queue.go:120", kind: kindFileLine, checked: true},
		{span: "ch10-preemption-policy-never", kind: kindScenario, name: "ch10-preemption-policy-never", checked: true},
		{span: "leaderElection.leaderElect: true", kind: kindYAMLKey, name: "leaderElection.leaderElect", checked: true},
		{span: "extenders:", kind: kindYAMLKey, name: "extenders", checked: true},
		{span: "scheduleOne()", kind: kindCall, name: "scheduleOne", checked: true},
		{span: "app.NewCommand().Main()", kind: kindCall, name: "app.NewCommand", checked: true},
		{span: "app.NewCommand(app.WithPlugin(name, factory))", kind: kindCall, name: "app.NewCommand", checked: true},
		{span: "minisched.Scheduler", kind: kindQualified, name: "minisched.Scheduler", checked: true},
		{span: "cache.Snapshot.List", kind: kindQualified, name: "cache.Snapshot.List", checked: true},
		{span: "Scheduler.bind", kind: kindQualified, name: "Scheduler.bind", checked: true},
		{span: "spec.schedulerName", kind: kindQualified, name: "spec.schedulerName", checked: true},
		{span: "events.k8s.io", kind: kindDomain},
		{span: "scheduleOne", kind: kindName, name: "scheduleOne", checked: true},
		{span: "RunFilterPlugins", kind: kindName, name: "RunFilterPlugins", checked: true},
		{span: "HTTPExtender", kind: kindName, name: "HTTPExtender", checked: true},
		{span: "percentageOfNodesToScore", kind: kindName, name: "percentageOfNodesToScore", checked: true},
		{span: "Status", kind: kindWord, name: "Status"},
		{span: "cache", kind: kindWord, name: "cache"},
		{span: "scheduler_pending_pods{queue}", kind: kindOther},
		{span: "scheduler_preemption_victims", kind: kindSnake},
		{span: "KUBEBUILDER_ASSETS", kind: kindSnake},
		{span: "--metrics-bind-address", kind: kindFlag},
		{span: "-v 4", kind: kindFlag},
		{span: "make start ARGS=\"--scenario NAME\"", kind: kindOther},
		{span: "node(s) had a different ordinal", kind: kindOther},
		{span: "127.0.0.1:10259", kind: kindOther},
		{span: "system:kube-scheduler", kind: kindOther},
	}
	for _, tt := range tests {
		t.Run(tt.span, func(t *testing.T) {
			got := classify(tt.span)
			if got.kind != tt.kind || got.name != tt.name || got.kind.checked() != tt.checked {
				t.Errorf("classify(%q) = %s %q (checked %v), want %s %q (checked %v)",
					tt.span, got.kind, got.name, got.kind.checked(), tt.kind, tt.name, tt.checked)
			}
		})
	}
}

// TestDocRefContext shows how prose around a span changes its check: a
// file named next to it, or upstream's name for it.
func TestDocRefContext(t *testing.T) {
	tests := []struct {
		name         string
		markdown     string
		wantFile     string
		wantUpstream bool
	}{
		{name: "in file", markdown: "`Done` in\n`queue/queue.go` says", wantFile: "queue/queue.go"},
		{name: "file in parentheses", markdown: "`CycleState` (`minisched/framework/cycle_state.go`)", wantFile: "minisched/framework/cycle_state.go"},
		{name: "file colon", markdown: "`scheduler/service.go`: `New` wires", wantFile: "scheduler/service.go"},
		{name: "file's", markdown: "`queue/queue.go`'s `Done`", wantFile: "queue/queue.go"},
		{name: "file then parenthesis", markdown: "`minisched/extender.go` (`HTTPExtender`)", wantFile: "minisched/extender.go"},
		{name: "in a function is not a file", markdown: "`hasScoring` in `findNodesThatPassFilters`"},
		{name: "a list is not a declaration", markdown: "`scheduler/extenders.go`, `withIgnoredResources`"},
		{name: "upstream's", markdown: "as kube-scheduler's\n`app.NewSchedulerCommand(app.WithPlugin(...))` does", wantUpstream: true},
		{name: "ours", markdown: "as minisched's `app.NewCommand()` does"},
		{name: "fenced code is not prose", markdown: "```\n`Bogus` in `x.go`\n```\n`Done` in `queue/queue.go`", wantFile: "queue/queue.go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refs := extractRefs(tt.markdown)
			if len(refs) == 0 {
				t.Fatalf("no spans in %q", tt.markdown)
			}
			var file string
			var upstream bool
			for _, r := range refs {
				if r.file != "" {
					file = r.file
				}
				upstream = upstream || r.upstream
			}
			if file != tt.wantFile || upstream != tt.wantUpstream {
				t.Errorf("extractRefs(%q): file %q, upstream %v; want %q, %v", tt.markdown, file, upstream, tt.wantFile, tt.wantUpstream)
			}
		})
	}
}

// TestDocAnchors shows the anchors links may use, as GitHub makes them.
func TestDocAnchors(t *testing.T) {
	doc := "# Title\n## 11. A plugin of your own: StatefulSetOrdinal — scenario `ch11-statefulset-ordinal`\n" +
		"## Run\n## Run\n```\n# not a heading\n```\n"
	got := anchors(doc)
	for _, want := range []string{"title", "11-a-plugin-of-your-own-statefulsetordinal--scenario-ch11-statefulset-ordinal", "run", "run-1"} {
		if !got[want] {
			t.Errorf("anchors lack %q: %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("a comment in a code block became an anchor: %v", got)
	}
}
