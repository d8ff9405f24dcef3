// Tests that the plugins of the default profile that filter or score pods
// sign them (framework.SignPlugin), so that a default profile can batch
// pods, and that the custom plugins do not.
package plugins_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/scheduler"
)

// signedPoints are the extension points whose plugins sign pods.
var signedPoints = []string{"PreFilter", "Filter", "PreScore", "Score"}

// filtersOrScores reports whether pl runs at one of signedPoints.
func filtersOrScores(pl framework.Plugin) bool {
	switch pl.(type) {
	case framework.PreFilterPlugin, framework.FilterPlugin, framework.PreScorePlugin, framework.ScorePlugin:
		return true
	}
	return false
}

func TestSignPlugins(t *testing.T) {
	ctx := context.Background()
	opts := append(plugintesting.InformerOptions(t), framework.WithSnapshotSharedLister(cache.NewEmptySnapshot()))
	schedFramework, err := plugintesting.NewFramework(ctx, plugins.NewInTreeRegistry(), scheduler.DefaultPlugins(),
		nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defaults := sets.New[string]()
	for _, point := range signedPoints {
		defaults.Insert(schedFramework.ListPlugins()[point]...)
	}
	wantDefaults := []string{
		"DynamicResources", "ImageLocality", "InterPodAffinity", "NodeAffinity", "NodeDeclaredFeatures", "NodeName",
		"NodePorts", "NodeResourcesBalancedAllocation", "NodeResourcesFit", "NodeUnschedulable", "NodeVolumeLimits",
		"PodTopologySpread", "TaintToleration", "VolumeBinding", "VolumeRestrictions", "VolumeZone",
	}
	if diff := cmp.Diff(wantDefaults, sets.List(defaults)); diff != "" {
		t.Fatalf("default plugins at %v (-want +got):\n%s", signedPoints, diff)
	}

	type signCase struct {
		name     string
		args     string
		wantSign bool
	}
	tests := []signCase{
		// The custom plugins: a profile with one of them signs nothing,
		// as kube-scheduler treats out-of-tree plugins.
		{name: "NodeNumber"},
		{name: "StatefulSetOrdinal", args: `{"podLabels":["app"],"nodeOrdinalLabel":"ordinal"}`},
		{name: "Dynamic", args: `{"policyConfigPath":"dynamic/testdata/crane-policy.yaml"}`},
	}
	for _, name := range sets.List(defaults) {
		tests = append(tests, signCase{name: name, wantSign: true})
	}
	registry := plugins.NewInTreeRegistry()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var args *runtime.RawExtension
			if tt.args != "" {
				args = &runtime.RawExtension{Raw: []byte(tt.args)}
			}
			pl, err := registry[tt.name](ctx, args, schedFramework)
			if err != nil {
				t.Fatal(err)
			}
			if !filtersOrScores(pl) {
				t.Fatalf("%s neither filters nor scores", tt.name)
			}
			if _, signs := pl.(framework.SignPlugin); signs != tt.wantSign {
				t.Errorf("%s implements SignPlugin: %v, want %v", tt.name, signs, tt.wantSign)
			}
		})
	}
}
