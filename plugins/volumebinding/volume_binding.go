// This file is the plugin itself: its name, how New builds it, and its
// extension points, each handing the pod's volumes to the binder
// (binder.go) at the step of the cycle where they are decided.

package volumebinding

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/helper"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "VolumeBinding"

// stateKey is where PreFilter leaves stateData.
const stateKey framework.StateKey = Name

// stateData is the pod's volumes through one cycle: written in PreFilter,
// filled per node by Filter (on many goroutines, under the mutex), read by
// Score, completed by Reserve and used by PreBind. It is a pointer in
// CycleState, and Clone shares it, as kube-scheduler does: Filter on a
// cloned state (preemption's dry runs) records into the same map, which is
// harmless, as what a node needs does not depend on the pods on it.
type stateData struct {
	// allBound is set by Reserve: every claim of the pod was bound already,
	// and PreBind has nothing to do.
	allBound bool
	// podVolumesByNode is, per node that passed Filter, what it needs.
	podVolumesByNode map[string]*podVolumes
	// podVolumeClaims is the pod's claims as PreFilter sorted them.
	podVolumeClaims *podVolumeClaims
	sync.Mutex
}

// Clone returns d itself (see stateData).
func (d *stateData) Clone() framework.StateData { return d }

// VolumeBinding decides where a pod's PersistentVolumeClaims can be bound
// or provisioned (Filter), prefers nodes with emptier storage (Score),
// reserves the choice in its assume caches (Reserve) and writes it in
// PreBind, waiting for the PV controller to bind.
type VolumeBinding struct {
	// binder does the work of every extension point.
	binder *volumeBinder
	// pvcLister reads claims in PreFilter, before the binder sorts them.
	pvcLister corelisters.PersistentVolumeClaimLister
	// scorer scores a node's storage by the configured shape.
	scorer volumeCapacityScorer
}

var (
	_ framework.PreFilterPlugin   = &VolumeBinding{}
	_ framework.FilterPlugin      = &VolumeBinding{}
	_ framework.PreScorePlugin    = &VolumeBinding{}
	_ framework.ScorePlugin       = &VolumeBinding{}
	_ framework.ReservePlugin     = &VolumeBinding{}
	_ framework.PreBindPlugin     = &VolumeBinding{}
	_ framework.EnqueueExtensions = &VolumeBinding{}
	_ framework.SignPlugin        = &VolumeBinding{}
)

// New builds the plugin from its VolumeBindingArgs (see DecodeArgs). It
// asks the handle's informer factory for the PV and PVC informers (adding
// its assume caches' handlers and a PV index before they start) and for the
// listers of pods, nodes, storage classes, CSINodes, CSIDrivers and
// CSIStorageCapacities; PreBind writes through the handle's client.
func New(ctx context.Context, rawArgs *runtime.RawExtension, h framework.Handle) (framework.Plugin, error) {
	args, err := DecodeArgs(rawArgs)
	if err != nil {
		return nil, err
	}
	if h == nil || h.SharedInformerFactory() == nil {
		return nil, fmt.Errorf("SharedInformerFactory is nil")
	}
	factory := h.SharedInformerFactory()
	binder, err := newVolumeBinder(klog.FromContext(ctx), h.ClientSet(), factory,
		time.Duration(*args.BindTimeoutSeconds)*time.Second)
	if err != nil {
		return nil, fmt.Errorf("failed to build volume binder: %w", err)
	}
	return &VolumeBinding{
		binder:    binder,
		pvcLister: factory.Core().V1().PersistentVolumeClaims().Lister(),
		scorer:    buildScorerFunction(args.Shape),
	}, nil
}

// Name returns Name.
func (pl *VolumeBinding) Name() string { return Name }

// SignPod signs the pod's volumes (VolumesSigner, which leaves out ConfigMap
// and Secret volumes): PreFilter, Filter, PreScore and Score read the pod's
// claims (its persistentVolumeClaim and ephemeral volumes) and nothing else of
// its spec. The claims are looked up in the pod's namespace, which the
// fragment leaves out, as kube-scheduler's does.
func (pl *VolumeBinding) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return []framework.SignFragment{{Key: framework.VolumesSignerName, Value: framework.VolumesSigner(pod)}}, nil
}

// podHasPVCs reports whether the pod uses claims, and checks that each
// exists and is usable. Each error's text is the UnschedulableAndUnresolvable
// reason: a claim not found (for a generic ephemeral volume, "waiting for
// ephemeral volume controller to create" it), lost, being deleted, or, for
// an ephemeral volume, not owned by the pod.
func (pl *VolumeBinding) podHasPVCs(pod *v1.Pod) (bool, error) {
	hasPVC := false
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		pvcName, isEphemeral, ok := helper.VolumeClaimName(pod, vol)
		if !ok {
			continue
		}
		hasPVC = true
		pvc, err := pl.pvcLister.PersistentVolumeClaims(pod.Namespace).Get(pvcName)
		if err != nil {
			// Right after a pod with an ephemeral volume is created, its
			// claim does not exist yet: say who will make it.
			if isEphemeral && apierrors.IsNotFound(err) {
				err = fmt.Errorf("waiting for ephemeral volume controller to create the persistentvolumeclaim %q", pvcName)
			}
			return hasPVC, err
		}
		if pvc.Status.Phase == v1.ClaimLost {
			return hasPVC, fmt.Errorf("persistentvolumeclaim %q bound to non-existent persistentvolume %q",
				pvc.Name, pvc.Spec.VolumeName)
		}
		if pvc.DeletionTimestamp != nil {
			return hasPVC, fmt.Errorf("persistentvolumeclaim %q is being deleted", pvc.Name)
		}
		if isEphemeral {
			if err := ephemeral.VolumeIsForPod(pod, pvc); err != nil {
				return hasPVC, err
			}
		}
	}
	return hasPVC, nil
}

// PreFilter checks the pod's claims and sorts them (GetPodVolumeClaims).
//
// A claim that is missing or unusable (podHasPVCs), or one the PV controller
// should bind on its own and has not, is UnschedulableAndUnresolvable: no
// node, and no preemption, can help; the pod waits for a PVC or PV event. A
// pod without claims is Skip. Anything unexpected is an Error.
func (pl *VolumeBinding) PreFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	logger := klog.FromContext(ctx)
	hasPVC, err := pl.podHasPVCs(pod)
	if err != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
	}
	if !hasPVC {
		// Written for PreScore, Score and Reserve, which still run.
		state.Write(stateKey, &stateData{})
		return nil, framework.NewStatus(framework.Skip)
	}
	claims, err := pl.binder.GetPodVolumeClaims(logger, pod)
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	if len(claims.unboundClaimsImmediate) > 0 {
		// The PV controller binds them; the PVC update requeues the pod.
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnboundImmediate)
	}
	state.Write(stateKey, &stateData{
		podVolumesByNode: map[string]*podVolumes{},
		podVolumeClaims: &podVolumeClaims{
			boundClaims:                claims.boundClaims,
			unboundClaimsDelayBinding:  claims.unboundClaimsDelayBinding,
			unboundVolumesDelayBinding: claims.unboundVolumesDelayBinding,
		},
	})
	return nil, nil
}

// PreFilterExtensions returns nil: what a node needs does not depend on the
// pods on it.
func (pl *VolumeBinding) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// getStateData reads PreFilter's stateData.
func getStateData(cs *framework.CycleState) (*stateData, error) {
	data, err := cs.Read(stateKey)
	if err != nil {
		return nil, err
	}
	s, ok := data.(*stateData)
	if !ok {
		return nil, errors.New("unable to convert state into stateData")
	}
	return s, nil
}

// Filter asks the binder whether node can have the pod's volumes
// (FindPodVolumes) and keeps the answer for Score, Reserve and PreBind.
//
// A node that cannot is UnschedulableAndUnresolvable, with every reason that
// applies in one status: evicting pods frees no volume. An unexpected
// failure (a class or driver that cannot be read) is an Error.
func (pl *VolumeBinding) Filter(ctx context.Context, cs *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	state, err := getStateData(cs)
	if err != nil {
		return framework.AsStatus(err)
	}
	vols, reasons, err := pl.binder.FindPodVolumes(klog.FromContext(ctx), pod, state.podVolumeClaims, node)
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(reasons) > 0 {
		texts := make([]string, 0, len(reasons))
		for _, r := range reasons {
			texts = append(texts, string(r))
		}
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, texts...)
	}
	state.Lock()
	state.podVolumesByNode[node.Name] = vols
	state.Unlock()
	return nil
}

// PreScore lets Score run for every pod: with StorageCapacityScoring on,
// kube-scheduler never skips it (a pod without claims scores 0 everywhere).
// A missing state is an Error.
func (pl *VolumeBinding) PreScore(_ context.Context, cs *framework.CycleState, _ *v1.Pod,
	_ []*framework.NodeInfo) *framework.Status {
	if _, err := getStateData(cs); err != nil {
		return framework.AsStatus(err)
	}
	return nil
}

// Score scores the storage the pod's volumes would use on the node
// (classResources, then the shape); a node Filter kept nothing for scores
// 0. Scores are already 0-100: there is no NormalizeScore.
func (pl *VolumeBinding) Score(_ context.Context, cs *framework.CycleState, _ *v1.Pod,
	nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	state, err := getStateData(cs)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	vols, ok := state.podVolumesByNode[nodeInfo.Node().Name]
	if !ok {
		return 0, nil
	}
	return pl.scorer(classResources(vols)), nil
}

// ScoreExtensions returns nil: Score's scores need no normalising.
func (pl *VolumeBinding) ScoreExtensions() framework.ScoreExtensions { return nil }

// Reserve assumes the chosen node's volumes in the binder's caches
// (AssumePodVolumes), so the next cycles see them taken before PreBind
// writes them, and records whether everything was bound already. A pod
// without claims has nothing to reserve. A failure is an Error.
func (pl *VolumeBinding) Reserve(ctx context.Context, cs *framework.CycleState, pod *v1.Pod,
	nodeName string) *framework.Status {
	state, err := getStateData(cs)
	if err != nil {
		return framework.AsStatus(err)
	}
	// One node is reserved per cycle: no lock needed.
	vols, ok := state.podVolumesByNode[nodeName]
	if !ok {
		state.allBound = true
		return nil
	}
	allBound, err := pl.binder.AssumePodVolumes(klog.FromContext(ctx), pod, nodeName, vols)
	if err != nil {
		return framework.AsStatus(err)
	}
	state.allBound = allBound
	return nil
}

// Unreserve restores what Reserve assumed. It never undoes what PreBind
// already wrote to the apiserver, and is idempotent: restoring twice, or
// without a Reserve, does nothing.
func (pl *VolumeBinding) Unreserve(_ context.Context, cs *framework.CycleState, _ *v1.Pod, nodeName string) {
	state, err := getStateData(cs)
	if err != nil {
		return
	}
	vols, ok := state.podVolumesByNode[nodeName]
	if !ok {
		return
	}
	pl.binder.RevertAssumedPodVolumes(vols)
}

// errNoPodVolumeForNode is the error for a node Filter kept nothing for.
var errNoPodVolumeForNode = errors.New("no pod volume found for node")

// PreBindPreFlight says whether PreBind has work: Skip when every claim was
// bound already (or there are none), Success otherwise, and an Error if
// Filter kept nothing for the node.
func (pl *VolumeBinding) PreBindPreFlight(_ context.Context, cs *framework.CycleState, _ *v1.Pod,
	nodeName string) *framework.Status {
	state, err := getStateData(cs)
	if err != nil {
		return framework.AsStatus(err)
	}
	if state.allBound {
		return framework.NewStatus(framework.Skip)
	}
	if _, ok := state.podVolumesByNode[nodeName]; !ok {
		return framework.AsStatus(fmt.Errorf("%w %q", errNoPodVolumeForNode, nodeName))
	}
	return nil
}

// PreBind writes the reserved PVs and claims and waits until the PV
// controller has bound every claim (BindPodVolumes). A failure, or no
// binding within bindTimeoutSeconds, is an Error: the pod is retried after
// backoff, and Unreserve restores the caches.
func (pl *VolumeBinding) PreBind(ctx context.Context, cs *framework.CycleState, pod *v1.Pod,
	nodeName string) *framework.Status {
	state, err := getStateData(cs)
	if err != nil {
		return framework.AsStatus(err)
	}
	if state.allBound {
		return nil
	}
	// One node is pre-bound per pod: no lock needed.
	vols, ok := state.podVolumesByNode[nodeName]
	if !ok {
		return framework.AsStatus(fmt.Errorf("%w %q", errNoPodVolumeForNode, nodeName))
	}
	logger := klog.FromContext(ctx)
	logger.V(5).Info("Trying to bind volumes for pod", "pod", klog.KObj(pod))
	if err := pl.binder.BindPodVolumes(ctx, pod, vols); err != nil {
		logger.V(5).Info("Failed to bind volumes for pod", "pod", klog.KObj(pod), "err", err)
		return framework.AsStatus(err)
	}
	logger.V(5).Info("Success binding volumes for pod", "pod", klog.KObj(pod))
	return nil
}
