// TestChapters and TestChapterCommands keep the tutorial honest: every
// chapter has its parts, every exercise an answer a test checks, and every
// command a chapter shows is one that a test, CI or `make start` runs.

package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/minisched/minisched/chapters"
	"github.com/minisched/minisched/scenario/scenariofile"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/web"
)

// chapterFile is docs/NN-slug.md.
var chapterFile = regexp.MustCompile(`^(\d\d)-[a-z0-9-]+\.md$`)

// chapter is one chapter's file, read.
type chapter struct {
	number int
	path   string // docs/NN-slug.md
	text   string
}

func readChapters(t *testing.T) []chapter {
	t.Helper()
	entries, err := os.ReadDir("docs")
	if err != nil {
		t.Fatal(err)
	}
	var out []chapter
	for _, e := range entries {
		m := chapterFile.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		path := filepath.ToSlash(filepath.Join("docs", e.Name()))
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, chapter{number: n, path: path, text: string(text)})
	}
	return out
}

// section returns the text under the level-2 heading that starts with
// title, up to the next level-2 heading.
func section(text, title string) (string, bool) {
	i := strings.Index(text, "\n## "+title)
	if i < 0 {
		return "", false
	}
	rest := text[i+1:]
	if j := strings.Index(rest[1:], "\n## "); j >= 0 {
		rest = rest[:j+1]
	}
	return rest, true
}

// answerFile is the start of an answer checked by a scenario file, which
// the answer then shows in a yaml block.
var answerFile = regexp.MustCompile("Checked by\\s+`(docs/exercises/[a-z0-9-]+\\.yaml)`:\n\n```yaml\n((?s:.*?))```\n")

// answerTest is an answer checked by a Go test: "Checked by `TestX` in
// `path_test.go`".
var answerTest = regexp.MustCompile("Checked by\\s+`(Test[A-Za-z0-9_]+)`\\s+in\\s+`([^`]+_test\\.go)`")

// TestChapters checks the tutorial's shape: chapters 1 to
// chapters.LastChapter (the count the help texts print), one file each,
// numbered without gaps and listed in docs/README.md in order; each with the
// idea, the code, a "Run it" whose first command is `make start CHAPTER=N`,
// what to look for, and an exercise whose answer is checked either by a
// scenario file of docs/exercises/ (shown verbatim in the answer, and run by
// TestExercises in scenario/scenariofile/) or by a named Go test declared in
// the named file. Every file of docs/exercises/ is some chapter's answer.
func TestChapters(t *testing.T) {
	docs := readChapters(t)
	if len(docs) != chapters.LastChapter {
		t.Fatalf("docs/ has %d chapter files, want %d", len(docs), chapters.LastChapter)
	}
	index, err := os.ReadFile("docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	answered := map[string]bool{}
	lastRow := -1
	for i, c := range docs {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			if c.number != i+1 {
				t.Fatalf("%s: chapter %d, want %d (chapters are numbered 1 to %d without gaps)",
					c.path, c.number, i+1, chapters.LastChapter)
			}
			first, _, _ := strings.Cut(c.text, "\n")
			title, ok := strings.CutPrefix(first, fmt.Sprintf("# %d. ", c.number))
			if !ok {
				t.Errorf("%s: the first line is %q, want \"# %d. Title\"", c.path, first, c.number)
			}
			row := fmt.Sprintf("| %d | [%s](%s) |", c.number, title, filepath.Base(c.path))
			if at := strings.Index(string(index), row); at < 0 {
				t.Errorf("docs/README.md does not list the chapter as %q", row)
			} else if at < lastRow {
				t.Errorf("docs/README.md lists chapter %d before chapter %d", c.number, c.number-1)
			} else {
				lastRow = at
			}
			for _, want := range []string{"The idea", "Run it", "What to look for", "Exercise"} {
				if _, ok := section(c.text, want); !ok {
					t.Errorf("%s has no section \"## %s\"", c.path, want)
				}
			}
			if !strings.Contains(c.text, "\n## The code") && !strings.Contains(c.text, "\n## The idea and the code") {
				t.Errorf("%s has no section \"## The code\"", c.path)
			}
			if run, ok := section(c.text, "Run it"); ok {
				cmds := shownCommands(run)
				if want := fmt.Sprintf("make start CHAPTER=%d", c.number); len(cmds) == 0 || cmds[0].cmd != want {
					t.Errorf("%s: \"Run it\" must start with the command %q", c.path, want)
				}
			}
			ex, _ := section(c.text, "Exercise")
			answer, ok := strings.CutPrefix(ex[strings.Index(ex, "<details>")+1:], "details><summary>Answer</summary>")
			if !strings.Contains(ex, "<details>") || !ok {
				t.Fatalf("%s: the exercise has no <details><summary>Answer</summary>", c.path)
			}
			files := answerFile.FindAllStringSubmatch(answer, -1)
			tests := answerTest.FindAllStringSubmatch(answer, -1)
			if len(files)+len(tests) == 0 {
				t.Errorf("%s: the answer names no check: want \"Checked by `docs/exercises/….yaml`:\" and its "+
					"yaml block, or \"Checked by `TestX` in `path_test.go`\"", c.path)
			}
			for _, m := range files {
				answered[m[1]] = true
				got, err := os.ReadFile(m[1])
				if err != nil {
					t.Errorf("%s: %v", c.path, err)
					continue
				}
				if string(got) != m[2] {
					t.Errorf("%s: the answer's yaml differs from %s", c.path, m[1])
				}
			}
			for _, m := range tests {
				if !declaresTest(m[2], m[1]) {
					t.Errorf("%s: the answer is checked by %s in %s, which does not declare it", c.path, m[1], m[2])
				}
			}
		})
	}
	files, err := filepath.Glob("docs/exercises/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !answered[filepath.ToSlash(f)] {
			t.Errorf("%s is no chapter's answer", f)
		}
	}
}

// declaresTest reports whether the Go file declares func name(t *testing.T).
func declaresTest(file, name string) bool {
	src, err := os.ReadFile(file)
	return err == nil && strings.Contains(string(src), "\nfunc "+name+"(t *testing.T)")
}

// shown is a command a doc shows, and the line it is on.
type shown struct {
	cmd  string
	line int
}

// commandStart is how a command a reader would type begins.
var commandStart = regexp.MustCompile(`^(make|go run|bin/minisched|minisched|kubectl|docker|kind|curl) `)

// shownCommands returns the commands in markdown: every line of a sh,
// bash or console block (a "$ " prompt is dropped; in a console block only
// prompted lines are commands), every "$ " line of an unlabelled block, and
// every backquoted span outside blocks that starts like a command. A
// trailing "# comment" is dropped, and a line ending in \ is joined to the
// next.
func shownCommands(markdown string) []shown {
	var out []shown
	lang, inBlock := "", false
	pending, pendingLine := "", 0
	sc := bufio.NewScanner(strings.NewReader(markdown))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			inBlock, lang = !inBlock, strings.TrimPrefix(trimmed, "```")
			continue
		}
		if !inBlock {
			for _, span := range backquoted.FindAllStringSubmatch(line, -1) {
				if commandStart.MatchString(span[1]) {
					out = append(out, shown{cmd: span[1], line: n})
				}
			}
			continue
		}
		cmd, prompted := strings.CutPrefix(trimmed, "$ ")
		switch {
		case lang == "sh" || lang == "bash":
		case (lang == "" || lang == "console") && prompted:
		default:
			if pending == "" {
				continue
			}
		}
		if i := strings.Index(cmd, "  #"); i >= 0 {
			cmd = cmd[:i]
		}
		if strings.HasPrefix(cmd, "#") || cmd == "" {
			continue
		}
		if pending == "" {
			pendingLine = n
		}
		if c, more := strings.CutSuffix(strings.TrimSpace(cmd), "\\"); more {
			pending += strings.TrimSpace(c) + " "
			continue
		}
		out = append(out, shown{cmd: pending + strings.TrimSpace(cmd), line: pendingLine})
		pending = ""
	}
	return out
}

// backquoted finds `spans` on one line.
var backquoted = regexp.MustCompile("`([^`]+)`")

// subcommandTests names, for each subcommand other than start, the test
// that runs it as a reader would, and the file it is in.
var subcommandTests = map[string][2]string{
	"explain": {"TestExplainCommand", "app/explain_cmd_test.go"},
	"run":     {"TestConformance", "conformance/harness_test.go"},
}

// TestChapterCommands checks that every command a chapter shows is run by
// something that fails when the command stops working:
//
//   - `make start` with CHAPTER=N and ARGS: the chapter has scenarios, and
//     every --scenario names one, Go or a file of scenarios/ (TestScenarios
//     and TestFileScenarios run them all, and so does `make start`), and
//     every --scenario-file is a file of scenarios/ or docs/exercises/
//     (TestFileScenarios and TestExercises run them); WEB= (start --web)
//     is HOST:PORT (app's TestStartWeb runs start --web, web's TestLiveView
//     the page);
//     `minisched start`, `bin/minisched start` and `go run . start` alike.
//   - any other `make TARGET`: .ci/run runs TARGET, or a target it runs
//     depends on TARGET.
//   - another subcommand: subcommandTests names the test that runs it.
//
// Anything else (kubectl, docker …) is not allowed in a chapter: the
// README and deploy/README.md are the places for commands no test can run.
func TestChapterCommands(t *testing.T) {
	ciTargets, err := targetsCIRuns()
	if err != nil {
		t.Fatal(err)
	}
	stories, err := chapters.Stories(chapters.FilesDir)
	if err != nil {
		t.Fatal(err)
	}
	byChapter := map[int]bool{}
	byName := map[string]bool{}
	for _, s := range stories {
		byChapter[s.Chapter] = true
		byName[s.Name] = true
	}
	c := commandChecker{ciTargets: ciTargets, chapters: byChapter, scenarios: byName}
	total := 0
	for _, ch := range readChapters(t) {
		for _, s := range shownCommands(ch.text) {
			total++
			if problem := c.check(s.cmd); problem != "" {
				t.Errorf("%s:%d: `%s`: %s", ch.path, s.line, s.cmd, problem)
			}
		}
	}
	if total < chapters.LastChapter {
		t.Errorf("found %d commands in the chapters; every chapter shows at least one", total)
	}
}

// commandChecker knows what runs what.
type commandChecker struct {
	ciTargets map[string]bool
	chapters  map[int]bool
	scenarios map[string]bool
}

// check returns why cmd is not known to be run, or "".
func (c commandChecker) check(cmd string) string {
	words, err := shellWords(cmd)
	if err != nil {
		return err.Error()
	}
	switch {
	case words[0] == "make":
		return c.checkMake(words[1:])
	case words[0] == "go" && len(words) > 2 && words[1] == "run" && words[2] == ".":
		return c.checkSubcommand(words[3:])
	case words[0] == "bin/minisched" || words[0] == "minisched":
		return c.checkSubcommand(words[1:])
	}
	return "a chapter may show only make targets and minisched subcommands that a test runs"
}

func (c commandChecker) checkMake(args []string) string {
	var target string
	vars := map[string]string{}
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok {
			vars[k] = v
		} else if target == "" {
			target = a
		} else {
			return "more than one make target"
		}
	}
	if target != "start" {
		if !c.ciTargets[target] {
			return fmt.Sprintf("CI (.ci/run) does not run make %s, nor a target that depends on it", target)
		}
		return ""
	}
	var startArgs []string
	if n, ok := vars["CHAPTER"]; ok {
		startArgs = append(startArgs, "--chapter", n)
	}
	if w, ok := vars["WEB"]; ok {
		startArgs = append(startArgs, "--web", w)
	}
	if st, ok := vars["STEP"]; ok {
		if st != "1" {
			return fmt.Sprintf("make start takes STEP=1, not STEP=%s", st)
		}
		startArgs = append(startArgs, "--step")
	}
	if a, ok := vars["ARGS"]; ok {
		words, err := shellWords(a)
		if err != nil {
			return err.Error()
		}
		startArgs = append(startArgs, words...)
	}
	return c.checkStart(startArgs)
}

func (c commandChecker) checkSubcommand(args []string) string {
	if len(args) == 0 {
		return "no subcommand"
	}
	if args[0] == "start" {
		return c.checkStart(args[1:])
	}
	test, ok := subcommandTests[args[0]]
	if !ok {
		return fmt.Sprintf("no test is known to run the subcommand %q (subcommandTests)", args[0])
	}
	if !declaresTest(test[1], test[0]) {
		return fmt.Sprintf("%s, said to run it, is not declared in %s", test[0], test[1])
	}
	return ""
}

// checkStart checks start's flags, as make start passes them.
func (c commandChecker) checkStart(args []string) string {
	for i := 0; i < len(args); i++ {
		flag, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if flag == "step" {
			if !slices.Contains(args, "--web") {
				return "--step needs --web (WEB=)"
			}
			continue
		}
		if !slices.Contains([]string{"chapter", "scenario", "scenario-file", "config", "web"}, flag) {
			return fmt.Sprintf("start has no flag --%s that this test knows", flag)
		}
		if !hasValue {
			if i+1 == len(args) {
				return fmt.Sprintf("--%s has no value", flag)
			}
			i++
			value = args[i]
		}
		switch flag {
		case "chapter":
			n, err := strconv.Atoi(value)
			if err != nil || !c.chapters[n] {
				return fmt.Sprintf("no scenario belongs to chapter %q", value)
			}
		case "scenario":
			if !c.scenarios[value] {
				return fmt.Sprintf("no scenario is named %q", value)
			}
		case "scenario-file":
			dir := filepath.ToSlash(filepath.Dir(value))
			if dir != "scenarios" && dir != "docs/exercises" {
				return fmt.Sprintf("%s is not in scenarios/ or docs/exercises/, whose files tests run", value)
			}
			if _, err := scenariofile.ParseFile(value); err != nil {
				return err.Error()
			}
		case "config":
			if _, err := scheduler.LoadConfigFile(value); err != nil {
				return err.Error()
			}
		case "web":
			if _, err := web.ListenAddress(value); err != nil {
				return err.Error()
			}
		}
	}
	return ""
}

// shellWords splits a command line into words as sh would, for the simple
// quoting docs use: single and double quotes, no escapes inside them.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unbalanced %c", quote)
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	return words, nil
}

// makeRule is a Makefile rule's target and prerequisites.
var makeRule = regexp.MustCompile(`^([a-z][a-z0-9-]*):(?:\s+(.*))?$`)

// targetsCIRuns returns the make targets .ci/run runs, with every target
// they depend on, directly or not.
func targetsCIRuns() (map[string]bool, error) {
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		return nil, err
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(string(mk), "\n") {
		if m := makeRule.FindStringSubmatch(line); m != nil {
			deps[m[1]] = strings.Fields(m[2])
		}
	}
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		return nil, err
	}
	runs := map[string]bool{}
	var visit func(string)
	visit = func(target string) {
		if _, ok := deps[target]; !ok || runs[target] {
			return
		}
		runs[target] = true
		for _, d := range deps[target] {
			visit(d)
		}
	}
	for _, line := range strings.Split(string(ci), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "make" {
			visit(f[1])
		}
	}
	if len(runs) == 0 {
		return nil, fs.ErrNotExist
	}
	return runs, nil
}

// TestShownCommands checks what shownCommands finds, on examples.
func TestShownCommands(t *testing.T) {
	tests := []struct {
		name, markdown string
		want           []string
	}{
		{name: "sh block", markdown: "```sh\nmake start CHAPTER=3   # the chapter\n# a comment\n\nmake bench SMOKE=1\n```\n",
			want: []string{"make start CHAPTER=3", "make bench SMOKE=1"}},
		{name: "continued line", markdown: "```sh\nbin/minisched explain web \\\n    -n shop\n```\n",
			want: []string{"bin/minisched explain web -n shop"}},
		{name: "prompted lines of an unlabelled block, not the output",
			markdown: "```\n$ go run . start --chapter 2\nStarting kube-apiserver\n```\n",
			want:     []string{"go run . start --chapter 2"}},
		{name: "yaml block", markdown: "```yaml\nmake: not a command\n```\n"},
		{name: "inline", markdown: "Run `make start ARGS=\"--scenario ch1-random\"` or read `make`-less `scheduleOne`.\n",
			want: []string{`make start ARGS="--scenario ch1-random"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range shownCommands(tt.markdown) {
				got = append(got, s.cmd)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("shownCommands = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCommandChecker checks the rules of TestChapterCommands on examples.
func TestCommandChecker(t *testing.T) {
	c := commandChecker{ciTargets: map[string]bool{"test": true, "bench": true},
		chapters: map[int]bool{1: true}, scenarios: map[string]bool{"ch1-random": true}}
	tests := []struct {
		cmd     string
		problem string // a substring; "" means accepted
	}{
		{cmd: "make start CHAPTER=1"},
		{cmd: "make start CHAPTER=16", problem: "no scenario belongs to chapter"},
		{cmd: "make start CHAPTER=1 WEB=127.0.0.1:8080"},
		{cmd: "make start CHAPTER=1 WEB=8080", problem: "is not HOST:PORT"},
		{cmd: `make start ARGS="--scenario ch1-random"`},
		{cmd: `make start ARGS="--scenario ch1-randm"`, problem: `no scenario is named "ch1-randm"`},
		{cmd: `make start ARGS="--scenario-file docs/exercises/ch01-cordoned.yaml"`},
		{cmd: `make start ARGS="--scenario-file /tmp/mine.yaml"`, problem: "not in scenarios/ or docs/exercises/"},
		{cmd: "go run . start --scenario=ch1-random"},
		{cmd: "bin/minisched start --colour", problem: "no flag --colour"},
		{cmd: "make bench SMOKE=1"},
		{cmd: "make image", problem: "does not run make image"},
		{cmd: "bin/minisched annotate --policy p.yaml", problem: "no test is known to run"},
		{cmd: "kubectl apply -f deploy/", problem: "only make targets and minisched subcommands"},
		{cmd: `make start ARGS="--scenario ch1-random`, problem: "unbalanced"},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			got := c.check(tt.cmd)
			if tt.problem == "" && got != "" || tt.problem != "" && !strings.Contains(got, tt.problem) {
				t.Errorf("check(%q) = %q, want %q", tt.cmd, got, tt.problem)
			}
		})
	}
}
