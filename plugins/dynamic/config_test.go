// Tests that crane-scheduler's own scheduler configuration builds a profile
// with Dynamic in Filter and Score, once its version-specific lines are
// brought to what minisched reads.
package dynamic_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
	"github.com/minisched/minisched/plugins/dynamic"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/scheduler"
)

func TestCraneSchedulerConfig(t *testing.T) {
	data, err := os.ReadFile("testdata/crane-scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// crane's file is v1beta2 with leader election on, neither of which
	// minisched reads; its profiles section stays as it is, but for the
	// path of the policy.
	doc := strings.NewReplacer(
		"kubescheduler.config.k8s.io/v1beta2", "kubescheduler.config.k8s.io/v1",
		"leaderElect: true", "leaderElect: false",
		"/etc/kubernetes/policy.yaml", "testdata/crane-policy.yaml",
	).Replace(string(data))
	cfg, err := scheduler.DecodeConfig([]byte(doc))
	if err != nil {
		t.Fatalf("DecodeConfig: %v", err)
	}
	schedFramework, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(), &cfg.Profiles[0],
		append(plugintesting.InformerOptions(t), framework.WithSnapshotSharedLister(cache.NewEmptySnapshot()))...)
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	got := schedFramework.ListPlugins()
	for _, point := range []string{"Filter", "Score"} {
		list := got[point]
		if len(list) == 0 || list[len(list)-1] != dynamic.Name {
			t.Errorf("%s plugins = %v, want Dynamic last", point, list)
		}
	}
	if diff := cmp.Diff(int64(3), schedFramework.ScoreWeight(dynamic.Name)); diff != "" {
		t.Errorf("Dynamic's weight (-want +got):\n%s", diff)
	}
}
