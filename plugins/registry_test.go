// Tests that the in-tree registry builds a working profile and that each
// plugin is registered under its own name.
package plugins

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// handleOptions gives a framework what every in-tree plugin needs from its
// Handle: a snapshot and an informer factory.
func handleOptions(t *testing.T) []framework.Option {
	return append(plugintesting.InformerOptions(t), framework.WithSnapshotSharedLister(cache.NewEmptySnapshot()))
}

// requiredArgs are the args of the plugins that cannot be built without
// them; every other plugin is built with none.
var requiredArgs = map[string]string{
	"StatefulSetOrdinal": `{"podLabels":["app"],"nodeOrdinalLabel":"ordinal"}`,
	"Dynamic":            `{"policyConfigPath":"dynamic/testdata/crane-policy.yaml"}`,
}

func argsFor(name string) *runtime.RawExtension {
	if raw, ok := requiredArgs[name]; ok {
		return &runtime.RawExtension{Raw: []byte(raw)}
	}
	return nil
}

func requiredPluginConfig() []configv1.PluginConfig {
	var pc []configv1.PluginConfig
	for name := range requiredArgs {
		pc = append(pc, configv1.PluginConfig{Name: name, Args: *argsFor(name)})
	}
	return pc
}

func TestRegistryNames(t *testing.T) {
	handle, err := plugintesting.NewFramework(context.Background(), NewInTreeRegistry(),
		&configv1.Plugins{MultiPoint: plugintesting.Enable("PrioritySort", "DefaultBinder")}, nil, handleOptions(t)...)
	if err != nil {
		t.Fatal(err)
	}
	for name, factory := range NewInTreeRegistry() {
		pl, err := factory(context.Background(), argsFor(name), handle)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if pl.Name() != name {
			t.Errorf("plugin registered as %q calls itself %q", name, pl.Name())
		}
	}
}

// TestEveryPluginInOneProfile enables the whole registry at once: each
// plugin must take part somewhere.
func TestEveryPluginInOneProfile(t *testing.T) {
	names := NewInTreeRegistry().Names()
	schedFramework, err := plugintesting.NewFramework(context.Background(), NewInTreeRegistry(),
		&configv1.Plugins{MultiPoint: plugintesting.Enable(names...)}, requiredPluginConfig(), handleOptions(t)...)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, pls := range schedFramework.ListPlugins() {
		for _, p := range pls {
			seen[p] = true
		}
	}
	for _, n := range names {
		if !seen[n] {
			t.Errorf("plugin %s takes part at no extension point", n)
		}
	}
}

// allPlugins enables every in-tree plugin through multiPoint, as a
// profile would.
func allPlugins() *configv1.Plugins {
	return &configv1.Plugins{MultiPoint: plugintesting.Enable(
		"PrioritySort", "NodeUnschedulable", "NodeName", "NodeResourcesFit", "NodeNumber", "DefaultBinder",
	)}
}

func TestInTreeProfile(t *testing.T) {
	schedFramework, err := plugintesting.NewFramework(context.Background(), NewInTreeRegistry(), allPlugins(), nil,
		handleOptions(t)...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"QueueSort": {"PrioritySort"},
		"PreFilter": {"NodeResourcesFit"},
		"Filter":    {"NodeUnschedulable", "NodeName", "NodeResourcesFit"},
		"PreScore":  {"NodeResourcesFit", "NodeNumber"},
		"Score":     {"NodeResourcesFit", "NodeNumber"},
		"Permit":    {"NodeNumber"},
		"Bind":      {"DefaultBinder"},
		// As kube-scheduler's Fit, a PlacementScore plugin too; only a
		// pod-group cycle with TopologyAwareWorkloadScheduling asks it.
		"PlacementScore": {"NodeResourcesFit"},
	}
	if diff := cmp.Diff(want, schedFramework.ListPlugins()); diff != "" {
		t.Errorf("plugins per extension point (-want +got):\n%s", diff)
	}
	var gotHints []string
	for name := range schedFramework.QueueingHints() {
		gotHints = append(gotHints, name)
	}
	wantHints := []string{"NodeName", "NodeNumber", "NodeResourcesFit", "NodeUnschedulable"}
	if diff := cmp.Diff(wantHints, gotHints, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("plugins with queueing hints (-want +got):\n%s", diff)
	}
}

func TestInTreeProfileArgs(t *testing.T) {
	raw := func(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }
	tests := []struct {
		name    string
		config  []configv1.PluginConfig
		wantErr string
	}{
		{
			name: "valid args",
			config: []configv1.PluginConfig{
				{Name: "NodeResourcesFit", Args: raw(`{"ignoredResources": ["example.com/gpu"]}`)},
				{Name: "NodeNumber", Args: raw(`{"reverse": true}`)},
			},
		},
		{
			name:   "args of plugins without args are ignored",
			config: []configv1.PluginConfig{{Name: "NodeName", Args: raw(`{"anything": 1}`)}},
		},
		{
			name:    "bad NodeResourcesFit args",
			config:  []configv1.PluginConfig{{Name: "NodeResourcesFit", Args: raw(`{"scoringStrategy": {"type": "Bogus"}}`)}},
			wantErr: `plugin "NodeResourcesFit": scoringStrategy.type: Unsupported value: "Bogus"`,
		},
		{
			name:    "unknown NodeNumber field",
			config:  []configv1.PluginConfig{{Name: "NodeNumber", Args: raw(`{"reverse": true, "extra": 1}`)}},
			wantErr: `plugin "NodeNumber": decoding NodeNumberArgs: unknown field "extra"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := plugintesting.NewFramework(context.Background(), NewInTreeRegistry(), allPlugins(), tt.config,
				handleOptions(t)...)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
