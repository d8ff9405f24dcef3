package defaultpreemption

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// callExtenders lets each interested preempting extender trim the
// candidates: it receives every candidate node with its victims and answers
// with the ones it keeps, each with the victims it agrees to (possibly
// others of the node's pods). The next extender sees what the previous one
// kept. A failing ignorable extender, or an ignorable one that names a node
// without victims, is passed over (the node dropped); the same from a
// required extender is an error. Extenders that do not preempt may still
// reject the nominated node later: the pod then tries elsewhere.
func (pl *DefaultPreemption) callExtenders(logger klog.Logger, pod *v1.Pod, candidates []*candidate) ([]*candidate, error) {
	extenders := pl.fh.Extenders()
	if len(extenders) == 0 || len(candidates) == 0 {
		return candidates, nil
	}
	victimsMap := make(map[string]*extenderv1.Victims, len(candidates))
	for _, c := range candidates {
		victimsMap[c.name] = &extenderv1.Victims{Pods: c.victims, NumPDBViolations: int64(c.numPDBViolations)}
	}
	nodeInfos := pl.fh.SnapshotSharedLister().NodeInfos()
	for _, ext := range extenders {
		if !ext.SupportsPreemption() || !ext.IsInterested(pod) {
			continue
		}
		kept, err := ext.ProcessPreemption(pod, victimsMap, nodeInfos)
		if err != nil {
			if ext.IsIgnorable() {
				logger.V(2).Info("Skipped extender as it returned error and has ignorable flag set",
					"extender", ext.Name(), "err", err)
				continue
			}
			return nil, err
		}
		for node, victims := range kept {
			if victims != nil && len(victims.Pods) > 0 {
				continue
			}
			if !ext.IsIgnorable() {
				return nil, fmt.Errorf("expected at least one victim pod on node %q", node)
			}
			delete(kept, node)
			logger.V(2).Info("Ignored node for which the extender didn't report victims",
				"node", klog.KRef("", node), "extender", ext.Name())
		}
		victimsMap = kept
		if len(victimsMap) == 0 {
			break // no preemption can happen, whatever the others say
		}
	}
	out := make([]*candidate, 0, len(victimsMap))
	for node, victims := range victimsMap {
		out = append(out, &candidate{name: node, victims: victims.Pods, numPDBViolations: int(victims.NumPDBViolations)})
	}
	// By name, so the choice among equal candidates does not hang on map
	// order.
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}
