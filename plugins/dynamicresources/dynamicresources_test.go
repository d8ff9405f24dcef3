// Tests for DynamicResources' PreFilter record and the PostFilter that reads
// it back, including kube-scheduler's "not found" when PreFilter never ran.
package dynamicresources

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
)

func TestPreFilterThenPostFilter(t *testing.T) {
	withClaim := st.MakePod().Name("p").Obj()
	withClaim.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu-claim")}}
	tests := []struct {
		name          string
		pod           *v1.Pod
		skipPreFilter bool
		wantPreFilter *framework.Status
		// wantPostFilter is the PostFilter status's code and message.
		wantPostFilterCode framework.Code
		wantPostFilterMsg  string
	}{
		{
			name:               "a pod without claims: PreFilter skips, PostFilter leaves it to preemption",
			pod:                st.MakePod().Name("p").Obj(),
			wantPreFilter:      framework.NewStatus(framework.Skip),
			wantPostFilterCode: framework.Unschedulable,
		},
		{
			name:               "PreFilter never ran (an earlier PreFilter was unresolvable): not found, an Error",
			pod:                st.MakePod().Name("p").Obj(),
			skipPreFilter:      true,
			wantPostFilterCode: framework.Error,
			wantPostFilterMsg:  "not found",
		},
		{
			name:               "a pod with claims is refused with a reason",
			pod:                withClaim,
			wantPreFilter:      framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonClaimsNotSupported),
			wantPostFilterCode: framework.Unschedulable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			pl, err := New(ctx, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			dr := pl.(*DynamicResources)
			state := framework.NewCycleState()
			if !tt.skipPreFilter {
				_, got := dr.PreFilter(ctx, state, tt.pod, nil)
				if diff := cmp.Diff(tt.wantPreFilter, got); diff != "" {
					t.Errorf("PreFilter (-want +got):\n%s", diff)
				}
			}
			_, got := dr.PostFilter(ctx, state, tt.pod, framework.NewNodeToStatus())
			if got.Code() != tt.wantPostFilterCode || got.Message() != tt.wantPostFilterMsg {
				t.Errorf("PostFilter = %v %q, want %v %q", got.Code(), got.Message(), tt.wantPostFilterCode, tt.wantPostFilterMsg)
			}
			if tt.skipPreFilter && !errors.Is(got.AsError(), framework.ErrNotFound) {
				t.Errorf("PostFilter error %v is not framework.ErrNotFound", got.AsError())
			}
		})
	}
}

func TestNewValidatesArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		wantErr string
	}{
		{name: "none", args: ""},
		{name: "kube-scheduler's defaults", args: `{"filterTimeout":"10s","bindingTimeout":"600s"}`},
		{name: "filterTimeout 0 turns the timeout off", args: `{"filterTimeout":"0s"}`},
		{name: "negative filterTimeout", args: `{"filterTimeout":"-1s"}`,
			wantErr: `args.filterTimeout: Invalid value: "-1s": must be zero or positive`},
		{name: "bindingTimeout under a second", args: `{"bindingTimeout":"500ms"}`,
			wantErr: `args.bindingTimeout: Invalid value: "500ms": must be at least 1s`},
		{name: "unknown field", args: `{"filterTimeut":"1s"}`,
			wantErr: `decoding DynamicResourcesArgs: unknown field "filterTimeut"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(context.Background(), &runtime.RawExtension{Raw: []byte(tt.args)}, nil)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("New error = %q, want %q", got, tt.wantErr)
			}
		})
	}
}
