// This file is NodeResourcesFit's LeastAllocated strategy, kube-scheduler's
// default: the more room a node would have left, the higher its score, so
// pods spread out.

package noderesources

import (
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// leastAllocatedScorer averages, weighted, each resource's unused share:
// Σ weight × (allocatable − requested) × 100 / allocatable, over the weights
// of the resources that count, in integer arithmetic.
func leastAllocatedScorer(resources []configv1.ResourceSpec) resourceScorer {
	return weightedAverageScorer(resources, leastRequestedScore)
}

// leastRequestedScore is the unused share of capacity on a 0-100 scale; a
// node that would be overcommitted scores 0.
func leastRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * framework.MaxNodeScore / capacity
}
