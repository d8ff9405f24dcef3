// Tests of decoding a plugin's args: DecodePluginArgs' three steps.

package framework

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// sampleArgs is an args type as a plugin declares one.
type sampleArgs struct {
	metav1.TypeMeta `json:",inline"`

	Size  *int   `json:"size,omitempty"`
	Label string `json:"label,omitempty"`
}

// DeepCopyObject implements runtime.Object.
func (a *sampleArgs) DeepCopyObject() runtime.Object {
	c := *a
	if a.Size != nil {
		size := *a.Size
		c.Size = &size
	}
	return &c
}

func sampleDefaults(a *sampleArgs) {
	if a.Size == nil {
		size := 3
		a.Size = &size
	}
}

func sampleValidate(a *sampleArgs) error {
	if a.Label == "bad" {
		return errors.New("label: Invalid value")
	}
	return nil
}

func TestDecodePluginArgs(t *testing.T) {
	three, five := 3, 5
	tests := []struct {
		name        string
		raw         *runtime.RawExtension
		setDefaults func(*sampleArgs)
		want        *sampleArgs
		wantErr     string
	}{
		{name: "no args, defaulted", setDefaults: sampleDefaults, want: &sampleArgs{Size: &three}},
		{name: "no args, no defaults", want: &sampleArgs{}},
		{name: "given fields kept", raw: &runtime.RawExtension{Raw: []byte(`{"size":5,"label":"x"}`)},
			setDefaults: sampleDefaults, want: &sampleArgs{Size: &five, Label: "x"}},
		{name: "a decode error names the type", raw: &runtime.RawExtension{Raw: []byte(`{"sise":5}`)},
			wantErr: `decoding sampleArgs: unknown field "sise"`},
		{name: "a validation error as it is", raw: &runtime.RawExtension{Raw: []byte(`{"label":"bad"}`)},
			setDefaults: sampleDefaults, wantErr: "label: Invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodePluginArgs(tt.raw, tt.setDefaults, sampleValidate)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("DecodePluginArgs error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodePluginArgs: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecodePluginArgs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodePluginArgsDefaultsACopy checks step 2: a typed args object is the
// configuration's, and defaulting must not write into it.
func TestDecodePluginArgsDefaultsACopy(t *testing.T) {
	configured := &sampleArgs{Label: "x"}
	got, err := DecodePluginArgs(&runtime.RawExtension{Object: configured}, sampleDefaults, nil)
	if err != nil {
		t.Fatalf("DecodePluginArgs: %v", err)
	}
	if got.Size == nil || *got.Size != 3 {
		t.Errorf("DecodePluginArgs size = %v, want 3", got.Size)
	}
	if diff := cmp.Diff(&sampleArgs{Label: "x"}, configured); diff != "" {
		t.Errorf("DecodePluginArgs changed the configuration's args (-want +got):\n%s", diff)
	}
}
