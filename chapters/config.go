// The scheduler as it stands at each chapter of the tutorial: the plugins
// chapter by chapter, and the configuration that enables exactly those, for
// `minisched start --chapter N` and the stories of chapters 1-8.

package chapters

import (
	"fmt"
	"slices"
	"strings"

	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
)

// LastChapter is the number of the tutorial's last chapter.
const LastChapter = 19

// DefaultProfileChapter is the first chapter whose scheduler is the default
// profile (chapter 9, the default plugins), and every later one's.
const DefaultProfileChapter = 9

// ChapterPlugin is one plugin of a chapter's profile.
type ChapterPlugin struct {
	// Name is the plugin's name in the registry and in configurations.
	Name string
	// Points are the extension points it runs at ("PreScore", "Score"),
	// when only some of those it implements; nil means all of them, as
	// multiPoint enables it.
	Points []string
}

// String is the plugin's name, followed by its extension points when they
// are not all of them: "NodeNumber (PreScore, Score)".
func (p ChapterPlugin) String() string {
	if len(p.Points) == 0 {
		return p.Name
	}
	return fmt.Sprintf("%s (%s)", p.Name, strings.Join(p.Points, ", "))
}

// chapterSteps is what each chapter adds to the profile of the chapter
// before it (ChapterPlugins has the table). A plugin added again replaces
// its earlier entry: chapter 5 turns NodeNumber's Score and PreScore into
// NodeNumber at every point, Permit included.
var chapterSteps = map[int][]ChapterPlugin{
	1: {{Name: "PrioritySort"}, {Name: "DefaultBinder"}},
	2: {{Name: "NodeUnschedulable"}},
	3: {{Name: "NodeNumber", Points: []string{"PreScore", "Score"}}},
	5: {{Name: "NodeNumber"}},
	6: {{Name: "NodeResourcesFit"}},
}

// ChaptersAddingPlugins lists, in order, the chapters after the first
// whose scheduler adds a plugin to the chapter before's (chapterSteps), for
// the help text that names them.
func ChaptersAddingPlugins() []int {
	var out []int
	for c := 2; c < DefaultProfileChapter; c++ {
		if len(chapterSteps[c]) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// ChapterPlugins returns the plugins of the scheduler at chapter n, in the
// order the default profile lists them (NodeNumber, which is not a default
// plugin, just before DefaultBinder):
//
//	chapter  adds                                   why
//	1        PrioritySort, DefaultBinder            a queue order and a binder: no Filter, no Score, so any node
//	                                                will do (the next one, round robin)
//	2        NodeUnschedulable                      the first Filter: cordoned nodes are ruled out
//	3        NodeNumber's Score (and its PreScore)  the first Score; its Score reads the digit its PreScore
//	                                                wrote, so it cannot run without it
//	4        —                                      the chapter opens CycleState: what NodeNumber's PreScore
//	                                                hands to Score
//	5        NodeNumber's Permit                    NodeNumber at every point: Permit holds pods, binding
//	                                                cycles run in parallel
//	6        NodeResourcesFit                       requests and allocatable: what the cache and assume count
//	7, 8     —                                      the queue, backoff, events and queueing hints need no new
//	                                                plugin (NodeResourcesFit's and NodeUnschedulable's events)
//	9 on     the default profile                    scheduler.DefaultConfig: every default plugin, preemption
//	                                                (chapter 10) included
//
// It returns an error listing the chapters for an n that is not one.
func ChapterPlugins(n int) ([]ChapterPlugin, error) {
	if n < 1 || n > LastChapter {
		return nil, unknownChapter(n)
	}
	defaults := scheduler.DefaultPlugins().MultiPoint.Enabled
	if n >= DefaultProfileChapter {
		out := make([]ChapterPlugin, len(defaults))
		for i, p := range defaults {
			out[i] = ChapterPlugin{Name: p.Name}
		}
		return out, nil
	}
	var out []ChapterPlugin
	for c := 1; c <= n; c++ {
		for _, add := range chapterSteps[c] {
			if i := slices.IndexFunc(out, func(p ChapterPlugin) bool { return p.Name == add.Name }); i >= 0 {
				out[i] = add
			} else {
				out = append(out, add)
			}
		}
	}
	// The default profile's order; a plugin that is not in it goes just
	// before the binder.
	order := func(name string) int {
		i := slices.IndexFunc(defaults, func(p configv1.Plugin) bool { return p.Name == name })
		if i < 0 {
			i = slices.IndexFunc(defaults, func(p configv1.Plugin) bool { return p.Name == "DefaultBinder" })
			return 2*i - 1
		}
		return 2 * i
	}
	slices.SortStableFunc(out, func(a, b ChapterPlugin) int { return order(a.Name) - order(b.Name) })
	return out, nil
}

// ChapterConfig returns the configuration of the scheduler at chapter n:
// before chapter 9, one profile, default-scheduler, with exactly
// ChapterPlugins(n) (multiPoint with "*" disabled, and a plugin limited to
// some extension points enabled at those only); from chapter 9 on,
// scheduler.DefaultConfig. It is defaulted and validated, leader election
// on as everywhere (the scenario runner turns it off). An n that is not a
// chapter is an error listing the chapters.
func ChapterConfig(n int) (*configv1.KubeSchedulerConfiguration, error) {
	plugins, err := ChapterPlugins(n)
	if err != nil {
		return nil, err
	}
	if n >= DefaultProfileChapter {
		return scheduler.DefaultConfig(), nil
	}
	p := scenario.OnlyPlugins()
	sets := map[string]*configv1.PluginSet{}
	for _, s := range framework.PluginSets(p) {
		sets[s.Field] = s.Set
	}
	for _, pl := range plugins {
		if len(pl.Points) == 0 {
			p.MultiPoint.Enabled = append(p.MultiPoint.Enabled, configv1.Plugin{Name: pl.Name})
			continue
		}
		for _, point := range pl.Points {
			set := sets[strings.ToLower(point[:1])+point[1:]]
			if set == nil {
				return nil, fmt.Errorf("chapter %d: %s: no extension point %q", n, pl.Name, point)
			}
			set.Enabled = append(set.Enabled, configv1.Plugin{Name: pl.Name})
		}
	}
	cfg, err := scenario.ProfileConfig(p)
	if err != nil {
		return nil, fmt.Errorf("chapter %d's configuration: %w", n, err)
	}
	return cfg, nil
}

// DescribeChapter is one line naming the scheduler's plugins at chapter n:
// "PrioritySort, NodeUnschedulable, DefaultBinder", or, from chapter 9 on,
// "the default profile: SchedulingGates, PrioritySort, ...".
func DescribeChapter(n int) (string, error) {
	plugins, err := ChapterPlugins(n)
	if err != nil {
		return "", err
	}
	names := make([]string, len(plugins))
	for i, p := range plugins {
		names[i] = p.String()
	}
	line := strings.Join(names, ", ")
	if n >= DefaultProfileChapter {
		line = "the default profile: " + line
	}
	return line, nil
}

// chapterConfig is ChapterConfig(n) as a Scenario's Config.
func chapterConfig(n int) func() (*configv1.KubeSchedulerConfiguration, error) {
	return func() (*configv1.KubeSchedulerConfiguration, error) { return ChapterConfig(n) }
}

// unknownChapter is the error for a chapter number that is not one.
func unknownChapter(n int) error {
	valid := make([]string, LastChapter)
	for i := range valid {
		valid[i] = fmt.Sprint(i + 1)
	}
	return fmt.Errorf("unknown chapter %d; the chapters are %s", n, strings.Join(valid, ", "))
}
