package chaos

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minisched/minisched/builders"
)

// TestChecks feeds the checks of claims, volumes and gangs cluster states
// that break them, and states that do not: a planted bug in the scheduler
// shows up as one of the former (the closing note of issue 35 shows each
// caught in a run).
func TestChecks(t *testing.T) {
	node := func(name string) *v1.Node { return builders.MakeNode().Name(name).Obj() }
	pod := func(name, uid, nodeName string) *v1.Pod {
		p := builders.MakePod().Namespace("chaos").Name(name).UID(uid).Obj()
		p.Spec.NodeName = nodeName
		return p
	}
	member := func(name, uid, group, nodeName string) *v1.Pod {
		p := builders.MakePod().Namespace("chaos").Name(name).UID(uid).PodGroup(group).Obj()
		p.Spec.NodeName = nodeName
		return p
	}
	allocated := func(name, nodeName, device string, reservedFor ...*v1.Pod) *resourceapi.ResourceClaim {
		c := builders.MakeResourceClaim().Namespace("chaos").Name(name).
			Allocation(builders.NodeNameSelector(nodeName), resourceapi.DeviceRequestAllocationResult{
				Request: "gpu", Driver: driverName, Pool: nodeName, Device: device})
		for _, p := range reservedFor {
			c.ReservedFor(p.Name, p.UID)
		}
		return c.Obj()
	}
	pvc := func(name, volume string, ann map[string]string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolumeClaim {
		c := builders.MakePVC().Namespace("chaos").Name(name).UID(name + "-uid").Class(classLocal).Req(volumeSize)
		if len(modes) > 0 {
			c.AccessModes(modes...)
		}
		for k, v := range ann {
			c.Annotation(k, v)
		}
		if volume != "" {
			c.VolumeName(volume).Phase(v1.ClaimBound)
		}
		return c.Obj()
	}
	pv := func(name, claim, claimUID string) *v1.PersistentVolume {
		v := builders.MakePV().Name(name).Class(classLocal).Capacity(volumeSize).Obj()
		if claim != "" {
			v.Spec.ClaimRef = &v1.ObjectReference{Namespace: "chaos", Name: claim, UID: types.UID(claimUID)}
		}
		return v
	}
	gang := func(name string, minCount int32) *schedulingv1beta1.PodGroup {
		return builders.MakePodGroup().Namespace("chaos").Name(name).Gang(minCount).Obj()
	}
	a, b := pod("a", "uid-a", "n1"), pod("b", "uid-b", "n1")
	pending := pod("p", "uid-p", "")
	pending.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: new("c1")}}
	elsewhere := pending.DeepCopy()
	elsewhere.Spec.NodeSelector = map[string]string{"color": "blue"}
	tests := []struct {
		name    string
		pods    []*v1.Pod
		claims  []*resourceapi.ResourceClaim
		pvcs    []*v1.PersistentVolumeClaim
		pvs     []*v1.PersistentVolume
		groups  []*schedulingv1beta1.PodGroup
		excused string
		settled bool
		want    []string
	}{
		{name: "claims as they should be", pods: []*v1.Pod{a, b}, settled: true,
			claims: []*resourceapi.ResourceClaim{allocated("c1", "n1", "gpu-0", a), allocated("c2", "n1", "gpu-1", b)}},
		{name: "a device allocated twice", pods: []*v1.Pod{a, b},
			claims: []*resourceapi.ResourceClaim{allocated("c1", "n1", "gpu-0", a), allocated("c2", "n1", "gpu-0", b)},
			want:   []string{"device gpu.example.com/n1/gpu-0 is allocated to claims c1 and c2"}},
		{name: "allocated, reserved for nobody, its pending pod fits there", pods: []*v1.Pod{pending}, settled: true,
			claims: []*resourceapi.ResourceClaim{allocated("c1", "n1", "gpu-0")},
			want:   []string{"claim c1 is allocated (on n1) and reserved for no pod"}},
		{name: "allocated elsewhere, reserved for nobody, its pending pod passes the filters before DynamicResources",
			pods: []*v1.Pod{pending}, settled: true,
			claims: []*resourceapi.ResourceClaim{allocated("c1", "n2", "gpu-0")},
			want:   []string{"claim c1 is allocated (on n2) and reserved for no pod"}},
		// Unreserve after a failed binding keeps the allocation; only the
		// pod's next attempt, or the controller when it removes the last
		// reservation itself, gives it back.
		{name: "allocated, reserved for nobody, used by no pod", pods: []*v1.Pod{a}, settled: true,
			claims: []*resourceapi.ResourceClaim{allocated("c1", "n1", "gpu-0")}},
		{name: "allocated, reserved for nobody, its pending pod fits nowhere", pods: []*v1.Pod{elsewhere}, settled: true,
			claims: []*resourceapi.ResourceClaim{allocated("c1", "n1", "gpu-0")}},
		{name: "allocated, but not yet settled", pods: []*v1.Pod{a},
			claims: []*resourceapi.ResourceClaim{allocated("c1", "n1", "gpu-0")}},
		{name: "reserved for a pod gone", settled: true,
			claims: []*resourceapi.ResourceClaim{allocated("c1", "n1", "gpu-0", a)},
			want:   []string{"claim c1 is reserved for pod a, which is gone"}},
		{name: "reserved for a pod that fits there, unbound", pods: []*v1.Pod{pending}, settled: true,
			claims: []*resourceapi.ResourceClaim{allocated("c1", "n1", "gpu-0", pending)},
			want:   []string{"claim c1 is reserved for pod p, which is not bound though it fits on n1"}},
		{name: "volumes as they should be", pods: []*v1.Pod{a}, settled: true,
			pvcs: []*v1.PersistentVolumeClaim{pvc("v1", "pv1", nil)}, pvs: []*v1.PersistentVolume{pv("pv1", "v1", "v1-uid")}},
		{name: "a volume bound to two claims",
			pvcs: []*v1.PersistentVolumeClaim{pvc("v1", "pv1", nil), pvc("v2", "pv1", nil)},
			pvs:  []*v1.PersistentVolume{pv("pv1", "v1", "v1-uid")},
			want: []string{"claim v2 is bound to volume pv1, which is bound to claim v1",
				"volume pv1 is bound to claims v1 and v2"}},
		{name: "a ReadWriteOncePod claim with two pods bound",
			pods: []*v1.Pod{
				builders.MakePod().Namespace("chaos").Name("r1").UID("r1").NodeName("n1").PVC("rwop").Obj(),
				builders.MakePod().Namespace("chaos").Name("r2").UID("r2").NodeName("n1").PVC("rwop").Obj()},
			pvcs: []*v1.PersistentVolumeClaim{pvc("rwop", "pv1", nil, v1.ReadWriteOncePod)},
			pvs:  []*v1.PersistentVolume{pv("pv1", "rwop", "rwop-uid")},
			want: []string{"pods [r1 r2] are bound with claim rwop, which is ReadWriteOncePod"}},
		{name: "a claim selected for a node, never provisioned", settled: true,
			pvcs: []*v1.PersistentVolumeClaim{pvc("v1", "", map[string]string{annSelectedNode: "n1"})},
			want: []string{"claim v1 stays annotated for node n1 and unbound once settled"}},
		{name: "a gang whole", settled: true, groups: []*schedulingv1beta1.PodGroup{gang("g", 2)},
			pods: []*v1.Pod{member("m0", "m0", "g", "n1"), member("m1", "m1", "g", "n1")}},
		{name: "a gang half bound", settled: true, groups: []*schedulingv1beta1.PodGroup{gang("g", 3)},
			pods: []*v1.Pod{member("m0", "m0", "g", "n1"), member("m1", "m1", "g", "n1"), member("m2", "m2", "g", "")},
			want: []string{"gang g has 2 members bound ([m0 m1]), fewer than its minCount 3"}},
		{name: "a gang half bound, as kube-scheduler leaves it", settled: true, excused: "g",
			groups: []*schedulingv1beta1.PodGroup{gang("g", 3)},
			pods:   []*v1.Pod{member("m0", "m0", "g", "n1"), member("m1", "m1", "g", "n1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Run{cfg: Config{Logf: t.Logf},
				gangs: &gangExcuses{reasons: map[string]string{}, erred: map[string]bool{}}}
			if tt.excused != "" {
				r.gangs.excuse(tt.excused, "a bound member was deleted")
			}
			c := &cluster{nodes: map[string]*v1.Node{"n1": node("n1")}, bound: map[string][]*v1.Pod{},
				podGroups: map[string]*schedulingv1beta1.PodGroup{},
				storage:   &storage{claims: map[string]*v1.PersistentVolumeClaim{}, volumes: map[string]*v1.PersistentVolume{}},
				devices:   &devices{claims: map[string]*resourceapi.ResourceClaim{}, free: map[string][]string{}}}
			c.nodes["n1"].Status.Allocatable = v1.ResourceList{v1.ResourcePods: resource.MustParse("10")}
			for _, p := range tt.pods {
				if p.Spec.NodeName != "" {
					c.bound[p.Spec.NodeName] = append(c.bound[p.Spec.NodeName], p)
				} else {
					c.pending = append(c.pending, p)
				}
			}
			for _, cl := range tt.claims {
				c.devices.claims[cl.Name] = cl
			}
			for _, v := range tt.pvcs {
				c.storage.claims[v.Name] = v
			}
			for _, v := range tt.pvs {
				c.storage.volumes[v.Name] = v
			}
			for _, g := range tt.groups {
				c.podGroups[g.Name] = g
			}
			got := slices.Concat(r.checkDevices(c, tt.settled), r.checkVolumes(c, tt.settled))
			if tt.settled {
				got = append(got, r.checkGangs(c)...)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("broken:\n\t%v\nwant\n\t%v", got, tt.want)
			}
		})
	}
}
