// Tests for InterPodAffinity's args: defaults, validation, strict decoding,
// and what New requires of the handle.
package interpodaffinity

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestDecodeArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    *runtime.RawExtension
		want    *configv1.InterPodAffinityArgs
		wantErr string
	}{
		{
			name: "no args: hardPodAffinityWeight 1, existing pods' preferred terms honoured",
			want: &configv1.InterPodAffinityArgs{HardPodAffinityWeight: ptr.To[int32](1)},
		},
		{
			name: "empty args",
			args: rawArgs(`{}`),
			want: &configv1.InterPodAffinityArgs{HardPodAffinityWeight: ptr.To[int32](1)},
		},
		{
			name: "full args with apiVersion and kind",
			args: rawArgs(`{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "InterPodAffinityArgs",
				"hardPodAffinityWeight": 5, "ignorePreferredTermsOfExistingPods": true}`),
			want: &configv1.InterPodAffinityArgs{
				TypeMeta: metav1.TypeMeta{APIVersion: "kubescheduler.config.k8s.io/v1",
					Kind: "InterPodAffinityArgs"},
				HardPodAffinityWeight:              ptr.To[int32](5),
				IgnorePreferredTermsOfExistingPods: true,
			},
		},
		{
			name: "weight 0 is valid",
			args: rawArgs(`{"hardPodAffinityWeight": 0}`),
			want: &configv1.InterPodAffinityArgs{HardPodAffinityWeight: ptr.To[int32](0)},
		},
		{
			name: "weight 100 is valid",
			args: rawArgs(`{"hardPodAffinityWeight": 100}`),
			want: &configv1.InterPodAffinityArgs{HardPodAffinityWeight: ptr.To[int32](100)},
		},
		{
			name:    "weight above 100",
			args:    rawArgs(`{"hardPodAffinityWeight": 101}`),
			wantErr: "hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]",
		},
		{
			name:    "negative weight",
			args:    rawArgs(`{"hardPodAffinityWeight": -1}`),
			wantErr: "hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]",
		},
		{
			name:    "unknown field",
			args:    rawArgs(`{"hardPodAffinityWieght": 2}`),
			wantErr: `decoding InterPodAffinityArgs: unknown field "hardPodAffinityWieght"`,
		},
		{
			name:    "wrong type",
			args:    rawArgs(`{"ignorePreferredTermsOfExistingPods": "yes"}`),
			wantErr: "decoding InterPodAffinityArgs:",
		},
		{
			name: "typed args",
			args: &runtime.RawExtension{Object: &configv1.InterPodAffinityArgs{IgnorePreferredTermsOfExistingPods: true}},
			want: &configv1.InterPodAffinityArgs{HardPodAffinityWeight: ptr.To[int32](1),
				IgnorePreferredTermsOfExistingPods: true},
		},
		{
			name:    "typed args of another plugin",
			args:    &runtime.RawExtension{Object: &configv1.NodeResourcesFitArgs{}},
			wantErr: "want args of type *v1.InterPodAffinityArgs, got *v1.NodeResourcesFitArgs",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeArgs(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("DecodeArgs error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeArgs: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecodeArgs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewDoesNotChangeTypedArgs(t *testing.T) {
	args := &configv1.InterPodAffinityArgs{}
	if _, err := DecodeArgs(&runtime.RawExtension{Object: args}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&configv1.InterPodAffinityArgs{}, args); diff != "" {
		t.Errorf("DecodeArgs changed the configuration's args (-want +got):\n%s", diff)
	}
}

func TestNew(t *testing.T) {
	env := newTestEnv(t, rawArgs(`{"hardPodAffinityWeight": 7, "ignorePreferredTermsOfExistingPods": true}`), nil, nil)
	if env.pl.hardPodAffinityWeight != 7 || !env.pl.ignorePreferredTermsOfExistingPods {
		t.Errorf("plugin = {hardPodAffinityWeight: %d, ignorePreferredTermsOfExistingPods: %v}, want {7, true}",
			env.pl.hardPodAffinityWeight, env.pl.ignorePreferredTermsOfExistingPods)
	}
	if env.pl.Name() != "InterPodAffinity" {
		t.Errorf("Name() = %q", env.pl.Name())
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    *runtime.RawExtension
		opts    []framework.Option
		wantErr string
	}{
		{
			name:    "no snapshot",
			wantErr: "SnapshotSharedLister is nil",
		},
		{
			name:    "no informer factory",
			opts:    []framework.Option{framework.WithSnapshotSharedLister(cache.NewEmptySnapshot())},
			wantErr: "SharedInformerFactory is nil",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := plugintesting.NewPluginFramework[*InterPodAffinity](context.Background(), Name, New,
				&configv1.Plugins{Filter: plugintesting.Enable(Name)}, nil, tt.opts...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("NewFramework error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if _, err := New(context.Background(), nil, nil); err == nil {
		t.Error("New with a nil handle succeeded")
	}
}
