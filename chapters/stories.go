// Every chapter's stories: the Go ones compiled here, and the scenario
// files of scenarios/ read beside them.

package chapters

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scenario/scenariofile"
)

// FilesDir is where the stories written as YAML are, from the repository's
// root.
const FilesDir = "scenarios"

// All returns every story written in Go, by chapter.
func All() []scenario.Scenario {
	var all []scenario.Scenario
	for _, chapter := range []func() []scenario.Scenario{
		chapter1, chapter4, chapter5, chapter6, chapter7, chapter8, chapter9, chapter10,
		chapter11, chapter12, chapter13, chapter14, chapter15, chapter16, chapter17, chapter18, chapter19,
	} {
		all = append(all, chapter()...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Chapter < all[j].Chapter })
	return all
}

// Stories returns every story, each once: the Go ones (All) and those of
// the scenario files in dir (FilesDir, from the repository's root; none if
// there is no such directory), by chapter, a chapter's Go stories first. A
// file that cannot be read, or that is named like another story, is an
// error.
func Stories(dir string) ([]scenario.Scenario, error) {
	all := All()
	seen := map[string]string{}
	for _, s := range all {
		seen[s.Name] = "a Go story"
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	for _, file := range files {
		s, err := scenariofile.ParseFile(file)
		if err != nil {
			return nil, err
		}
		if other, ok := seen[s.Name]; ok {
			return nil, fmt.Errorf("%s: the story %s is told twice: here and in %s", file, s.Name, other)
		}
		seen[s.Name] = file
		all = append(all, s)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Chapter < all[j].Chapter })
	return all, nil
}
