// Package prioritysort is the QueueSort plugin: it orders activeQ by pod
// priority, oldest first among equals, as kube-scheduler's PrioritySort does.
package prioritysort

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/minisched/minisched/minisched/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "PrioritySort"

// PrioritySort orders pending pods: higher priority first, and among pods of
// equal priority the one queued earlier first.
type PrioritySort struct{}

var _ framework.QueueSortPlugin = &PrioritySort{}

// New returns the plugin. It takes no args; any pluginConfig is ignored, as
// kube-scheduler does for plugins without args.
func New(_ context.Context, _ *runtime.RawExtension, _ framework.Handle) (framework.Plugin, error) {
	return &PrioritySort{}, nil
}

// Name returns Name.
func (pl *PrioritySort) Name() string { return Name }

// Less reports whether a should be popped before b: its priority is higher,
// or equal and it was queued earlier. A pod without a resolved priority
// counts as priority 0; a pod group counts with its PodGroup's priority,
// so a group and a pod compare as two pods would.
func (pl *PrioritySort) Less(a, b framework.QueuedEntity) bool {
	pa, pb := a.Priority(), b.Priority()
	return pa > pb || (pa == pb && a.Params().Timestamp.Before(b.Params().Timestamp))
}
