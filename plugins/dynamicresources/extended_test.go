// Tests of the extended-resource claim flow (extended.go): how containers'
// requests become device requests, after kube-scheduler's
// extendeddynamicresources_test.go, and a pod's whole cycle, after the
// extended-resource cases of its dynamicresources_test.go.
package dynamicresources

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	cgotesting "k8s.io/client-go/testing"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
)

// The extended resources of these tests: gpu and gpu1 name classes
// explicitly, gpuInit too, and the implicit name of classInit.
const (
	gpu      = v1.ResourceName("example.com/gpu")
	gpu1     = v1.ResourceName("example.com/gpu1")
	gpuInit  = v1.ResourceName("example.com/gpuinit")
	implicit = v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + "classInit")
)

// mapResolver resolves extended resources from a fixed map.
type mapResolver map[v1.ResourceName]string

func (m mapResolver) GetDeviceClass(name v1.ResourceName) *resourceapi.DeviceClass {
	class, ok := m[name]
	if !ok {
		return nil
	}
	return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: class}}
}

// req is a device request in short: name=class×count.
func req(name, class string, count int64) string { return fmt.Sprintf("%s=%s×%d", name, class, count) }

// mapping is a container's resource mapped to a request, in short.
func mapping(container string, resource v1.ResourceName, request string) string {
	return container + "/" + string(resource) + "→" + request
}

func TestCreateRequestsAndMappings(t *testing.T) {
	r := func(quantities ...any) map[v1.ResourceName]string {
		m := map[v1.ResourceName]string{}
		for i := 0; i < len(quantities); i += 2 {
			m[quantities[i].(v1.ResourceName)] = quantities[i+1].(string)
		}
		return m
	}
	pod := func() *st.PodWrapper { return st.MakePod().Name(podName).Namespace(namespace).UID(string(podUID)) }
	// One container asks for gpu and gpu1; two containers, one each.
	oneContainer := pod().Req(r(gpu, "1", gpu1, "2")).Obj()
	twoContainers := pod().Req(r(gpu, "1")).Req(r(gpu1, "2")).Obj()
	// Init containers (init<i>) come first in the numbering.
	oneInit := pod().Req(r(gpu, "1")).InitReq(r(gpuInit, "2")).Obj()
	twoInits := pod().Req(r(gpu, "1")).InitReq(r(gpuInit, "1")).InitReq(r(gpuInit, "2")).Obj()
	withSidecar := pod().Req(r(gpu, "1")).InitReq(r(gpuInit, "1")).SidecarReq(r(gpuInit, "1")).InitReq(r(gpuInit, "2")).Obj()
	initImplicit := pod().InitReq(r(gpuInit, "1", implicit, "2")).Obj()
	twoInitsImplicit := pod().Req(r(gpu, "1")).InitReq(r(gpuInit, "1")).InitReq(r(implicit, "2")).Obj()

	classes := mapResolver{gpu: "class", gpu1: "class1"}
	initClasses := mapResolver{gpu: "class", gpuInit: "classInit", implicit: "classInit"}
	tests := []struct {
		name      string
		pod       *v1.Pod
		resources map[v1.ResourceName]int64
		resolver  mapResolver
		want      []string
		// wantMappings are in the order made: by resource name, long-lived
		// containers first.
		wantMappings []string
	}{
		{name: "nothing from devices", pod: oneContainer, resolver: classes},
		{name: "one resource", pod: oneContainer, resources: map[v1.ResourceName]int64{gpu: 1},
			resolver:     mapResolver{gpu: "class"},
			want:         []string{req("container-0-request-0", "class", 1)},
			wantMappings: []string{mapping("c0", gpu, "container-0-request-0")}},
		{name: "a resource no class backs is left out", pod: oneContainer, resources: map[v1.ResourceName]int64{gpu: 1, gpu1: 2},
			resolver:     mapResolver{gpu: "class"},
			want:         []string{req("container-0-request-0", "class", 1)},
			wantMappings: []string{mapping("c0", gpu, "container-0-request-0")}},
		{name: "two resources of one container: indexed by sorted name", pod: oneContainer,
			resources: map[v1.ResourceName]int64{gpu: 1, gpu1: 2}, resolver: classes,
			want: []string{req("container-0-request-0", "class", 1), req("container-0-request-1", "class1", 2)},
			wantMappings: []string{mapping("c0", gpu, "container-0-request-0"),
				mapping("c0", gpu1, "container-0-request-1")}},
		{name: "two containers", pod: twoContainers, resources: map[v1.ResourceName]int64{gpu: 1, gpu1: 2}, resolver: classes,
			want: []string{req("container-0-request-0", "class", 1), req("container-1-request-0", "class1", 2)},
			wantMappings: []string{mapping("c0", gpu, "container-0-request-0"),
				mapping("c1", gpu1, "container-1-request-0")}},
		{name: "an init container is numbered first", pod: oneInit, resources: map[v1.ResourceName]int64{gpu: 1, gpuInit: 2},
			resolver: initClasses,
			want:     []string{req("container-0-request-0", "classInit", 2), req("container-1-request-0", "class", 1)},
			wantMappings: []string{mapping("c0", gpu, "container-1-request-0"),
				mapping("init0", gpuInit, "container-0-request-0")}},
		{name: "two init containers share the larger request", pod: twoInits,
			resources: map[v1.ResourceName]int64{gpu: 1, gpuInit: 2}, resolver: initClasses,
			want: []string{req("container-1-request-0", "classInit", 2), req("container-2-request-0", "class", 1)},
			wantMappings: []string{mapping("c0", gpu, "container-2-request-0"),
				mapping("init0", gpuInit, "container-1-request-0"), mapping("init1", gpuInit, "container-1-request-0")}},
		{name: "an init container reuses a later sidecar's devices", pod: withSidecar,
			resources: map[v1.ResourceName]int64{gpu: 1, gpuInit: 2}, resolver: initClasses,
			want: []string{req("container-1-request-0", "classInit", 1), req("container-2-request-0", "classInit", 2),
				req("container-3-request-0", "class", 1)},
			wantMappings: []string{mapping("c0", gpu, "container-3-request-0"),
				mapping("init1", gpuInit, "container-1-request-0"),
				mapping("init0", gpuInit, "container-1-request-0"), mapping("init2", gpuInit, "container-2-request-0")}},
		{name: "an explicit and an implicit name in one container", pod: initImplicit,
			resources: map[v1.ResourceName]int64{gpu: 1, gpuInit: 2, implicit: 2}, resolver: initClasses,
			want: []string{req("container-0-request-0", "classInit", 2), req("container-0-request-1", "classInit", 1)},
			wantMappings: []string{mapping("init0", implicit, "container-0-request-0"),
				mapping("init0", gpuInit, "container-0-request-1")}},
		{name: "explicit and implicit names in two init containers", pod: twoInitsImplicit,
			resources: map[v1.ResourceName]int64{gpu: 1, gpuInit: 2, implicit: 2}, resolver: initClasses,
			want: []string{req("container-0-request-0", "classInit", 1), req("container-1-request-0", "classInit", 2),
				req("container-2-request-0", "class", 1)},
			wantMappings: []string{mapping("init1", implicit, "container-1-request-0"),
				mapping("c0", gpu, "container-2-request-0"), mapping("init0", gpuInit, "container-0-request-0")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requests, mappings := createRequestsAndMappings(tt.pod, tt.resources, tt.resolver)
			var got, gotMappings []string
			for _, r := range requests {
				if r.Exactly.AllocationMode != resourceapi.DeviceAllocationModeExactCount {
					t.Errorf("request %s: allocation mode %q", r.Name, r.Exactly.AllocationMode)
				}
				got = append(got, req(r.Name, r.Exactly.DeviceClassName, r.Exactly.Count))
			}
			for _, m := range mappings {
				gotMappings = append(gotMappings, mapping(m.ContainerName, v1.ResourceName(m.ResourceName), m.RequestName))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantMappings, gotMappings); diff != "" {
				t.Errorf("mappings (-want +got):\n%s", diff)
			}
		})
	}
}

// gpuClass backs example.com/gpu; gpu1Class example.com/gpu1. Neither has
// selectors: every device will do.
var (
	gpuClass = &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu-class"},
		Spec: resourceapi.DeviceClassSpec{ExtendedResourceName: ptr.To(string(gpu))}}
	gpu1Class = &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu1-class"},
		Spec: resourceapi.DeviceClassSpec{ExtendedResourceName: ptr.To(string(gpu1))}}
)

// extendedWant is what one pod's cycle should return at each step it
// reaches, and leave behind.
type extendedWant struct {
	preFilter, filter, postFilter, reserve, preBind *framework.Status
	// claims are the claims in the apiserver at the end.
	claims []extendedClaimView
	// podStatus is the pod's status.extendedResourceClaimStatus at the end.
	podStatus *v1.PodExtendedResourceClaimStatus
	// inFlight: the extended-resource claim's allocation is still pending
	// at the end.
	inFlight bool
}

// extendedClaimView is what the tests compare of a claim.
type extendedClaimView struct {
	Name        string
	Owner       string
	Annotated   bool
	Finalizers  []string
	Requests    []string
	Devices     []string
	ReservedFor []string
}

func viewClaim(c *resourceapi.ResourceClaim) extendedClaimView {
	v := extendedClaimView{Name: c.Name, Finalizers: c.Finalizers,
		Annotated: c.Annotations[resourceapi.ExtendedResourceClaimAnnotation] == "true"}
	if owner := metav1.GetControllerOf(c); owner != nil {
		v.Owner = owner.Kind + "/" + owner.Name
	}
	for _, r := range c.Spec.Devices.Requests {
		v.Requests = append(v.Requests, req(r.Name, r.Exactly.DeviceClassName, r.Exactly.Count))
	}
	if a := c.Status.Allocation; a != nil {
		for _, r := range a.Devices.Results {
			v.Devices = append(v.Devices, r.Request+"="+r.Pool+"/"+r.Device)
		}
	}
	for _, r := range c.Status.ReservedFor {
		v.ReservedFor = append(v.ReservedFor, r.Resource+"/"+r.Name)
	}
	return v
}

// createdName is the name the fake apiserver generates for the pod's
// extended-resource claim (a real one appends five random characters).
const createdName = podName + "-extended-resources-abcde"

// earlierClaim is the claim an earlier attempt created for the pod: one
// gpu, allocated on node.
func earlierClaim(node string) *resourceapi.ResourceClaim {
	c := allocatedOn(makeClaim(createdName), node, "gpu-0")
	c.Annotations = map[string]string{resourceapi.ExtendedResourceClaimAnnotation: "true"}
	c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: podName, UID: podUID, Controller: ptr.To(true)}}
	c.Spec.Devices.Requests[0].Name = "container-0-request-0"
	c.Spec.Devices.Requests[0].Exactly.DeviceClassName = gpuClass.Name
	c.Status.Allocation.Devices.Results[0].Request = "container-0-request-0"
	return c
}

func TestExtendedResourceCycle(t *testing.T) {
	gpuPod := func(reqs ...map[v1.ResourceName]string) *v1.Pod {
		p := st.MakePod().Name(podName).Namespace(namespace).UID(string(podUID))
		for _, r := range reqs {
			p = p.Req(r)
		}
		return p.Obj()
	}
	onePerContainer := gpuPod(map[v1.ResourceName]string{gpu: "1"})
	twoResources := gpuPod(map[v1.ResourceName]string{gpu: "1", gpu1: "1"})
	implicitPod := gpuPod(map[v1.ResourceName]string{v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + gpuClass.Name): "1"},
		map[v1.ResourceName]string{v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + gpuClass.Name): "1"})
	unbacked := gpuPod(map[v1.ResourceName]string{gpu: "1", "example.com/fpga": "1"})
	node := func(allocatable map[v1.ResourceName]string) *v1.Node {
		return st.MakeNode().Name(nodeName).Capacity(allocatable).Obj()
	}
	slice := makeSlice(nodeName, "gpu-0", "gpu-1")
	created := extendedClaimView{Name: createdName, Owner: "Pod/" + podName, Annotated: true,
		Finalizers:  []string{resourceapi.Finalizer},
		Requests:    []string{req("container-0-request-0", gpuClass.Name, 1)},
		Devices:     []string{"container-0-request-0=worker/gpu-0"},
		ReservedFor: []string{"pods/" + podName}}
	mapped := &v1.PodExtendedResourceClaimStatus{ResourceClaimName: createdName,
		RequestMappings: []v1.ContainerExtendedResourceRequest{{ContainerName: "c0", ResourceName: string(gpu), RequestName: "container-0-request-0"}}}
	tests := []struct {
		name string
		pod  *v1.Pod
		node *v1.Node
		objs []runtime.Object
		// failCreate and failPatch make the apiserver refuse the claim's
		// creation and the pod's status patch.
		failCreate, failPatch bool
		// unreserve runs Unreserve after PreBind, as a failed Permit or
		// Bind would.
		unreserve bool
		want      extendedWant
	}{
		{
			name: "the node's device plugin serves the resource: no claim",
			pod:  onePerContainer, node: node(map[v1.ResourceName]string{gpu: "1"}),
			objs: []runtime.Object{gpuClass, slice},
		},
		{
			name: "no DeviceClass backs the resource: Skip",
			pod:  onePerContainer, node: node(map[v1.ResourceName]string{gpu: "0"}),
			objs: []runtime.Object{deviceClass, slice},
			want: extendedWant{preFilter: framework.NewStatus(framework.Skip)},
		},
		{
			name: "no allocatable: the claim is created, allocated and reserved, and named in the pod's status",
			pod:  onePerContainer, node: node(nil),
			objs: []runtime.Object{gpuClass, slice},
			want: extendedWant{claims: []extendedClaimView{created}, podStatus: mapped},
		},
		{
			name: "zero allocatable: the same",
			pod:  onePerContainer, node: node(map[v1.ResourceName]string{gpu: "0"}),
			objs: []runtime.Object{gpuClass, slice},
			want: extendedWant{claims: []extendedClaimView{created}, podStatus: mapped},
		},
		{
			name: "one resource from the device plugin, one from devices",
			pod:  twoResources, node: node(map[v1.ResourceName]string{gpu: "1"}),
			objs: []runtime.Object{gpuClass, gpu1Class, slice},
			want: extendedWant{
				claims: []extendedClaimView{{Name: createdName, Owner: "Pod/" + podName, Annotated: true,
					Finalizers:  []string{resourceapi.Finalizer},
					Requests:    []string{req("container-0-request-1", gpu1Class.Name, 1)},
					Devices:     []string{"container-0-request-1=worker/gpu-0"},
					ReservedFor: []string{"pods/" + podName}}},
				podStatus: &v1.PodExtendedResourceClaimStatus{ResourceClaimName: createdName,
					RequestMappings: []v1.ContainerExtendedResourceRequest{{ContainerName: "c0", ResourceName: string(gpu1), RequestName: "container-0-request-1"}}},
			},
		},
		{
			name: "the class's implicit name, two containers",
			pod:  implicitPod, node: node(nil),
			objs: []runtime.Object{gpuClass, slice},
			want: extendedWant{
				claims: []extendedClaimView{{Name: createdName, Owner: "Pod/" + podName, Annotated: true,
					Finalizers:  []string{resourceapi.Finalizer},
					Requests:    []string{req("container-0-request-0", gpuClass.Name, 1), req("container-1-request-0", gpuClass.Name, 1)},
					Devices:     []string{"container-0-request-0=worker/gpu-0", "container-1-request-0=worker/gpu-1"},
					ReservedFor: []string{"pods/" + podName}}},
				podStatus: &v1.PodExtendedResourceClaimStatus{ResourceClaimName: createdName,
					RequestMappings: []v1.ContainerExtendedResourceRequest{
						{ContainerName: "c0", ResourceName: resourceapi.ResourceDeviceClassPrefix + gpuClass.Name, RequestName: "container-0-request-0"},
						{ContainerName: "c1", ResourceName: resourceapi.ResourceDeviceClassPrefix + gpuClass.Name, RequestName: "container-1-request-0"},
					}},
			},
		},
		{
			name: "no devices: cannot allocate all claims, nothing to delete",
			pod:  onePerContainer, node: node(nil),
			objs: []runtime.Object{gpuClass},
			want: extendedWant{filter: uau("cannot allocate all claims"), postFilter: framework.NewStatus(framework.Unschedulable)},
		},
		{
			name: "a resource neither advertised nor backed by a class: cannot fit resource",
			pod:  unbacked, node: node(nil),
			objs: []runtime.Object{gpuClass, slice},
			want: extendedWant{filter: uau("cannot fit resource"), postFilter: framework.NewStatus(framework.Unschedulable)},
		},
		{
			name: "an earlier attempt's claim: rejected everywhere, deleted by PostFilter",
			pod:  onePerContainer, node: node(nil),
			objs: []runtime.Object{gpuClass, slice, earlierClaim("far-away")},
			want: extendedWant{filter: uau("cannot schedule extended resource claim"),
				postFilter: framework.NewStatus(framework.Unschedulable, "deletion of ResourceClaim completed")},
		},
		{
			name: "the claim cannot be created: PreBind fails, Unreserve takes the allocation out of flight",
			pod:  onePerContainer, node: node(nil), failCreate: true,
			objs: []runtime.Object{gpuClass, slice},
			want: extendedWant{preBind: framework.AsStatus(fmt.Errorf(
				"create claim for extended resources default/: %w", apierrors.NewBadRequest("claim creation errors")))},
		},
		{
			name: "the pod's status cannot be patched: PreBind fails, Unreserve deletes the claim",
			pod:  onePerContainer, node: node(nil), failPatch: true,
			objs: []runtime.Object{gpuClass, slice},
			want: extendedWant{preBind: framework.AsStatus(fmt.Errorf(
				"update pod default/my-pod ExtendedResourceClaimStatus: %w", apierrors.NewBadRequest("patch error")))},
		},
		{
			name: "binding fails after PreBind: Unreserve deletes the claim (the pod's status keeps naming it)",
			pod:  onePerContainer, node: node(nil), unreserve: true,
			objs: []runtime.Object{gpuClass, slice},
			want: extendedWant{podStatus: mapped},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newPluginEnv(t, nil, append(tt.objs, tt.pod)...)
			_, ctx := ktesting.NewTestContext(t)
			env.fakeGenerateName(tt.failCreate, tt.failPatch)
			env.waitForClasses(t, tt.objs)
			got := runExtendedCycle(ctx, t, env, tt.pod, tt.node, tt.unreserve)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(extendedWant{}), cmp.Comparer(statusEqual)); diff != "" {
				t.Errorf("cycle (-want +got):\n%s", diff)
			}
		})
	}
}

// fakeGenerateName makes the fake apiserver name a created claim after its
// generateName, as a real one does, or refuse it (failCreate); failPatch
// makes it refuse pod status patches.
func (e *pluginEnv) fakeGenerateName(failCreate, failPatch bool) {
	e.client.PrependReactor("create", "resourceclaims", func(action cgotesting.Action) (bool, runtime.Object, error) {
		if failCreate {
			return true, nil, apierrors.NewBadRequest("claim creation errors")
		}
		claim := action.(cgotesting.CreateAction).GetObject().(*resourceapi.ResourceClaim)
		if claim.Name == "" && claim.GenerateName != "" {
			claim.Name = claim.GenerateName + "abcde"
			claim.UID = "created-uid"
			claim.ResourceVersion = "1"
		}
		return false, nil, nil
	})
	if failPatch {
		e.client.PrependReactor("patch", "pods", func(cgotesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewBadRequest("patch error")
		})
	}
}

// waitForClasses waits until the manager's extended-resource map knows
// every class of objs that names an extended resource: it is fed by the
// informer's handler, which may lag behind the cache sync.
func (e *pluginEnv) waitForClasses(t *testing.T, objs []runtime.Object) {
	t.Helper()
	for _, o := range objs {
		class, ok := o.(*resourceapi.DeviceClass)
		if !ok || class.Spec.ExtendedResourceName == nil {
			continue
		}
		name := v1.ResourceName(*class.Spec.ExtendedResourceName)
		if err := waitFor(func() bool { return e.manager.DeviceClassResolver().GetDeviceClass(name) != nil }); err != nil {
			t.Fatalf("class %s never resolved: %v", class.Name, err)
		}
	}
}

// runExtendedCycle runs the pod's cycle on one node as the scheduler
// would, Unreserve included after a failure of Reserve or PreBind (and
// after PreBind if unreserve), and returns what each step returned and
// what the apiserver holds at the end.
func runExtendedCycle(ctx context.Context, t *testing.T, env *pluginEnv, pod *v1.Pod, node *v1.Node,
	unreserve bool) (got extendedWant) {
	t.Helper()
	cs := framework.NewCycleState()
	defer func() {
		claims, err := env.client.ResourceV1().ResourceClaims(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range claims.Items {
			got.claims = append(got.claims, viewClaim(&claims.Items[i]))
		}
		p, err := env.client.CoreV1().Pods(namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.podStatus = p.Status.ExtendedResourceClaimStatus
		if state, err := getStateData(cs); err == nil && state.draExtendedResource.hasClaim {
			got.inFlight = env.manager.ResourceClaims().GetPendingAllocation(state.draExtendedResource.initialClaimUID) != nil
		}
	}()
	if _, got.preFilter = env.pl.PreFilter(ctx, cs, pod, nil); !got.preFilter.IsSuccess() {
		return got
	}
	nodeInfo := framework.NewNodeInfo()
	nodeInfo.SetNode(node)
	if got.filter = env.pl.Filter(ctx, cs, pod, nodeInfo); !got.filter.IsSuccess() {
		_, got.postFilter = env.pl.PostFilter(ctx, cs, pod, framework.NewNodeToStatus())
		return got
	}
	if _, s := env.pl.Score(ctx, cs, pod, nodeInfo); !s.IsSuccess() {
		t.Fatalf("Score: %v", s)
	}
	if got.reserve = env.pl.Reserve(ctx, cs, pod, node.Name); !got.reserve.IsSuccess() {
		env.pl.Unreserve(ctx, cs, pod, node.Name)
		return got
	}
	if got.preBind = env.pl.PreBind(ctx, cs, pod, node.Name); !got.preBind.IsSuccess() || unreserve {
		env.pl.Unreserve(ctx, cs, pod, node.Name)
	}
	return got
}

// TestSpecNamesDRAExtendedResource checks the spec scan that lets PreFilter
// skip adding up the requests of a pod that names no extended resource: for
// each pod, its answer, and that the requests component-helpers adds up
// (as preFilterExtendedResources does) name one only when it says yes.
func TestSpecNamesDRAExtendedResource(t *testing.T) {
	plain := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("500Mi"),
		"hugepages-2Mi": resource.MustParse("4Mi")}
	extended := v1.ResourceList{gpu: resource.MustParse("1")}
	ctr := func(reqs v1.ResourceList) v1.Container {
		return v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: reqs}}
	}
	tests := []struct {
		name string
		spec v1.PodSpec
		want bool
	}{
		{name: "cpu, memory and hugepages", spec: v1.PodSpec{Containers: []v1.Container{ctr(plain)}}},
		{name: "no requests", spec: v1.PodSpec{Containers: []v1.Container{ctr(nil)}}},
		{name: "a container's", spec: v1.PodSpec{Containers: []v1.Container{ctr(plain), ctr(extended)}}, want: true},
		{name: "an init container's", spec: v1.PodSpec{Containers: []v1.Container{ctr(plain)},
			InitContainers: []v1.Container{ctr(extended)}}, want: true},
		{name: "the implicit class name", spec: v1.PodSpec{Containers: []v1.Container{
			ctr(v1.ResourceList{implicit: resource.MustParse("1")})}}, want: true},
		{name: "the overhead's", spec: v1.PodSpec{Containers: []v1.Container{ctr(plain)}, Overhead: extended}, want: true},
		{name: "the pod's own", spec: v1.PodSpec{Containers: []v1.Container{ctr(plain)},
			Resources: &v1.ResourceRequirements{Requests: extended}}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: tt.spec}
			got := specNamesDRAExtendedResource(pod)
			if got != tt.want {
				t.Errorf("specNamesDRAExtendedResource = %v, want %v", got, tt.want)
			}
			for name := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
				if framework.IsDRAExtendedResourceName(name) && !got {
					t.Errorf("the requests name %s, yet the scan found no extended resource", name)
				}
			}
		})
	}
}
