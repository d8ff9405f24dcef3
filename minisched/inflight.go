// The pods the scheduler is working on, and where each is, for a live view.
// Nothing is tracked for it: the queue knows which pods are popped and not
// yet Done, the profiles which wait on Permit, and the cache which are
// assumed (chosen a node, not yet confirmed by the informer).

package minisched

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minisched/minisched/minisched/framework"
)

// Phase is where an in-flight pod is.
type Phase string

// The phases of an in-flight pod.
const (
	// Scheduling: its scheduling cycle runs and has not assumed it on a
	// node (or its failure is being handled).
	Scheduling Phase = "Scheduling"
	// WaitingOnPermit: a Permit plugin said Wait; it is assumed on its
	// node meanwhile.
	WaitingOnPermit Phase = "WaitingOnPermit"
	// Binding: assumed on its node and not waiting on Permit: from
	// Reserve on, through PreBind, Bind and PostBind, until the informer
	// confirms the binding.
	Binding Phase = "Binding"
)

// InFlightPod is a pod the scheduler is working on: its phase, and the node
// it was assumed on ("" while it is being scheduled).
type InFlightPod struct {
	Pod   *v1.Pod
	Phase Phase
	Node  string
}

// InFlight lists the pods the scheduler is working on, by namespace and
// name: popped are the pods the queue has in flight (queue.Contents), to
// which it adds the assumed ones (the queue is Done with a pod once Permit
// let it through).
func (s *Scheduler) InFlight(popped []*v1.Pod) []InFlightPod {
	waiting := map[types.UID]bool{}
	for _, schedFramework := range s.Profiles {
		schedFramework.IterateOverWaitingPods(func(wp framework.WaitingPod) { waiting[wp.GetPod().UID] = true })
	}
	byUID := map[types.UID]InFlightPod{}
	for _, pod := range popped {
		byUID[pod.UID] = InFlightPod{Pod: pod, Phase: Scheduling}
	}
	for _, pod := range s.Cache.AssumedPods() {
		phase := Binding
		if waiting[pod.UID] {
			phase = WaitingOnPermit
		}
		byUID[pod.UID] = InFlightPod{Pod: pod, Phase: phase, Node: pod.Spec.NodeName}
	}
	out := make([]InFlightPod, 0, len(byUID))
	for _, p := range byUID {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Pod, out[j].Pod
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}
