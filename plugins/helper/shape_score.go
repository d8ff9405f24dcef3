// This file is the broken-linear scoring function: a score read off a few
// (utilization, score) points, straight between them.

package helper

// FunctionShapePoint is one point of a scoring function: at Utilization
// (0-100) the score is Score.
type FunctionShapePoint struct {
	Utilization int64
	Score       int64
}

// FunctionShape is a scoring function's points, sorted by utilization.
type FunctionShape []FunctionShapePoint

// BuildBrokenLinearFunction returns the function through shape's points:
// flat at the first point's score to its left and at the last point's score
// to its right, and straight between neighbours, with integer division
// (truncated towards zero, as kube-scheduler computes it).
func BuildBrokenLinearFunction(shape FunctionShape) func(int64) int64 {
	return func(p int64) int64 {
		for i, pt := range shape {
			if p > pt.Utilization {
				continue
			}
			if i == 0 {
				return pt.Score
			}
			prev := shape[i-1]
			return prev.Score + (pt.Score-prev.Score)*(p-prev.Utilization)/(pt.Utilization-prev.Utilization)
		}
		return shape[len(shape)-1].Score
	}
}
