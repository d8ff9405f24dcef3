// Tests for TaintToleration's SignPod.
package tainttoleration

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// Tolerations the signing tests share.
var (
	tolerateGPU       = v1.Toleration{Key: "gpu", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}
	tolerateDedicated = v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "user1",
		Effect: v1.TaintEffectNoSchedule}
	tolerateCordon = v1.Toleration{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists,
		Effect: v1.TaintEffectNoSchedule}
)

func TestSignPod(t *testing.T) {
	plugintesting.RunSignCases(t, &TaintToleration{}, []plugintesting.SignCase{
		{
			Name: "no tolerations",
			Pod:  st.MakePod().Name("p").Obj(),
			Want: []framework.SignFragment{{Key: "v1.Pod.Spec.Tolerations", Value: []v1.Toleration{}}},
		},
		{
			Name: "tolerations sorted by key",
			Pod: st.MakePod().Name("p").Toleration(tolerateGPU).Toleration(tolerateCordon).
				Toleration(tolerateDedicated).Obj(),
			Want: []framework.SignFragment{{Key: "v1.Pod.Spec.Tolerations",
				Value: []v1.Toleration{tolerateDedicated, tolerateGPU, tolerateCordon}}},
		},
	})
}

func TestSignPodPairs(t *testing.T) {
	plugintesting.RunSignPairs(t, &TaintToleration{}, []plugintesting.SignPair{
		{
			Name: "same tolerations in another order",
			A:    st.MakePod().Name("a").Toleration(tolerateGPU).Toleration(tolerateCordon).Obj(),
			B:    st.MakePod().Name("b").Toleration(tolerateCordon).Toleration(tolerateGPU).Obj(),
			Same: true,
		},
		{
			Name: "other labels and requests",
			A:    st.MakePod().Name("a").Label("app", "web").Toleration(tolerateGPU).Obj(),
			B: st.MakePod().Name("b").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).
				Toleration(tolerateGPU).Obj(),
			Same: true,
		},
		{
			Name: "one more toleration",
			A:    st.MakePod().Name("a").Toleration(tolerateGPU).Obj(),
			B:    st.MakePod().Name("a").Toleration(tolerateGPU).Toleration(tolerateCordon).Obj(),
		},
		{
			Name: "same key, another value",
			A:    st.MakePod().Name("a").Toleration(tolerateDedicated).Obj(),
			B: st.MakePod().Name("a").Toleration(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual,
				Value: "user2", Effect: v1.TaintEffectNoSchedule}).Obj(),
		},
		{
			Name: "same key and value, another effect",
			A:    st.MakePod().Name("a").Toleration(tolerateDedicated).Obj(),
			B: st.MakePod().Name("a").Toleration(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual,
				Value: "user1", Effect: v1.TaintEffectNoExecute}).Obj(),
		},
	})
}
