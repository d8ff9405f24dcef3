// Package dynamicresources is kube-scheduler v1.37.1's DynamicResources
// plugin: it allocates devices to a pod's ResourceClaims with the
// structured allocator of k8s.io/dynamic-resource-allocation, as
// kube-scheduler does with its default feature gates.
//
// A pod meets it at every step:
//
//	PreEnqueue   the pod's claims exist (a template's claim is created by the
//	             resourceclaim controller, which names it in the pod's status)
//	PreFilter    claims checked, classes exist, allocator built over what is
//	             allocated (claims in the assume cache and in flight)
//	Filter       per node: allocated claims usable there, the others allocatable
//	PostFilter   no node fits: free one idle allocated claim
//	PodGroupPostFilter  a pod group fits nowhere: the same for each member
//	Score        prefer nodes where earlier firstAvailable alternatives fit
//	Reserve      the chosen node's allocations go in flight
//	PreBind      finalizer, allocation and reservedFor written; wait for the
//	             devices' binding conditions
//	Unreserve    in-flight allocations dropped, the pod's reservation removed
//
// Where minisched does less than kube-scheduler, with the same answers:
// when the claims to allocate ask for one class, the allocator gets views
// of the slices holding only the devices that class selects
// (sliceviews.go), and Filter gives a node the last cycle's answer while
// nothing it depends on changed (memo.go).
//
// A pod that asks for an extended resource (example.com/gpu) which its
// node does not advertise but a DeviceClass backs gets devices too, through
// a claim the plugin makes for it and follows through the same steps
// (extended.go).
//
// In a pod-group cycle (chapter 19) the members are tried one after the
// other, and a claim two members share is allocated once: the first
// member's Reserve puts the allocation in flight, and the next members'
// PreFilter reuses it instead of waiting for PreBind to write it. The
// group's cycle state records those claims (podgroup_postfilter.go).
//
// The shared state (claims, slices, classes) is the scheduler's, one for
// all profiles: see package dramanager. Every "unschedulable" outcome is
// UnschedulableAndUnresolvable, as upstream's statusUnschedulable makes it,
// so preemption never counts on a node this plugin rejected.
//
// For a pod without claims PreFilter records that and skips. That record
// is why the plugin matters to claim-less pods too: when an earlier
// PreFilter (a missing PersistentVolumeClaim, say) rejected the pod as
// unresolvable, this PreFilter never ran, PostFilter's read of the record
// fails with "not found", and that Error stops the PostFilter chain:
// preemption is not tried, and ". not found" ends the FailedScheduling
// message. kube-scheduler does exactly that, so minisched does too (chapter
// 16 tells the story).
package dynamicresources

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minisched/minisched/minisched/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "DynamicResources"

// celCacheSize is how many compiled CEL expressions are kept across
// cycles, kube-scheduler's 10.
const celCacheSize = 10

// DynamicResources allocates devices to the pod's ResourceClaims.
type DynamicResources struct {
	// filterTimeout bounds one node's allocation in Filter (0: none);
	// bindingTimeout bounds PreBind's wait for binding conditions, and
	// the age of an allocation whose conditions are still unmet.
	filterTimeout  time.Duration
	bindingTimeout time.Duration

	fh        framework.Handle
	clientset kubernetes.Interface
	// draManager is the scheduler's shared DRA state.
	draManager framework.SharedDRAManager
	// celCache keeps compiled CEL selectors across cycles.
	celCache *cel.Cache
	// views keeps which devices each class selects, across cycles, and
	// narrows what the allocator is given (sliceviews.go).
	views *sliceViews
	// memo keeps the allocator's answers per node while they hold
	// (memo.go).
	memo *allocationMemo
	// clock times allocations and the binding-conditions wait (a fake in
	// tests).
	clock clock.WithTicker
	// topologyAwareWorkloadScheduling is the gate: PodGroupPostFilter then
	// leaves groups with scheduling constraints alone.
	topologyAwareWorkloadScheduling bool
}

var (
	_ framework.PreEnqueuePlugin         = &DynamicResources{}
	_ framework.PreFilterPlugin          = &DynamicResources{}
	_ framework.FilterPlugin             = &DynamicResources{}
	_ framework.PostFilterPlugin         = &DynamicResources{}
	_ framework.PodGroupPostFilterPlugin = &DynamicResources{}
	_ framework.ScorePlugin              = &DynamicResources{}
	_ framework.ReservePlugin            = &DynamicResources{}
	_ framework.PreBindPlugin            = &DynamicResources{}
	_ framework.EnqueueExtensions        = &DynamicResources{}
	_ framework.SignPlugin               = &DynamicResources{}
)

// New returns the plugin. Its args are kube-scheduler's
// DynamicResourcesArgs (see args.go). It asks the handle's shared DRA
// state for its parts now, so that their informers start with the others.
func New(_ context.Context, raw *runtime.RawExtension, fh framework.Handle) (framework.Plugin, error) {
	args, err := decodeArgs(raw)
	if err != nil {
		return nil, err
	}
	if fh == nil || fh.SharedDRAManager() == nil {
		return nil, errors.New("SharedDRAManager is nil")
	}
	dra := fh.SharedDRAManager()
	// Touch each part: a lazily built manager starts its informers now.
	dra.ResourceClaims()
	dra.ResourceSlices()
	dra.DeviceClasses()
	return &DynamicResources{
		filterTimeout:  args.FilterTimeout.Duration,
		bindingTimeout: args.BindingTimeout.Duration,
		fh:             fh,
		clientset:      fh.ClientSet(),
		draManager:     dra,
		celCache:       NewCELCache(),
		views:          &sliceViews{},
		memo:           &allocationMemo{},
		clock:          clock.RealClock{},

		topologyAwareWorkloadScheduling: fh.FeatureGates().TopologyAwareWorkloadScheduling,
	}, nil
}

// Name returns Name.
func (pl *DynamicResources) Name() string { return Name }

// errReasonSign is why SignPod refuses a pod, kube-scheduler's words.
const errReasonSign = "pods with dra resource claims are not signable"

// SignPod refuses (Unschedulable) a pod with resource claims: which devices
// a node can give it depends on what other pods' claims hold, and a claim
// may be shared or reach beyond one node, so kube-scheduler signs no such
// pod (kubernetes/kubernetes#134986). A pod without claims gets no
// fragment. A pod that requests an extended resource a DeviceClass backs is
// refused by NodeResourcesFit's SignPod.
func (pl *DynamicResources) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	if len(pod.Spec.ResourceClaims) > 0 {
		return nil, framework.NewStatus(framework.Unschedulable, errReasonSign)
	}
	return nil, nil
}

// PreEnqueue keeps a pod out of activeQ while one of its claims is missing,
// being deleted, or (made from a template) not the pod's. One of the events
// registered in EventsToRegister lets it try again.
func (pl *DynamicResources) PreEnqueue(ctx context.Context, pod *v1.Pod) *framework.Status {
	if err := pl.foreachPodResourceClaim(pod, nil); err != nil {
		return statusUnschedulable(klog.FromContext(ctx), err.Error())
	}
	return nil
}

// podResourceClaims returns the pod's claims from the assume cache, in the
// order of spec.resourceClaims, leaving out those that need no claim (a
// template whose claim the controller chose not to create).
func (pl *DynamicResources) podResourceClaims(pod *v1.Pod) ([]*resourceapi.ResourceClaim, error) {
	claims := make([]*resourceapi.ResourceClaim, 0, len(pod.Spec.ResourceClaims))
	err := pl.foreachPodResourceClaim(pod, func(claim *resourceapi.ResourceClaim) {
		// The cache's object is never modified; a change replaces it.
		claims = append(claims, claim)
	})
	return claims, err
}

// foreachPodResourceClaim checks that each claim of the pod exists, is not
// being deleted and, when made from a template, was made for this pod; it
// calls cb (if any) on each. The error texts are kube-scheduler's.
func (pl *DynamicResources) foreachPodResourceClaim(pod *v1.Pod, cb func(*resourceapi.ResourceClaim)) error {
	for i := range pod.Spec.ResourceClaims {
		claimName, mustCheckOwner, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[i])
		if err != nil {
			return err
		}
		// A template may legitimately produce no claim.
		if claimName == nil {
			continue
		}
		claim, err := pl.draManager.ResourceClaims().Get(pod.Namespace, *claimName)
		if err != nil {
			return err
		}
		if claim.DeletionTimestamp != nil {
			return fmt.Errorf("resourceclaim %q is being deleted", claim.Name)
		}
		if mustCheckOwner {
			if err := resourceclaim.IsForPod(pod, claim, false); err != nil {
				return err
			}
		}
		if cb != nil {
			cb(claim)
		}
	}
	return nil
}

// statusUnschedulable logs the reason where it arises (at V(5)) and
// returns it as UnschedulableAndUnresolvable: kube-scheduler's helper of
// that name does, so no node this plugin rejects is a preemption candidate.
func statusUnschedulable(logger klog.Logger, reason string, kv ...any) *framework.Status {
	if loggerV := logger.V(5); loggerV.Enabled() {
		loggerV.Info("Pod unschedulable", append(kv, "reason", reason)...)
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, reason)
}

// statusError logs err where it arises (at V(5)) and returns it as Error.
func statusError(logger klog.Logger, err error, kv ...any) *framework.Status {
	if loggerV := logger.V(5); loggerV.Enabled() {
		loggerV.Error(err, "DynamicResources failed", kv...)
	}
	return framework.AsStatus(err)
}
