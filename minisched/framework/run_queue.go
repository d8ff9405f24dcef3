// This file runs the extension points the scheduling queue calls, before a
// pod's cycle: PreEnqueue, which gates a pod on its way into activeQ, and
// QueueSort, whose Less orders activeQ. (The queue also signs each pod for
// OpportunisticBatching: Framework.SignPod, in batch.go.)

package framework

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// RunPreEnqueuePlugins runs PreEnqueue plugins in order; the first that does
// not return Success gates the pod (its status names the plugin). A code
// other than the rejection codes comes back as an Error.
func (f *Framework) RunPreEnqueuePlugins(ctx context.Context, pod *v1.Pod) *Status {
	for _, pl := range f.preEnqueuePlugins {
		s := pl.PreEnqueue(ctx, pod)
		if s.IsSuccess() {
			continue
		}
		if s.IsRejected() {
			return s.WithPlugin(pl.Name())
		}
		return pluginError("PreEnqueue", pl, s)
	}
	return nil
}

// QueueSortFunc returns the QueueSort plugin's Less.
func (f *Framework) QueueSortFunc() LessFunc { return f.queueSortPlugins[0].Less }

// QueueSortPluginName names the QueueSort plugin (profiles must agree on it).
func (f *Framework) QueueSortPluginName() string { return f.queueSortPlugins[0].Name() }
