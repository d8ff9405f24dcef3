package chapters

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/scenario/scenariofile"
	"github.com/minisched/minisched/scheduler"
)

// effectivePlugins builds chapter n's framework and returns its plugins
// per extension point, after multiPoint expansion.
func effectivePlugins(t *testing.T, n int) map[string][]string {
	t.Helper()
	cfg, err := ChapterConfig(n)
	if err != nil {
		t.Fatalf("ChapterConfig(%d): %v", n, err)
	}
	if err := scheduler.Validate(cfg); err != nil {
		t.Fatalf("ChapterConfig(%d) does not validate: %v", n, err)
	}
	return profilePlugins(t, cfg)
}

// profilePlugins builds the framework of the configuration's one profile,
// default-scheduler, and returns its plugins per extension point.
func profilePlugins(t *testing.T, cfg *configv1.KubeSchedulerConfiguration) map[string][]string {
	t.Helper()
	if len(cfg.Profiles) != 1 || *cfg.Profiles[0].SchedulerName != scheduler.DefaultSchedulerName {
		t.Fatalf("want one profile named %s, got %d", scheduler.DefaultSchedulerName, len(cfg.Profiles))
	}
	schedFramework, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(), &cfg.Profiles[0],
		handleOptions(t)...)
	if err != nil {
		t.Fatalf("the profile: %v", err)
	}
	return schedFramework.ListPlugins()
}

// TestShippedFilesUseChapterConfig checks that the YAML files in scenarios/
// of chapters 1-8 run the scheduler of their chapter, as the Go scenarios
// do, whatever way they write it.
func TestShippedFilesUseChapterConfig(t *testing.T) {
	files := repoFiles(t, FilesDir, "*.yaml")
	for _, f := range files {
		s, err := scenariofile.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if s.Chapter < 1 || s.Chapter >= DefaultProfileChapter {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			if s.Config == nil {
				t.Fatalf("%s brings no configuration: it would run the default profile, not chapter %d's",
					f, s.Chapter)
			}
			cfg, err := s.Config()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(effectivePlugins(t, s.Chapter), profilePlugins(t, cfg)); diff != "" {
				t.Errorf("%s's plugins are not chapter %d's (-chapter +file):\n%s", f, s.Chapter, diff)
			}
		})
	}
}

// TestChapterConfig checks, chapter by chapter, the plugins the scheduler
// runs at each extension point, and the one-line description the
// --chapter run prints.
func TestChapterConfig(t *testing.T) {
	ch1 := map[string][]string{"QueueSort": {"PrioritySort"}, "Bind": {"DefaultBinder"}}
	ch2 := map[string][]string{"QueueSort": {"PrioritySort"}, "Filter": {"NodeUnschedulable"},
		"Bind": {"DefaultBinder"}}
	ch3 := map[string][]string{"QueueSort": {"PrioritySort"}, "Filter": {"NodeUnschedulable"},
		"PreScore": {"NodeNumber"}, "Score": {"NodeNumber"}, "Bind": {"DefaultBinder"}}
	ch5 := map[string][]string{"QueueSort": {"PrioritySort"}, "Filter": {"NodeUnschedulable"},
		"PreScore": {"NodeNumber"}, "Score": {"NodeNumber"}, "Permit": {"NodeNumber"}, "Bind": {"DefaultBinder"}}
	ch6 := map[string][]string{"QueueSort": {"PrioritySort"}, "PreFilter": {"NodeResourcesFit"},
		"Filter": {"NodeUnschedulable", "NodeResourcesFit"}, "PreScore": {"NodeResourcesFit", "NodeNumber"},
		"Score": {"NodeResourcesFit", "NodeNumber"}, "Permit": {"NodeNumber"}, "Bind": {"DefaultBinder"},
		// Fit scores a pod group's placements too, as kube-scheduler's;
		// only a pod-group cycle under TopologyAwareWorkloadScheduling asks.
		"PlacementScore": {"NodeResourcesFit"}}
	const ch6Line = "PrioritySort, NodeUnschedulable, NodeResourcesFit, NodeNumber, DefaultBinder"
	tests := []struct {
		chapter int
		// want is the plugins per extension point; nil for the default
		// profile's.
		want     map[string][]string
		wantLine string
	}{
		{chapter: 1, want: ch1, wantLine: "PrioritySort, DefaultBinder"},
		{chapter: 2, want: ch2, wantLine: "PrioritySort, NodeUnschedulable, DefaultBinder"},
		{chapter: 3, want: ch3, wantLine: "PrioritySort, NodeUnschedulable, NodeNumber (PreScore, Score), DefaultBinder"},
		{chapter: 4, want: ch3, wantLine: "PrioritySort, NodeUnschedulable, NodeNumber (PreScore, Score), DefaultBinder"},
		{chapter: 5, want: ch5, wantLine: "PrioritySort, NodeUnschedulable, NodeNumber, DefaultBinder"},
		{chapter: 6, want: ch6, wantLine: ch6Line},
		{chapter: 7, want: ch6, wantLine: ch6Line},
		{chapter: 8, want: ch6, wantLine: ch6Line},
		{chapter: 9, wantLine: "the default profile: SchedulingGates, PrioritySort, NodeName"},
		{chapter: 10, wantLine: "the default profile: "},
		{chapter: 11, wantLine: "the default profile: "},
		{chapter: 12, wantLine: "the default profile: "},
		{chapter: 13, wantLine: "the default profile: "},
		{chapter: 14, wantLine: "the default profile: "},
		{chapter: LastChapter, wantLine: "the default profile: "},
	}
	defaults := scheduler.DefaultConfig()
	defaultFwk, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(),
		&defaults.Profiles[0], handleOptions(t)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("chapter %d", tt.chapter), func(t *testing.T) {
			got := effectivePlugins(t, tt.chapter)
			want := tt.want
			if want == nil {
				want = defaultFwk.ListPlugins()
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("chapter %d's plugins per extension point (-want +got):\n%s", tt.chapter, diff)
			}
			line, err := DescribeChapter(tt.chapter)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(line, tt.wantLine) {
				t.Errorf("DescribeChapter(%d) = %q, want it to start with %q", tt.chapter, line, tt.wantLine)
			}
		})
	}
}

// TestChapterConfigUnknown checks that a number that is not a chapter is an
// error listing the chapters.
func TestChapterConfigUnknown(t *testing.T) {
	for _, n := range []int{-1, 0, LastChapter + 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			_, err := ChapterConfig(n)
			if err == nil || !strings.Contains(err.Error(), "the chapters are 1, 2, 3") ||
				!strings.Contains(err.Error(), ", 15") {
				t.Errorf("ChapterConfig(%d) error = %v, want one listing the chapters 1 to %d", n, err, LastChapter)
			}
		})
	}
}

// TestChapterScenariosUseChapterConfig checks that the Go stories of
// chapters 1-8 run with their chapter's configuration (the files' are
// TestShippedFilesUseChapterConfig's), and that every chapter has a story,
// in Go or in scenarios/.
func TestChapterScenariosUseChapterConfig(t *testing.T) {
	has := map[int]bool{}
	for _, s := range shippedStories(t) {
		has[s.Chapter] = true
	}
	for _, s := range All() {
		if s.Chapter >= DefaultProfileChapter || s.Config == nil {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			got, err := s.Config()
			if err != nil {
				t.Fatal(err)
			}
			want, err := ChapterConfig(s.Chapter)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s's configuration is not chapter %d's (-want +got):\n%s", s.Name, s.Chapter, diff)
			}
		})
	}
	for n := 1; n <= LastChapter; n++ {
		if !has[n] {
			t.Errorf("chapter %d has no scenario", n)
		}
	}
}

// handleOptions are what a framework needs to be built: an empty snapshot,
// an informer factory over a fake client, and the shared DRA state
// (DynamicResources needs it; its slice tracker is stopped with the test).
func handleOptions(t *testing.T) []framework.Option {
	return append(plugintesting.InformerOptions(t), framework.WithSnapshotSharedLister(cache.NewEmptySnapshot()))
}
