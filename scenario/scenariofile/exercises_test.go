package scenariofile

import (
	"path/filepath"
	"testing"
)

// TestExercises runs the answers to the tutorial's exercises, the scenario
// files in docs/exercises/, so that an answer the scheduler no longer gives
// fails here. (TestChapters in the module's root checks that each chapter's
// answer shows its file verbatim.)
func TestExercises(t *testing.T) {
	files := repoFiles(t, "docs", "exercises", "*.yaml")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			mustPass(t, s)
		})
	}
}
