// This file is what a profile hands its plugins: the accessors of Handle,
// which give what the profile was built with (the snapshot, the clients,
// the informers, the DRA state, the parallelism, the extenders, the
// metrics), and the pods waiting on Permit (waiting_pods.go). Handle's other
// methods live with their stories: NominatedPodsForNode and Activate in
// nominated_pods.go, RunFilterPluginsWithNominatedPods and the
// PreFilterExtensions runners in run_filter.go, the Reserve runners in
// run_bind.go.

package framework

import (
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"

	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/metrics"
)

var _ Handle = &Framework{}

// SnapshotSharedLister implements Handle.
func (f *Framework) SnapshotSharedLister() SharedLister { return f.snapshot }

// MutableSnapshotSharedLister implements Handle: the snapshot, if it can
// be changed (the scheduler's always can), else nil.
func (f *Framework) MutableSnapshotSharedLister() MutableSnapshotSharedLister {
	m, _ := f.snapshot.(MutableSnapshotSharedLister)
	return m
}

// ClientSet implements Handle.
func (f *Framework) ClientSet() kubernetes.Interface { return f.clientSet }

// EventRecorder implements Handle.
func (f *Framework) EventRecorder() events.EventRecorder { return f.recorder }

// SharedInformerFactory implements Handle.
func (f *Framework) SharedInformerFactory() informers.SharedInformerFactory { return f.informers }

// PodGroupManager returns the cache's knowledge of pod groups (nil without
// GenericWorkload).
func (f *Framework) PodGroupManager() PodGroupManager { return f.podGroupManager }

// SharedDRAManager returns the DRA state every profile shares.
func (f *Framework) SharedDRAManager() SharedDRAManager { return f.draManager }

// Parallelizer implements Handle.
func (f *Framework) Parallelizer() Parallelizer { return f.parallelizer }

// Metrics returns the metrics the framework records to (nil: none).
func (f *Framework) Metrics() *metrics.Metrics { return f.metrics }

// FeatureGates implements Handle.
func (f *Framework) FeatureGates() features.Gates { return f.gates }

// Extenders returns the HTTP extenders, ignorable ones last.
func (f *Framework) Extenders() []Extender { return f.extenders }

// GetWaitingPod implements Handle.
func (f *Framework) GetWaitingPod(uid types.UID) WaitingPod {
	if wp := f.waitingPods.get(uid); wp != nil {
		return wp
	}
	return nil
}

// IterateOverWaitingPods implements Handle.
func (f *Framework) IterateOverWaitingPods(fn func(WaitingPod)) { f.waitingPods.iterate(fn) }

// RejectWaitingPod implements Handle.
func (f *Framework) RejectWaitingPod(uid types.UID) bool {
	if wp := f.waitingPods.get(uid); wp != nil {
		wp.Reject("", "removed")
		return true
	}
	return false
}
