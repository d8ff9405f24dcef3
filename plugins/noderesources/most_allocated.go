// This file is NodeResourcesFit's MostAllocated strategy: the fuller a node
// would be, the higher its score, so pods pack onto few nodes (bin packing).

package noderesources

import (
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// mostAllocatedScorer averages, weighted, each resource's used share:
// Σ weight × requested × 100 / allocatable, over the weights of the
// resources that count, in integer arithmetic.
func mostAllocatedScorer(resources []configv1.ResourceSpec) resourceScorer {
	return weightedAverageScorer(resources, mostRequestedScore)
}

// mostRequestedScore is the used share of capacity on a 0-100 scale. Use
// above capacity counts as full: the non-zero defaults of pods without
// requests can push the sum past what the node has.
func mostRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 {
		return 0
	}
	if requested > capacity {
		requested = capacity
	}
	return requested * framework.MaxNodeScore / capacity
}
