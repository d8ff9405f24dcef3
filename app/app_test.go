// Tests for the command line's own logic: flags, options, usage errors and
// help texts. The subcommands themselves run in the scenario and example
// tests.

package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/minisched/minisched/chapters"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/testenv"
)

func TestStringList(t *testing.T) {
	tests := []struct {
		name string
		sets []string
		want string
	}{
		{name: "repeated", sets: []string{"a", "b"}, want: "a,b"},
		{name: "comma separated", sets: []string{"a,b", " c "}, want: "a,b,c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s stringList
			for _, v := range tt.sets {
				if err := s.Set(v); err != nil {
					t.Fatal(err)
				}
			}
			if got := s.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

type namedPlugin string

func (p namedPlugin) Name() string { return string(p) }

func factoryFor(name string) framework.PluginFactory {
	return func(context.Context, *runtime.RawExtension, framework.Handle) (framework.Plugin, error) {
		return namedPlugin(name), nil
	}
}

func TestRun(t *testing.T) {
	tests := []struct {
		name    string
		opts    []Option
		args    []string
		wantErr string
		usage   bool
	}{
		{name: "no subcommand", args: nil, usage: true},
		{name: "unknown subcommand", args: []string{"schedule"}, usage: true},
		{name: "help", args: []string{"help"}},
		{name: "plugin added twice", opts: []Option{WithPlugin("Mine", factoryFor("Mine")), WithPlugin("Mine", factoryFor("Mine"))},
			args: []string{"help"}, wantErr: `WithPlugin("Mine")`},
		{name: "plugin named like an in-tree one", opts: []Option{WithPlugin("NodeName", factoryFor("NodeName"))},
			args: []string{"help"}, wantErr: `WithPlugin("NodeName"): an in-tree plugin has that name`},
		{name: "apiserver without its flag", args: []string{"apiserver"}, wantErr: "--kubeconfig-out is required"},
		{name: "run -h", args: []string{"run", "-h"}, wantErr: flag.ErrHelp.Error()},
		{name: "a kubeconfig that does not exist", args: []string{"run", "--kubeconfig", "/nonexistent/kubeconfig",
			"--metrics-bind-address", "0"}, wantErr: `loading kubeconfig "/nonexistent/kubeconfig"`},
		{name: "a config file that does not exist", args: []string{"run", "--config", "/nonexistent/config.yaml"},
			wantErr: "/nonexistent/config.yaml"},
		{name: "a live view address without a port", args: []string{"run", "--web-address", "localhost"},
			wantErr: `--web-address: "localhost" is not HOST:PORT`},
		{name: "a feature gate minisched does not implement", args: []string{"run", "--feature-gates",
			"GenericWorkload=true,CompositePodGroup=true"},
			wantErr: `--feature-gates "GenericWorkload=true,CompositePodGroup=true": cannot set feature gate CompositePodGroup to true`},
		{name: "start's live view address without a port", args: []string{"start", "--web", "8080"},
			wantErr: `--web: "8080" is not HOST:PORT`},
		{name: "start's step mode without the live view", args: []string{"start", "--step"},
			wantErr: "--step needs --web HOST:PORT"},
		{name: "run's step mode without the live view", args: []string{"run", "--step", "--step-on-a-real-cluster"},
			wantErr: "--step needs --web-address HOST:PORT"},
		{name: "run's step mode on a real cluster, not meant", args: []string{"run", "--step", "--web-address",
			"127.0.0.1:0"}, wantErr: "add --step-on-a-real-cluster to say you mean it"},
		{name: "run's step mode meant, but not asked for", args: []string{"run", "--step-on-a-real-cluster"},
			wantErr: "--step-on-a-real-cluster is only for --step"},
		{name: "run's step mode, meant", args: []string{"run", "--step", "--step-on-a-real-cluster", "--web-address",
			"127.0.0.1:0", "--kubeconfig", "/nonexistent/kubeconfig", "--metrics-bind-address", "0"},
			wantErr: `loading kubeconfig "/nonexistent/kubeconfig"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := NewCommand(tt.opts...).Run(context.Background(), tt.args)
			switch {
			case tt.usage:
				if !errors.Is(err, errUsage) {
					t.Errorf("error %v, want a usage error", err)
				}
			case tt.wantErr == "":
				if err != nil {
					t.Errorf("unexpected error: %v", err)
				}
			case err == nil || !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestIntList(t *testing.T) {
	tests := []struct {
		name    string
		sets    []string
		want    string
		wantErr bool
	}{
		{name: "repeated", sets: []string{"3", "10"}, want: "3,10"},
		{name: "comma separated", sets: []string{"1,2", " 5 "}, want: "1,2,5"},
		{name: "not a number", sets: []string{"three"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l intList
			var err error
			for _, v := range tt.sets {
				if err = l.Set(v); err != nil {
					break
				}
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("Set error = %v, wantErr %t", err, tt.wantErr)
			}
			if !tt.wantErr && l.String() != tt.want {
				t.Errorf("got %q, want %q", l.String(), tt.want)
			}
		})
	}
}

// writeScenarioFile writes a YAML scenario file of the chapter into dir.
func writeScenarioFile(t *testing.T, dir, name string, chapter int) string {
	t.Helper()
	file := filepath.Join(dir, name+".yaml")
	doc := fmt.Sprintf("name: %s\nchapter: %d\nsteps:\n- create: [{kind: Node, metadata: {name: n}}]\n", name, chapter)
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestStartSelection checks which scenarios start's command line selects,
// in which order, and its errors, without starting an apiserver.
// unknownChapter is the number after the tutorial's last chapter (the
// test named a fixed number, and failed each time a chapter was added).
var unknownChapter = strconv.Itoa(chapters.LastChapter + 1)

func TestStartSelection(t *testing.T) {
	dir := t.TempDir()
	ch4File := writeScenarioFile(t, dir, "ch4-extra-yaml", 4)
	writeScenarioFile(t, dir, "ch9-extra-yaml", 9)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	stories, err := chapters.Stories(dir)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	var ch10 []string
	for _, s := range stories {
		all = append(all, s.Name)
		if s.Chapter == 10 {
			ch10 = append(ch10, s.Name)
		}
	}
	tests := []struct {
		name string
		args []string
		// dir is where start looks for files; empty means the test's.
		dir     string
		want    []string
		wantErr string
	}{
		{name: "no flag: every story, Go and the files, in chapter order", args: nil, want: all},
		{name: "one chapter, Go and YAML", args: []string{"--chapter", "4"},
			want: []string{"ch4-cyclestate", "ch4-extra-yaml"}},
		{name: "a chapter without files", args: []string{"--chapter", "14"}, want: []string{"ch14-leader-election"}},
		{name: "no scenario directory", args: []string{"--chapter", "4"}, dir: "/nonexistent",
			want: []string{"ch4-cyclestate"}},
		{name: "a chapter told in a shipped file only", args: []string{"--chapter", "2"},
			dir: filepath.Join(root, "scenarios"), want: []string{"ch2-nodeunschedulable"}},
		{name: "chapters repeated and comma separated, in chapter order", args: []string{"--chapter", "10",
			"--chapter", "1,4"}, want: append([]string{"ch1-random", "ch4-cyclestate", "ch4-extra-yaml"}, ch10...)},
		{name: "a chapter and a scenario add up, in chapter order",
			args: []string{"--scenario", "ch6-assume", "--chapter", "4"},
			want: []string{"ch4-cyclestate", "ch4-extra-yaml", "ch6-assume"}},
		{name: "a file's scenario by name", args: []string{"--scenario", "ch9-extra-yaml"},
			want: []string{"ch9-extra-yaml"}},
		{name: "a file named twice runs once", args: []string{"--chapter", "4", "--scenario-file", ch4File},
			want: []string{"ch4-cyclestate", "ch4-extra-yaml"}},
		{name: "a file alone", args: []string{"--scenario-file", ch4File}, want: []string{"ch4-extra-yaml"}},
		{name: "unknown chapter lists the chapters", args: []string{"--chapter", unknownChapter},
			wantErr: "--chapter: unknown chapter " + unknownChapter + "; the chapters are 1, 2, 3"},
		{name: "chapter 0", args: []string{"--chapter", "0"}, wantErr: "unknown chapter 0"},
		{name: "not a number", args: []string{"--chapter", "three"}, wantErr: `"three" is not a number`},
		{name: "unknown scenario", args: []string{"--scenario", "ch99-nope"}, wantErr: `unknown scenario "ch99-nope"`},
		{name: "an argument", args: []string{"ch1-random"}, wantErr: "start takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCommand()
			c.stderr = io.Discard
			dir := dir
			if tt.dir != "" {
				dir = tt.dir
			}
			f, err := c.parseStart(tt.args)
			var got []scenario.Scenario
			if err == nil {
				got, err = selectScenarios(f, dir)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range got {
				names = append(names, s.Name)
			}
			if diff := cmp.Diff(tt.want, names); diff != "" {
				t.Errorf("scenarios (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHelp runs each subcommand with -h (and the top-level help) and checks
// that the help has a usage line, examples and each of the subcommand's own
// flags.
func TestHelp(t *testing.T) {
	tests := []struct {
		args []string
		// help is printed to stdout (help asked for as a command) rather
		// than stderr (-h of a subcommand, the flag package's habit).
		stdout bool
		want   []string
	}{
		{args: []string{"start", "-h"},
			want: []string{"-chapter N", "-scenario NAME", "-scenario-file F.yaml", "-config FILE", "-v N"}},
		{args: []string{"start", "--help"}, want: []string{"-chapter N"}},
		{args: []string{"run", "-h"},
			want: []string{"-kubeconfig FILE", "-config FILE", "-metrics-bind-address HOST:PORT", "-v N"}},
		{args: []string{"apiserver", "-h"}, want: []string{"-kubeconfig-out FILE", "-v N"}},
		{args: []string{"annotate", "-h"}, want: []string{"-kubeconfig FILE", "-policy FILE", "-prometheus URL",
			"-binding-heap-size int", "-workers int", "-v N"}},
		{args: []string{"explain", "-h"}, want: []string{"-n NAMESPACE", "-namespace string", "-kubeconfig FILE",
			"-wide", "-v N", "explain web -n shop --kubeconfig ~/.kube/config"}},
		{args: []string{"help"}, stdout: true, want: []string{"start", "run", "apiserver", "annotate", "explain"}},
		{args: []string{"-h"}, stdout: true, want: []string{"start --chapter"}},
		{args: []string{"--help"}, stdout: true, want: []string{"start --chapter"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out := helpText(t, tt.args, tt.stdout)
			for _, want := range append([]string{"usage: ", "\nExamples:\n"}, tt.want...) {
				if !strings.Contains(out, want) {
					t.Errorf("help has no %q:\n%s", want, out)
				}
			}
		})
	}
}

// helpText runs the command with args and returns the help it printed, to
// stdout if toStdout (help asked for as a command), else to stderr (-h of a
// subcommand). It fails the test if the run returns another error than
// flag.ErrHelp, or if the other stream got anything.
func helpText(t *testing.T, args []string, toStdout bool) string {
	t.Helper()
	var stdout, stderr strings.Builder
	c := NewCommand()
	c.stdout, c.stderr = &stdout, &stderr
	err := c.Run(context.Background(), args)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("error %v, want nil or flag.ErrHelp", err)
	}
	out, other := stderr.String(), stdout.String()
	if toStdout {
		out, other = other, out
	}
	if other != "" {
		t.Errorf("help went to both stdout and stderr; the other one got %q", other)
	}
	return out
}

// chapterFile is a chapter of the tutorial in docs/: NN-slug.md.
var chapterFile = regexp.MustCompile(`^\d\d-[a-z0-9-]+\.md$`)

// TestHelpCountsChapters checks the counts the help texts print against the
// tutorial itself: the number of chapter files in docs/, counted here, not
// taken from package chapters, which the help texts print from. So a chapter
// added to docs/ fails this test until chapters.LastChapter counts it (and
// the root's TestChapters fails too). The chapter where the default profile
// starts is package chapters' to say.
func TestHelpCountsChapters(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(root, "docs"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if chapterFile.MatchString(e.Name()) {
			n++
		}
	}
	if n < 2 {
		t.Fatalf("docs/ has %d chapter files (NN-slug.md): is %s the repository?", n, root)
	}
	every := fmt.Sprintf("# every story, chapters 1 to %d\n", n)
	// The chapters whose scheduler differs from the chapter before's, as
	// chapters.ChapterPlugins builds them.
	var adding []string
	for c := 2; c < chapters.DefaultProfileChapter; c++ {
		before, err1 := chapters.ChapterPlugins(c - 1)
		now, err2 := chapters.ChapterPlugins(c)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(before, now) {
			adding = append(adding, strconv.Itoa(c))
		}
	}
	last := len(adding) - 1
	addingText := fmt.Sprintf("chapters %s and %s each add a plugin", strings.Join(adding[:last], ", "), adding[last])
	tests := []struct {
		args   []string
		stdout bool
		want   []string
	}{
		{args: []string{"help"}, stdout: true, want: []string{fmt.Sprintf("a tutorial in %d chapters:", n), every}},
		{args: []string{"start", "-h"}, want: []string{every,
			fmt.Sprintf("from chapter %d on it is the default profile", chapters.DefaultProfileChapter),
			fmt.Sprintf("chapters 1 to %d and the YAML files", chapters.DefaultProfileChapter-1),
			addingText}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out := helpText(t, tt.args, tt.stdout)
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("help has no %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestHelpExamplesWork checks what the examples name: every --scenario is a
// scenario, every --scenario-file a file of the repository, every chapter
// (--chapter N, CHAPTER=N) a chapter.
func TestHelpExamplesWork(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	stories, err := chapters.Stories(filepath.Join(root, chapters.FilesDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []help{startHelp, runHelp, apiserverHelp, annotateHelp} {
		for _, e := range h.examples {
			t.Run(e, func(t *testing.T) {
				var words []string
				for _, w := range strings.Fields(strings.ReplaceAll(strings.Split(e, "#")[0], `"`, " ")) {
					if n, ok := strings.CutPrefix(w, "CHAPTER="); ok {
						words = append(words, "--chapter", n) // make start's variable
						continue
					}
					words = append(words, w)
				}
				for i, w := range words {
					if i+1 >= len(words) {
						continue
					}
					arg := words[i+1]
					switch w {
					case "--scenario":
						if _, err := scenario.Select(stories, []string{arg}); err != nil {
							t.Error(err)
						}
					case "--scenario-file", "--policy":
						if strings.HasPrefix(arg, "/") {
							continue // a path in a pod
						}
						if _, err := os.Stat(filepath.Join(root, arg)); err != nil {
							t.Error(err)
						}
					case "--chapter":
						var l intList
						if err := l.Set(arg); err != nil {
							t.Fatal(err)
						}
						for _, n := range l {
							if _, err := chapters.ChapterConfig(n); err != nil {
								t.Error(err)
							}
						}
					}
				}
			})
		}
	}
}
