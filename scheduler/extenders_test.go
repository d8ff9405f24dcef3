package scheduler

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
)

func TestBuildExtenders(t *testing.T) {
	cfgs := []configv1.Extender{
		{URLPrefix: "http://ignorable-1", Ignorable: true},
		{URLPrefix: "http://required-1", ManagedResources: []configv1.ExtenderManagedResource{
			{Name: "example.com/gpu", IgnoredByScheduler: true}, {Name: "example.com/fpga"}}},
		{URLPrefix: "http://ignorable-2", Ignorable: true,
			ManagedResources: []configv1.ExtenderManagedResource{{Name: "example.com/nic", IgnoredByScheduler: true}}},
		{URLPrefix: "http://required-2"},
	}
	exts, ignored, err := buildExtenders(cfgs)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range exts {
		order = append(order, e.Name())
	}
	if diff := cmp.Diff([]string{"http://required-1", "http://required-2", "http://ignorable-1", "http://ignorable-2"}, order); diff != "" {
		t.Errorf("order, ignorable last (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"example.com/gpu", "example.com/nic"}, ignored); diff != "" {
		t.Errorf("ignored resources (-want +got):\n%s", diff)
	}
}

func TestWithIgnoredResources(t *testing.T) {
	ignored := []string{"example.com/gpu"}
	tests := []struct {
		name        string
		pluginArgs  string // NodeResourcesFit's args as JSON; empty: no pluginConfig entry
		wantIgnored []string
		wantType    configv1.ScoringStrategyType
		wantErr     string
	}{
		{name: "no args: defaults plus the ignored resources", wantIgnored: ignored, wantType: configv1.LeastAllocated},
		{name: "the extenders' list replaces the args' own, the rest is kept",
			pluginArgs:  `{"ignoredResources":["example.com/other"],"scoringStrategy":{"type":"MostAllocated"}}`,
			wantIgnored: ignored, wantType: configv1.MostAllocated},
		{name: "bad args name their pluginConfig entry", pluginArgs: `{"bogus":1}`, wantErr: "pluginConfig[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			profile := &configv1.KubeSchedulerProfile{SchedulerName: ptr.To("p")}
			if tt.pluginArgs != "" {
				profile.PluginConfig = []configv1.PluginConfig{{Name: "NodeResourcesFit",
					Args: runtime.RawExtension{Raw: []byte(tt.pluginArgs)}}}
			}
			before := profile.DeepCopy()
			got, err := withIgnoredResources(profile, ignored)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, profile); diff != "" {
				t.Errorf("the configuration's profile changed (-before +after):\n%s", diff)
			}
			if len(got.PluginConfig) != 1 {
				t.Fatalf("pluginConfig = %v, want one NodeResourcesFit entry", got.PluginConfig)
			}
			args, ok := got.PluginConfig[0].Args.Object.(*configv1.NodeResourcesFitArgs)
			if !ok {
				t.Fatalf("args = %T", got.PluginConfig[0].Args.Object)
			}
			if diff := cmp.Diff(tt.wantIgnored, args.IgnoredResources); diff != "" {
				t.Errorf("ignored resources (-want +got):\n%s", diff)
			}
			if args.ScoringStrategy.Type != tt.wantType {
				t.Errorf("scoring strategy %s, want %s", args.ScoringStrategy.Type, tt.wantType)
			}
		})
	}
	t.Run("no ignored resources: the same profile", func(t *testing.T) {
		p := &configv1.KubeSchedulerProfile{}
		if got, _ := withIgnoredResources(p, nil); got != p {
			t.Errorf("got a copy")
		}
	})
}
