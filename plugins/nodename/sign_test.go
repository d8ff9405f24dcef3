// Tests for NodeName's SignPod.
package nodename

import (
	"testing"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestSignPod(t *testing.T) {
	plugintesting.RunSignCases(t, &NodeName{}, []plugintesting.SignCase{
		{
			Name: "no node requested",
			Pod:  st.MakePod().Name("p").Obj(),
			Want: []framework.SignFragment{{Key: "v1.Pod.Spec.NodeName", Value: ""}},
		},
		{
			Name: "node requested",
			Pod:  st.MakePod().Name("p").NodeName("n1").Obj(),
			Want: []framework.SignFragment{{Key: "v1.Pod.Spec.NodeName", Value: "n1"}},
		},
	})
}

func TestSignPodPairs(t *testing.T) {
	plugintesting.RunSignPairs(t, &NodeName{}, []plugintesting.SignPair{
		{
			Name: "same node, other name and labels",
			A:    st.MakePod().Name("a").Label("app", "web").NodeName("n1").Obj(),
			B:    st.MakePod().Name("b").Label("app", "db").NodeName("n1").Obj(),
			Same: true,
		},
		{
			Name: "another node",
			A:    st.MakePod().Name("a").NodeName("n1").Obj(),
			B:    st.MakePod().Name("a").NodeName("n2").Obj(),
		},
		{
			Name: "a node and none",
			A:    st.MakePod().Name("a").NodeName("n1").Obj(),
			B:    st.MakePod().Name("a").Obj(),
		},
	})
}
