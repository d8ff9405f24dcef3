// This file is NodeResourcesFit's RequestedToCapacityRatio strategy: the
// configuration draws the score as a function of a node's utilization, with
// a few points joined by straight lines.

package noderesources

import (
	"math"

	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/helper"
)

const (
	// maxUtilization is the right end of the shape's utilization axis (%).
	maxUtilization = 100
	// maxCustomPriorityScore is the highest score a shape point may have.
	// Shape scores are scaled by MaxNodeScore / maxCustomPriorityScore (×10).
	maxCustomPriorityScore = 10
)

// requestedToCapacityRatioScorer scores each resource by the shape at its
// utilization (requested × 100 / allocatable, 100 when overcommitted) and
// returns the weighted average, rounded. As in kube-scheduler, a resource
// that scores 0 is left out of the average altogether, weight included.
func requestedToCapacityRatioScorer(resources []configv1.ResourceSpec,
	points []configv1.UtilizationShapePoint) resourceScorer {
	shape := make(helper.FunctionShape, 0, len(points))
	for _, p := range points {
		shape = append(shape, helper.FunctionShapePoint{
			Utilization: int64(p.Utilization),
			Score:       int64(p.Score) * (framework.MaxNodeScore / maxCustomPriorityScore),
		})
	}
	f := helper.BuildBrokenLinearFunction(shape)
	resourceScore := func(requested, capacity int64) int64 {
		if capacity == 0 || requested > capacity {
			return f(maxUtilization)
		}
		return f(requested * maxUtilization / capacity)
	}
	return func(requested, _, allocatable []int64) int64 {
		var nodeScore, weightSum int64
		for i := range requested {
			if allocatable[i] == 0 {
				continue
			}
			if s := resourceScore(requested[i], allocatable[i]); s > 0 {
				nodeScore += s * resources[i].Weight
				weightSum += resources[i].Weight
			}
		}
		if weightSum == 0 {
			return 0
		}
		return int64(math.Round(float64(nodeScore) / float64(weightSum)))
	}
}
