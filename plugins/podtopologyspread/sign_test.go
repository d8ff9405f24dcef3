// Tests for PodTopologySpread's SignPod.
package podtopologyspread

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestSignPod(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	refusedOwn := framework.NewStatus(framework.Unschedulable, "pods with topology constraints are not signable")
	refusedDefault := framework.NewStatus(framework.Unschedulable,
		"pods with default topology constraints are not signable")
	spreadPod := st.MakePod().Name("p").Label("app", "web").SpreadConstraint(hard(1, zoneKey, web)).Obj()
	plainPod := st.MakePod().Name("p").Label("app", "web").Obj()
	tests := []struct {
		name  string
		args  string
		cases []plugintesting.SignCase
	}{
		{
			name: "System defaulting",
			cases: []plugintesting.SignCase{
				{Name: "own constraints", Pod: spreadPod, WantStatus: refusedOwn},
				{Name: "no constraints: the defaults apply", Pod: plainPod, WantStatus: refusedDefault},
			},
		},
		{
			name: "List defaulting with constraints",
			args: `{"defaultingType":"List","defaultConstraints":[{"maxSkew":1,"topologyKey":"zone",` +
				`"whenUnsatisfiable":"ScheduleAnyway"}]}`,
			cases: []plugintesting.SignCase{
				{Name: "own constraints", Pod: spreadPod, WantStatus: refusedOwn},
				{Name: "no constraints: the defaults apply", Pod: plainPod, WantStatus: refusedDefault},
			},
		},
		{
			name: "no default constraints",
			args: `{"defaultingType":"List"}`,
			cases: []plugintesting.SignCase{
				{Name: "own constraints", Pod: spreadPod, WantStatus: refusedOwn},
				{Name: "soft constraints only", Pod: st.MakePod().Name("p").
					SpreadConstraint(soft(1, hostKey, web)).Obj(), WantStatus: refusedOwn},
				{Name: "no constraints: nothing to sign", Pod: plainPod},
				{Name: "no constraints, other fields set", Pod: st.MakePod().Name("p").NodeSelector("zone", "a").
					Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plugintesting.RunSignCases(t, newPlugin(t, ctx, tt.args, nil, nil), tt.cases)
		})
	}
}
