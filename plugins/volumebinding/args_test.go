// Tests for VolumeBinding's args: defaults, validation (kube-scheduler's
// ValidateVolumeBindingArgs cases with StorageCapacityScoring on), strict
// decoding, and New refusing bad args.
package volumebinding

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
)

// defaultShape is the shape kube-scheduler defaults with StorageCapacityScoring on.
var defaultShape = []configv1.UtilizationShapePoint{{Utilization: 0, Score: 10}, {Utilization: 100, Score: 0}}

func TestDecodeArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    *runtime.RawExtension
		want    *configv1.VolumeBindingArgs
		wantErr string
	}{
		{
			name: "no args: 600s and the default shape",
			want: &configv1.VolumeBindingArgs{BindTimeoutSeconds: ptr.To[int64](600), Shape: defaultShape},
		},
		{
			name: "empty shape is defaulted",
			args: rawArgs(`{"bindTimeoutSeconds": 300, "shape": []}`),
			want: &configv1.VolumeBindingArgs{BindTimeoutSeconds: ptr.To[int64](300), Shape: defaultShape},
		},
		{
			name: "zero timeout is valid (no waiting)",
			args: rawArgs(`{"bindTimeoutSeconds": 0}`),
			want: &configv1.VolumeBindingArgs{BindTimeoutSeconds: ptr.To[int64](0), Shape: defaultShape},
		},
		{
			name: "custom shape is kept",
			args: rawArgs(`{"shape": [{"utilization": 0, "score": 0}, {"utilization": 50, "score": 3},
				{"utilization": 100, "score": 5}]}`),
			want: &configv1.VolumeBindingArgs{BindTimeoutSeconds: ptr.To[int64](600),
				Shape: []configv1.UtilizationShapePoint{{Utilization: 0, Score: 0}, {Utilization: 50, Score: 3},
					{Utilization: 100, Score: 5}}},
		},
		{
			name:    "[BindTimeoutSeconds] negative value is invalid",
			args:    rawArgs(`{"bindTimeoutSeconds": -10}`),
			wantErr: "bindTimeoutSeconds: Invalid value: -10: invalid BindTimeoutSeconds, should not be a negative value",
		},
		{
			name:    "[Shape] utilization is not sorted",
			args:    rawArgs(`{"shape": [{"utilization": 0, "score": 10}, {"utilization": 0, "score": 5}]}`),
			wantErr: "shape[1].utilization: Invalid value: 0: values must be sorted in increasing order",
		},
		{
			name: "[Shape] utilization and score are out of range",
			args: rawArgs(`{"shape": [{"utilization": -1, "score": 11}, {"utilization": 101, "score": -1}]}`),
			wantErr: "[shape[0].utilization: Invalid value: -1: not in valid range [0, 100], " +
				"shape[0].score: Invalid value: 11: not in valid range [0, 10], " +
				"shape[1].utilization: Invalid value: 101: not in valid range [0, 100], " +
				"shape[1].score: Invalid value: -1: not in valid range [0, 10]]",
		},
		{
			name:    "unknown field",
			args:    rawArgs(`{"bindTimeoutSecond": 1}`),
			wantErr: `decoding VolumeBindingArgs: unknown field "bindTimeoutSecond"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeArgs(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("DecodeArgs error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecodeArgs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    *configv1.VolumeBindingArgs
		wantErr string
	}{
		{
			name: "defaulted args are valid",
			args: &configv1.VolumeBindingArgs{BindTimeoutSeconds: ptr.To[int64](10), Shape: defaultShape},
		},
		{
			name:    "[StorageCapacityScoring=on] shape should not be empty",
			args:    &configv1.VolumeBindingArgs{BindTimeoutSeconds: ptr.To[int64](10)},
			wantErr: "shape: Required value: at least one point must be specified",
		},
		{
			name:    "timeout not set",
			args:    &configv1.VolumeBindingArgs{Shape: defaultShape},
			wantErr: "bindTimeoutSeconds: Required value: must be set",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateArgs(tt.args)
			if got := errString(err); got != tt.wantErr {
				t.Errorf("ValidateArgs = %q, want %q", got, tt.wantErr)
			}
		})
	}
}

func TestNewRefusesBadArgs(t *testing.T) {
	_, err := buildPluginEnv(t, rawArgs(`{"bindTimeoutSeconds": -1}`))
	if err == nil || !strings.Contains(err.Error(), "bindTimeoutSeconds: Invalid value: -1") {
		t.Errorf("building the framework: got %v, want the invalid bindTimeoutSeconds", err)
	}
	if _, err := New(context.Background(), nil, nil); err == nil {
		t.Error("New without a handle: want an error")
	}
}

// errString is err's text, "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
