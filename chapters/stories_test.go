package chapters

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scenario/scenariofile"
	"github.com/minisched/minisched/testenv"
)

// testEnv is one apiserver shared by every story's test.
var testEnv *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithEnvironment(m.Run, &testEnv, nil))
}

// TestScenarios runs every Go story as a test: each chapter's story is also
// its check.
func TestScenarios(t *testing.T) {
	for _, s := range All() {
		t.Run(s.Name, func(t *testing.T) {
			mustPass(t, s)
		})
	}
}

// TestFileScenarios runs every file in scenarios/ as a test, as
// TestScenarios runs the Go ones, and checks that none tells a Go story
// again.
func TestFileScenarios(t *testing.T) {
	files := repoFiles(t, FilesDir, "*.yaml")
	goNames := map[string]bool{}
	for _, s := range All() {
		goNames[s.Name] = true
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := scenariofile.ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if goNames[s.Name] {
				t.Errorf("%s is named %s, as a Go scenario is", f, s.Name)
			}
			mustPass(t, s)
		})
	}
}

// TestStories checks that Stories has every story once: the Go ones and
// the files of scenarios/, in chapter order.
func TestStories(t *testing.T) {
	stories := shippedStories(t)
	files := repoFiles(t, FilesDir, "*.yaml")
	if len(stories) != len(All())+len(files) {
		t.Errorf("%d stories, want the %d Go ones and the %d files", len(stories), len(All()), len(files))
	}
	for i := 1; i < len(stories); i++ {
		if stories[i-1].Chapter > stories[i].Chapter {
			t.Errorf("%s (chapter %d) comes after %s (chapter %d)", stories[i].Name, stories[i].Chapter,
				stories[i-1].Name, stories[i-1].Chapter)
		}
	}
	if _, err := Stories("/nonexistent"); err != nil {
		t.Errorf("Stories of a directory that does not exist: %v, want the Go stories", err)
	}
}

func TestSelect(t *testing.T) {
	tests := []struct {
		name    string
		names   []string
		want    int
		wantErr bool
	}{
		{name: "one by name", names: []string{"ch6-assume"}, want: 1},
		{name: "unknown lists the known ones", names: []string{"nope"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := scenario.Select(All(), tt.names)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Select(%v) error = %v, wantErr %v", tt.names, err, tt.wantErr)
			}
			if err != nil && !bytes.Contains([]byte(err.Error()), []byte("ch1-random")) {
				t.Errorf("error %q does not list the known scenarios", err)
			}
			if len(got) != tt.want {
				t.Errorf("got %d scenarios, want %d", len(got), tt.want)
			}
		})
	}
}

// mustPass runs s with the runner, logs its report, and fails the test
// unless it passed.
func mustPass(t *testing.T, s scenario.Scenario) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	r := &scenario.Runner{RestConfig: testEnv.Config, Out: &out, Environment: testEnv}
	err := r.Run(ctx, s)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "--- PASS "+s.Name) {
		t.Errorf("the report has no PASS line for %s", s.Name)
	}
}

// repoFiles returns the files of the repository that match the glob
// given as path elements from its root, and fails the test if there are
// none.
func repoFiles(t *testing.T, elem ...string) []string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(append([]string{root}, elem...)...))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no file matches %s", filepath.Join(elem...))
	}
	return files
}

// shippedStories returns Stories of the repository's scenarios/.
func shippedStories(t *testing.T) []scenario.Scenario {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	stories, err := Stories(filepath.Join(root, FilesDir))
	if err != nil {
		t.Fatal(err)
	}
	return stories
}
