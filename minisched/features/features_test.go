package features

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  Gates
		// wantErr, if set, is a part of the error's text.
		wantErr string
	}{
		{name: "empty: the defaults", value: ""},
		{name: "GenericWorkload on", value: "GenericWorkload=true", want: Gates{GenericWorkload: true}},
		{name: "both on", value: "GenericWorkload=true,TopologyAwareWorkloadScheduling=true",
			want: Gates{GenericWorkload: true, TopologyAwareWorkloadScheduling: true}},
		{name: "spaces and an explicit default", value: " GenericWorkload = true , OpportunisticBatching=true",
			want: Gates{GenericWorkload: true}},
		{name: "AllBeta would turn on a beta gate minisched does not implement", value: "AllBeta=true",
			wantErr: "it sets DRAFractionalCapacityRange to true, which minisched does not implement"},
		{name: "AllBeta with what it cannot honour held back", value: "AllBeta=true,DRAFractionalCapacityRange=false," +
			"DRAWorkloadResourceClaims=false,SchedulerAsyncAPICalls=false", want: Gates{GenericWorkload: true}},
		{name: "a held gate at its default is honoured", value: "SchedulerAsyncAPICalls=false"},
		{name: "TopologyAwareWorkloadScheduling needs GenericWorkload",
			value:   "TopologyAwareWorkloadScheduling=true",
			wantErr: "TopologyAwareWorkloadScheduling is enabled, but depends on features that are disabled: [GenericWorkload]"},
		{name: "a held gate off its default is refused, named", value: "OpportunisticBatching=false",
			wantErr: "cannot set feature gate OpportunisticBatching to false, feature is locked to true"},
		{name: "a gate minisched does not implement is refused, named", value: "CompositePodGroup=true",
			wantErr: "cannot set feature gate CompositePodGroup to true, feature is locked to false"},
		{name: "AllAlpha would turn on what minisched does not implement",
			value: "GenericWorkload=true,AllAlpha=true", wantErr: "which minisched does not implement"},
		{name: "an unknown gate", value: "NoSuchGate=true", wantErr: "unrecognized feature gate: NoSuchGate"},
		{name: "no value", value: "GenericWorkload", wantErr: "missing bool value for GenericWorkload"},
		{name: "not a bool", value: "GenericWorkload=yes", wantErr: "invalid value of GenericWorkload=yes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.value)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%q) = %v, %v; want an error containing %q", tt.value, got, err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), "--feature-gates") {
					t.Errorf("error %q does not name the flag", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.value, err)
			}
			if got != tt.want {
				t.Errorf("Parse(%q) = %+v, want %+v", tt.value, got, tt.want)
			}
		})
	}
}

// TestStringRoundTrips: what String gives kube-scheduler parses back to the
// same gates.
func TestStringRoundTrips(t *testing.T) {
	for _, g := range []Gates{{}, {GenericWorkload: true}, {GenericWorkload: true, TopologyAwareWorkloadScheduling: true}} {
		t.Run(g.String(), func(t *testing.T) {
			back, err := Parse(g.String())
			if err != nil || back != g {
				t.Errorf("Parse(%q) = %+v, %v; want %+v", g.String(), back, err, g)
			}
		})
	}
}
