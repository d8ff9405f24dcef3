// Tests for PodTopologySpread's args: kube-scheduler's defaults, its
// validation errors word for word, and strict decoding.
package podtopologyspread

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"
)

func TestDecodeArgs(t *testing.T) {
	zoneHard := v1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: zoneKey, WhenUnsatisfiable: v1.DoNotSchedule}
	tests := []struct {
		name    string
		raw     *runtime.RawExtension
		want    *configv1.PodTopologySpreadArgs
		wantErr string
	}{
		{
			name: "no args: System defaulting",
			raw:  nil,
			want: &configv1.PodTopologySpreadArgs{DefaultingType: configv1.SystemDefaulting},
		},
		{
			name: "empty object: System defaulting",
			raw:  rawArgs(`{}`),
			want: &configv1.PodTopologySpreadArgs{DefaultingType: configv1.SystemDefaulting},
		},
		{
			name: "List with constraints",
			raw: rawArgs(`{"defaultingType":"List","defaultConstraints":[{"maxSkew":1,` +
				`"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]}`),
			want: &configv1.PodTopologySpreadArgs{DefaultingType: configv1.ListDefaulting,
				DefaultConstraints: []v1.TopologySpreadConstraint{zoneHard}},
		},
		{
			name: "List without constraints",
			raw:  rawArgs(`{"defaultingType":"List"}`),
			want: &configv1.PodTopologySpreadArgs{DefaultingType: configv1.ListDefaulting},
		},
		{
			name: "typed object",
			raw:  &runtime.RawExtension{Object: &configv1.PodTopologySpreadArgs{DefaultingType: configv1.ListDefaulting}},
			want: &configv1.PodTopologySpreadArgs{DefaultingType: configv1.ListDefaulting},
		},
		{
			// The type defaults to System, which forbids explicit constraints.
			name: "constraints without defaultingType",
			raw: rawArgs(`{"defaultConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone",` +
				`"whenUnsatisfiable":"DoNotSchedule"}]}`),
			wantErr: `defaultingType: Invalid value: "System": when .defaultConstraints are not empty`,
		},
		{
			name:    "unknown defaultingType",
			raw:     rawArgs(`{"defaultingType":"Magic"}`),
			wantErr: `defaultingType: Unsupported value: "Magic": supported values: "System", "List"`,
		},
		{
			name: "maxSkew not positive",
			raw: rawArgs(`{"defaultingType":"List","defaultConstraints":[{"maxSkew":0,"topologyKey":"zone",` +
				`"whenUnsatisfiable":"DoNotSchedule"}]}`),
			wantErr: `defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)`,
		},
		{
			name: "empty topologyKey",
			raw: rawArgs(`{"defaultingType":"List","defaultConstraints":[{"maxSkew":1,` +
				`"whenUnsatisfiable":"DoNotSchedule"}]}`),
			wantErr: `defaultConstraints[0].topologyKey: Required value: can not be empty`,
		},
		{
			name: "invalid topologyKey",
			raw: rawArgs(`{"defaultingType":"List","defaultConstraints":[{"maxSkew":1,"topologyKey":"not a label",` +
				`"whenUnsatisfiable":"DoNotSchedule"}]}`),
			wantErr: `defaultConstraints[0].topologyKey: Invalid value: "not a label": name part must consist of alphanumeric ` +
				`characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or ` +
				`'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		},
		{
			name:    "empty whenUnsatisfiable",
			raw:     rawArgs(`{"defaultingType":"List","defaultConstraints":[{"maxSkew":1,"topologyKey":"zone"}]}`),
			wantErr: `defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty`,
		},
		{
			name: "unknown whenUnsatisfiable",
			raw: rawArgs(`{"defaultingType":"List","defaultConstraints":[{"maxSkew":1,"topologyKey":"zone",` +
				`"whenUnsatisfiable":"Maybe"}]}`),
			wantErr: `defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Maybe": supported values: "DoNotSchedule", ` +
				`"ScheduleAnyway"`,
		},
		{
			name: "labelSelector forbidden",
			raw: rawArgs(`{"defaultingType":"List","defaultConstraints":[{"maxSkew":1,"topologyKey":"zone",` +
				`"whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"web"}}}]}`),
			wantErr: `defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, as they deduced ` +
				`for each pod`,
		},
		{
			name: "repeated topologyKey and whenUnsatisfiable",
			raw: rawArgs(`{"defaultingType":"List","defaultConstraints":[` +
				`{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule"},` +
				`{"maxSkew":2,"topologyKey":"zone","whenUnsatisfiable":"ScheduleAnyway"},` +
				`{"maxSkew":3,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule"}]}`),
			wantErr: `defaultConstraints[2]: Duplicate value: "{zone, DoNotSchedule}"`,
		},
		{
			name: "several errors together",
			raw: rawArgs(`{"defaultingType":"List","defaultConstraints":[{"maxSkew":-1,"topologyKey":"",` +
				`"whenUnsatisfiable":"DoNotSchedule"}]}`),
			wantErr: `[defaultConstraints[0].maxSkew: Invalid value: -1: not in valid range (0, inf), ` +
				`defaultConstraints[0].topologyKey: Required value: can not be empty]`,
		},
		{
			name:    "unknown field",
			raw:     rawArgs(`{"defaultingType":"List","spread":true}`),
			wantErr: `decoding PodTopologySpreadArgs: unknown field "spread"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeArgs(tt.raw)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("DecodeArgs = %+v, want error %q", got, tt.wantErr)
				}
				if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		args string
		// wantDefaults are the default constraints the plugin applies.
		wantDefaults    []v1.TopologySpreadConstraint
		wantSystem      bool
		wantListers     bool
		wantErrContains string
	}{
		{
			name:         "System: the system defaults and listers",
			wantDefaults: systemDefaultConstraints,
			wantSystem:   true,
			wantListers:  true,
		},
		{
			name: "List with constraints: listers",
			args: `{"defaultingType":"List","defaultConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone",` +
				`"whenUnsatisfiable":"DoNotSchedule"}]}`,
			wantDefaults: []v1.TopologySpreadConstraint{
				{MaxSkew: 1, TopologyKey: zoneKey, WhenUnsatisfiable: v1.DoNotSchedule},
			},
			wantListers: true,
		},
		{
			name: "List without constraints: no listers",
			args: `{"defaultingType":"List"}`,
		},
		{
			name:            "invalid args",
			args:            `{"defaultingType":"Magic"}`,
			wantErrContains: "defaultingType",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			h, _ := newHandle(t, ctx, nil, nil)
			p, err := New(ctx, rawArgs(tt.args), h)
			if tt.wantErrContains != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrContains) {
					t.Fatalf("New error = %v, want one naming %q", err, tt.wantErrContains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pl := p.(*PodTopologySpread)
			if diff := cmp.Diff(tt.wantDefaults, pl.defaultConstraints); diff != "" {
				t.Errorf("default constraints (-want +got):\n%s", diff)
			}
			if pl.systemDefaulted != tt.wantSystem {
				t.Errorf("systemDefaulted = %v, want %v", pl.systemDefaulted, tt.wantSystem)
			}
			if gotListers := pl.services != nil && pl.replicationCtrls != nil && pl.replicaSets != nil &&
				pl.statefulSets != nil; gotListers != tt.wantListers {
				t.Errorf("listers set = %v, want %v", gotListers, tt.wantListers)
			}
		})
	}
}

func TestNewWithoutHandle(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	if _, err := New(ctx, nil, nil); err == nil || err.Error() != "SnapshotSharedlister is nil" {
		t.Errorf("New without a handle: error = %v, want SnapshotSharedlister is nil", err)
	}
}
