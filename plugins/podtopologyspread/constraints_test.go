// Tests for how PodTopologySpread parses constraints: the selector deduced
// for default constraints from Services and controllers, matchLabelKeys,
// and the defaults of the optional fields.
package podtopologyspread

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
)

// service is a Service in "default" selecting selector (nil: none).
func service(name string, selector map[string]string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: v1.ServiceSpec{Selector: selector}}
}

func replicaSet(name string, selector *metav1.LabelSelector) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: appsv1.ReplicaSetSpec{Selector: selector}}
}

func statefulSet(name string, selector *metav1.LabelSelector) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: appsv1.StatefulSetSpec{Selector: selector}}
}

func replicationController(name string, selector map[string]string) *v1.ReplicationController {
	return &v1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: v1.ReplicationControllerSpec{Selector: selector}}
}

// ownedBy makes the pod controlled by apiVersion/kind name.
func ownedBy(p *v1.Pod, apiVersion, kind, name string) *v1.Pod {
	controller := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(name),
		Controller: &controller}}
	return p
}

func TestDefaultSelector(t *testing.T) {
	webPod := func() *v1.Pod { return st.MakePod().Name("p").Label("app", "web").Label("tier", "fe").Obj() }
	envProd := &metav1.LabelSelector{
		MatchLabels: map[string]string{"app": "web"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpNotIn,
			Values: []string{"dev"}}},
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		objs []runtime.Object
		// want is the selector's String(), "" for the empty selector.
		want string
	}{
		{
			name: "nothing selects the pod",
			pod:  webPod(),
			want: "",
		},
		{
			name: "one Service",
			pod:  webPod(),
			objs: []runtime.Object{service("web", map[string]string{"app": "web"})},
			want: "app=web",
		},
		{
			name: "Service selectors merge",
			pod:  webPod(),
			objs: []runtime.Object{service("web", map[string]string{"app": "web"}),
				service("fe", map[string]string{"tier": "fe"})},
			want: "app=web,tier=fe",
		},
		{
			name: "Services that do not select the pod, or have no selector, are left out",
			pod:  webPod(),
			objs: []runtime.Object{service("db", map[string]string{"app": "db"}), service("headless", nil)},
			want: "",
		},
		{
			name: "Services of other namespaces are left out",
			pod:  webPod(),
			objs: []runtime.Object{&v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "other"},
				Spec: v1.ServiceSpec{Selector: map[string]string{"app": "web"}}}},
			want: "",
		},
		{
			name: "ReplicationController selector merges as a label set",
			pod:  ownedBy(webPod(), "v1", "ReplicationController", "rc"),
			objs: []runtime.Object{service("fe", map[string]string{"tier": "fe"}),
				replicationController("rc", map[string]string{"app": "web"})},
			want: "app=web,tier=fe",
		},
		{
			name: "ReplicaSet selector requirements are ANDed",
			pod:  ownedBy(webPod(), "apps/v1", "ReplicaSet", "rs"),
			objs: []runtime.Object{service("fe", map[string]string{"tier": "fe"}), replicaSet("rs", envProd)},
			want: "app=web,env notin (dev),tier=fe",
		},
		{
			name: "StatefulSet selector requirements are ANDed",
			pod:  ownedBy(webPod(), "apps/v1", "StatefulSet", "ss"),
			objs: []runtime.Object{statefulSet("ss", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}})},
			want: "app=web",
		},
		{
			name: "controller not found",
			pod:  ownedBy(webPod(), "apps/v1", "ReplicaSet", "gone"),
			objs: []runtime.Object{service("fe", map[string]string{"tier": "fe"})},
			want: "tier=fe",
		},
		{
			name: "unsupported controller kind",
			pod:  ownedBy(webPod(), "apps/v1", "Deployment", "d"),
			objs: []runtime.Object{service("fe", map[string]string{"tier": "fe"})},
			want: "tier=fe",
		},
		{
			// The group/version must match exactly: apps/v1 has no
			// ReplicationController.
			name: "kind under the wrong group",
			pod:  ownedBy(webPod(), "apps/v1", "ReplicationController", "rc"),
			objs: []runtime.Object{replicationController("rc", map[string]string{"app": "web"})},
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := newPlugin(t, ctx, "", nil, nil, tt.objs...)
			if diff := cmp.Diff(tt.want, pl.defaultSelector(tt.pod).String()); diff != "" {
				t.Errorf("default selector (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConstraintsOf(t *testing.T) {
	// constraintView is a constraint with its selector as a string.
	type constraintView struct {
		MaxSkew            int32
		TopologyKey        string
		Selector           string
		MinDomains         int32
		NodeAffinityPolicy v1.NodeInclusionPolicy
		NodeTaintsPolicy   v1.NodeInclusionPolicy
	}
	view := func(cs []constraint) []constraintView {
		var out []constraintView
		for _, c := range cs {
			out = append(out,
				constraintView{c.MaxSkew, c.TopologyKey, c.Selector.String(), c.MinDomains, c.NodeAffinityPolicy,
					c.NodeTaintsPolicy})
		}
		return out
	}
	const honor, ignore = v1.NodeInclusionPolicyHonor, v1.NodeInclusionPolicyIgnore
	listArgs := `{"defaultingType":"List","defaultConstraints":[{"maxSkew":2,"topologyKey":"rack",` +
		`"whenUnsatisfiable":"DoNotSchedule","matchLabelKeys":["tier"]}]}`
	tests := []struct {
		name   string
		args   string
		pod    *v1.Pod
		objs   []runtime.Object
		action v1.UnsatisfiableConstraintAction
		want   []constraintView
	}{
		{
			name: "optional fields defaulted: minDomains 1, Honor affinity, Ignore taints",
			pod: st.MakePod().Name("p").Label("app", "web").
				SpreadConstraint(hard(1, zoneKey, web)).SpreadConstraint(soft(1, hostKey, web)).Obj(),
			action: v1.DoNotSchedule,
			want:   []constraintView{{1, zoneKey, "app=web", 1, honor, ignore}},
		},
		{
			name: "optional fields as given",
			pod: st.MakePod().Name("p").Label("app", "web").
				SpreadConstraint(soft(3, hostKey, web, minDomains(4), affinityPolicy(ignore), taintsPolicy(honor))).Obj(),
			action: v1.ScheduleAnyway,
			want:   []constraintView{{3, hostKey, "app=web", 4, ignore, honor}},
		},
		{
			// Only keys the pod has are merged; "missing" is skipped.
			name: "matchLabelKeys merged with the pod's values",
			pod: st.MakePod().Name("p").Label("app", "web").Label("version", "v2").
				SpreadConstraint(hard(1, zoneKey, web, matchLabelKeys("version", "missing"))).Obj(),
			action: v1.DoNotSchedule,
			want:   []constraintView{{1, zoneKey, "app=web,version=v2", 1, honor, ignore}},
		},
		{
			name: "system defaults with a Service",
			pod:  st.MakePod().Name("p").Label("app", "web").Obj(),
			objs: []runtime.Object{service("web", web)},
			// kube-scheduler's order: hostname, then zone.
			action: v1.ScheduleAnyway,
			want:   []constraintView{{3, hostKey, "app=web", 1, honor, ignore}, {5, zoneKey, "app=web", 1, honor, ignore}},
		},
		{
			name:   "system defaults without a selecting Service",
			pod:    st.MakePod().Name("p").Label("app", "web").Obj(),
			action: v1.ScheduleAnyway,
			want:   nil,
		},
		{
			// The deduced selector replaces the matchLabelKeys merge.
			name:   "list defaults take the deduced selector",
			args:   listArgs,
			pod:    st.MakePod().Name("p").Label("app", "web").Label("tier", "fe").Obj(),
			objs:   []runtime.Object{service("web", web)},
			action: v1.DoNotSchedule,
			want:   []constraintView{{2, "rack", "app=web", 1, honor, ignore}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := newPlugin(t, ctx, tt.args, nil, nil, tt.objs...)
			cs, err := pl.constraintsOf(tt.pod, tt.action)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, view(cs)); diff != "" {
				t.Errorf("constraints (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConstraintsOfBadSelector(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl := newPlugin(t, ctx, "", nil, nil)
	c := hard(1, zoneKey, nil)
	c.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app",
		Operator: "Bogus"}}}
	pod := st.MakePod().Name("p").SpreadConstraint(c).Obj()
	if _, err := pl.constraintsOf(pod, v1.DoNotSchedule); err == nil {
		t.Error("constraintsOf with a bad selector: want an error")
	}
	// PreFilter reports it as an Error.
	if _, s := pl.PreFilter(ctx, nil, pod, nil); s.Code().String() != "Error" {
		t.Errorf("PreFilter = %v, want Error", s)
	}
}
