// Shared fixtures for DynamicResources' tests: the plugin built inside a
// real framework over fake-clientset informers and the shared DRA state
// (pluginEnv), and the DRA objects of kube-scheduler's own tests: a device
// class, node-local slices, claims, and pods that use them.
package dynamicresources

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/dynamicresources/dramanager"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// The names of kube-scheduler's DRA plugin tests.
const (
	namespace  = "default"
	podName    = "my-pod"
	podUID     = types.UID("1234")
	claimName  = "my-pod-my-resource"
	className  = "my-resource-class"
	driverName = "some-driver"
	nodeName   = "worker"
)

// deviceClass selects every device (no selectors): the class only has to
// exist.
var deviceClass = &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: className}}

// makePod returns the test pod with one claim per name, each naming the
// ResourceClaim of that name directly.
func makePod(claims ...string) *v1.Pod {
	pod := st.MakePod().Name(podName).Namespace(namespace).UID(string(podUID)).Obj()
	for _, c := range claims {
		pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, v1.PodResourceClaim{Name: c, ResourceClaimName: ptr.To(c)})
	}
	return pod
}

// makeClaim returns an unallocated claim with one request "req-1" for one
// device of className, at resourceVersion 1.
func makeClaim(name string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID(name + "-uid"), ResourceVersion: "1"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "req-1", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: className,
				AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		}}}},
	}
}

// withFirstAvailable is claim whose request "req-1" lists alternatives, one
// per class, named sub-0, sub-1...
func withFirstAvailable(claim *resourceapi.ResourceClaim, classes ...string) *resourceapi.ResourceClaim {
	claim = claim.DeepCopy()
	req := &claim.Spec.Devices.Requests[0]
	req.Exactly = nil
	for i, c := range classes {
		req.FirstAvailable = append(req.FirstAvailable, resourceapi.DeviceSubRequest{
			Name: fmt.Sprintf("sub-%d", i), DeviceClassName: c, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
		})
	}
	return claim
}

// allocatedOn is claim allocated device on node (a node selector on its
// name), as PreBind leaves it: with the finalizer and a timestamp.
func allocatedOn(claim *resourceapi.ResourceClaim, node, device string) *resourceapi.ResourceClaim {
	claim = claim.DeepCopy()
	claim.Finalizers = []string{resourceapi.Finalizer}
	claim.Status.Allocation = &resourceapi.AllocationResult{
		Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
			Request: "req-1", Driver: driverName, Pool: node, Device: device,
		}}},
		NodeSelector:        nodeNameSelector(node),
		AllocationTimestamp: &metav1.Time{Time: time.Now()},
	}
	return claim
}

// reservedFor is claim reserved for the pods named, with their UIDs.
func reservedFor(claim *resourceapi.ResourceClaim, pods ...*v1.Pod) *resourceapi.ResourceClaim {
	claim = claim.DeepCopy()
	for _, p := range pods {
		claim.Status.ReservedFor = append(claim.Status.ReservedFor,
			resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
	}
	return claim
}

// nodeNameSelector selects one node by name, as the allocator's
// node-local results do.
func nodeNameSelector(node string) *v1.NodeSelector {
	return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{
		Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node},
	}}}}}
}

// makeSlice returns the node-local slice of node (pool = node name) with
// the devices named.
func makeSlice(node string, devices ...string) *resourceapi.ResourceSlice {
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-slice"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver: driverName, NodeName: ptr.To(node),
			Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1},
		},
	}
	for _, d := range devices {
		slice.Spec.Devices = append(slice.Spec.Devices, resourceapi.Device{Name: d})
	}
	return slice
}

// makeNode returns a NodeInfo of the named node.
func makeNode(name string) *framework.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(st.MakeNode().Name(name).Obj())
	return ni
}

// pluginEnv is the plugin inside a framework, over a fake clientset holding
// the test's objects, with the informers started and synced.
type pluginEnv struct {
	fw      *framework.Framework
	pl      *DynamicResources
	client  *fake.Clientset
	manager *dramanager.Manager
	// recorder holds the events the plugin recorded.
	recorder *events.FakeRecorder
	clock    *testingclock.FakeClock
}

// newPluginEnv builds the env; args are the plugin's (nil: defaults).
func newPluginEnv(t *testing.T, args *runtime.RawExtension, objs ...runtime.Object) *pluginEnv {
	t.Helper()
	return newPluginEnvWithGates(t, features.Gates{}, args, objs...)
}

// newPluginEnvWithGates is newPluginEnv under gates; with GenericWorkload
// the plugin is a PodGroupPostFilter plugin too.
func newPluginEnvWithGates(t *testing.T, gates features.Gates, args *runtime.RawExtension,
	objs ...runtime.Object) *pluginEnv {
	t.Helper()
	logger, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	manager := dramanager.New(logger, factory, client)
	t.Cleanup(manager.Stop)
	recorder := events.NewFakeRecorder(10)
	fw, pl, err := plugintesting.NewPluginFramework[*DynamicResources](ctx, Name, New, &configv1.Plugins{
		PreEnqueue: plugintesting.Enable(Name),
		PreFilter:  plugintesting.Enable(Name),
		Filter:     plugintesting.Enable(Name),
		PostFilter: plugintesting.Enable(Name),
		Score:      plugintesting.Enable(Name),
		Reserve:    plugintesting.Enable(Name),
		PreBind:    plugintesting.Enable(Name),

		PodGroupPostFilter: plugintesting.Enable(Name),
	}, args, framework.WithClientSet(client), framework.WithInformerFactory(factory),
		framework.WithSharedDRAManager(manager), framework.WithEventRecorder(recorder),
		framework.WithFeatureGates(gates))
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	// The tracker and the assume cache process the informers' lists in
	// their own handlers: wait for them too.
	synced := manager.AddClaimEventHandler(nopHandler{})
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) {
			slices, err := manager.ResourceSlices().ListWithDeviceTaintRules()
			return synced() && err == nil && len(slices) == countSlices(objs), nil
		}); err != nil {
		t.Fatalf("DRA state did not sync: %v", err)
	}
	env := &pluginEnv{fw: fw, pl: pl, client: client, manager: manager, recorder: recorder,
		clock: testingclock.NewFakeClock(time.Now())}
	pl.clock = env.clock
	return env
}

// nopHandler ignores events.
type nopHandler struct{}

func (nopHandler) OnAdd(any, bool)   {}
func (nopHandler) OnUpdate(any, any) {}
func (nopHandler) OnDelete(any)      {}

func countSlices(objs []runtime.Object) int {
	n := 0
	for _, o := range objs {
		if _, ok := o.(*resourceapi.ResourceSlice); ok {
			n++
		}
	}
	return n
}

// claimInAPI returns the claim as the fake apiserver holds it.
func (e *pluginEnv) claimInAPI(t *testing.T, name string) *resourceapi.ResourceClaim {
	t.Helper()
	claim, err := e.client.ResourceV1().ResourceClaims(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return claim
}
