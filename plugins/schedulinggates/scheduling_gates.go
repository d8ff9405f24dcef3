// Package schedulinggates is kube-scheduler's SchedulingGates plugin: it
// keeps a pod with spec.schedulingGates out of activeQ until an external
// controller has removed every gate.
package schedulinggates

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "SchedulingGates"

// SchedulingGates gates pods that carry scheduling gates. It keeps no state.
type SchedulingGates struct{}

var (
	_ framework.PreEnqueuePlugin  = &SchedulingGates{}
	_ framework.EnqueueExtensions = &SchedulingGates{}
)

// New returns the plugin. It takes no args; any pluginConfig is ignored, as
// for the other plugins without args.
func New(_ context.Context, _ *runtime.RawExtension, _ framework.Handle) (framework.Plugin, error) {
	return &SchedulingGates{}, nil
}

// Name returns Name.
func (pl *SchedulingGates) Name() string { return Name }

// PreEnqueue lets a pod without scheduling gates in. A gated pod is held back
// with UnschedulableAndUnresolvable and the message
// "waiting for scheduling gates: [gate1 gate2]", gates in spec order, as in
// kube-scheduler. Only the gates' removal, which the scheduler never does
// itself, can let it in.
func (pl *SchedulingGates) PreEnqueue(_ context.Context, pod *v1.Pod) *framework.Status {
	if len(pod.Spec.SchedulingGates) == 0 {
		return nil
	}
	gates := make([]string, 0, len(pod.Spec.SchedulingGates))
	for _, g := range pod.Spec.SchedulingGates {
		gates = append(gates, g.Name)
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable,
		fmt.Sprintf("waiting for scheduling gates: %v", gates))
}

// EventsToRegister lists the one event that can lift the gate: the gated
// pod's own update removing its last scheduling gate.
func (pl *SchedulingGates) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{
			Event: framework.ClusterEvent{Resource: framework.UnscheduledPod,
				ActionType: framework.UpdatePodSchedulingGatesEliminated},
			QueueingHintFn: isSchedulableAfterGatesEliminated,
		},
	}, nil
}

// isSchedulableAfterGatesEliminated queues the pod when its updated version
// has no scheduling gates left. The event is only raised in that case, so
// kube-scheduler queues unconditionally; checking costs nothing and guards
// against an event raised for a pod that is still gated.
func isSchedulableAfterGatesEliminated(logger klog.Logger, pod *v1.Pod,
	_, newObj interface{}) (framework.QueueingHint, error) {
	_, newPod, err := framework.As[*v1.Pod](nil, newObj)
	if err == nil && newPod == nil {
		err = fmt.Errorf("pod update without the updated pod")
	}
	if err != nil {
		return framework.Queue, err
	}
	if len(newPod.Spec.SchedulingGates) > 0 {
		logger.V(5).Info("Pod still has scheduling gates",
			"pod", klog.KObj(pod), "schedulingGates", len(newPod.Spec.SchedulingGates))
		return framework.QueueSkip, nil
	}
	logger.V(5).Info("Pod's last scheduling gate was removed; it may be scheduled now", "pod", klog.KObj(pod))
	return framework.Queue, nil
}
