package plugintesting

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// filterPlugin is a plugin under test that keeps the args it was built with.
type filterPlugin struct{ args string }

func (*filterPlugin) Name() string { return "Fake" }

func (*filterPlugin) Filter(context.Context, *framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status {
	return nil
}

// otherPlugin is a plugin of another type, for the wrong-type case.
type otherPlugin struct{}

func (otherPlugin) Name() string { return "Fake" }

func (otherPlugin) Filter(context.Context, *framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status {
	return nil
}

func TestNewPluginFramework(t *testing.T) {
	// made is the last plugin newFilter built: the one returned must be it.
	var made *filterPlugin
	newFilter := func(_ context.Context, raw *runtime.RawExtension, _ framework.Handle) (framework.Plugin, error) {
		made = &filterPlugin{}
		if raw != nil {
			made.args = string(raw.Raw)
		}
		return made, nil
	}
	wantPlugins := map[string][]string{
		"QueueSort": {"PrioritySort"},
		"Filter":    {"Fake"},
		"Bind":      {"DefaultBinder"},
	}
	tests := []struct {
		name        string
		factory     framework.PluginFactory
		points      *configv1.Plugins
		args        *runtime.RawExtension
		wantPlugins map[string][]string
		wantArgs    string
		wantErr     string
	}{
		{
			name:        "at Filter, with args",
			factory:     newFilter,
			points:      &configv1.Plugins{Filter: Enable("Fake")},
			args:        &runtime.RawExtension{Raw: []byte(`{"a":1}`)},
			wantPlugins: wantPlugins,
			wantArgs:    `{"a":1}`,
		},
		{
			name:        "in multiPoint, without args",
			factory:     newFilter,
			points:      &configv1.Plugins{MultiPoint: Enable("Fake")},
			wantPlugins: wantPlugins,
		},
		{
			name:    "points' QueueSort and Bind are replaced",
			factory: newFilter,
			points: &configv1.Plugins{
				QueueSort: Enable("Fake"), Filter: Enable("Fake"), Bind: Enable("Fake"),
			},
			wantPlugins: wantPlugins,
		},
		{
			name: "factory error",
			factory: func(context.Context, *runtime.RawExtension, framework.Handle) (framework.Plugin, error) {
				return nil, errors.New("boom")
			},
			points:  &configv1.Plugins{Filter: Enable("Fake")},
			wantErr: "boom",
		},
		{
			name:    "enabled nowhere",
			factory: newFilter,
			wantErr: `plugin "Fake" was not built`,
		},
		{
			name: "not a P",
			factory: func(context.Context, *runtime.RawExtension, framework.Handle) (framework.Plugin, error) {
				return otherPlugin{}, nil
			},
			points:  &configv1.Plugins{Filter: Enable("Fake")},
			wantErr: `plugin "Fake" is a plugintesting.otherPlugin, want a *plugintesting.filterPlugin`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			made = nil
			fw, pl, err := NewPluginFramework[*filterPlugin](t.Context(), "Fake", tt.factory, tt.points, tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantPlugins, fw.ListPlugins()); diff != "" {
				t.Errorf("plugins (-want +got):\n%s", diff)
			}
			if pl == nil || pl != made {
				t.Fatalf("plugin = %p, want the one the factory built, %p", pl, made)
			}
			if diff := cmp.Diff(tt.wantArgs, pl.args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}
