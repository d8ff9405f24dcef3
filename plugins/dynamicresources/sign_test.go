// Tests for DynamicResources' SignPod.
package dynamicresources

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestSignPod(t *testing.T) {
	refused := framework.NewStatus(framework.Unschedulable, "pods with dra resource claims are not signable")
	plugintesting.RunSignCases(t, &DynamicResources{}, []plugintesting.SignCase{
		{
			Name:       "a shared claim",
			Pod:        st.MakePod().Name("p").ResourceClaim("gpu", "shared-gpu").ClaimContainer("gpu").Obj(),
			WantStatus: refused,
		},
		{
			Name:       "a claim from a template",
			Pod:        st.MakePod().Name("p").ResourceClaimTemplate("gpu", "gpu-template").Obj(),
			WantStatus: refused,
		},
		{
			Name: "no claims: nothing to sign",
			Pod:  st.MakePod().Name("p").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj(),
		},
		{
			// NodeResourcesFit refuses it when a DeviceClass backs the
			// resource.
			Name: "an extended resource and no claims: nothing to sign",
			Pod:  st.MakePod().Name("p").Req(map[v1.ResourceName]string{"example.com/gpu": "1"}).Obj(),
		},
	})
}
