// This file is the ranking of the feasible nodes, from which the scheduler
// takes the best: a max-heap by total score, as kube-scheduler v1.37 has it.

package framework

import "container/heap"

// SortedScoredNodes holds scored nodes best first: Pop takes the highest
// TotalScore, and between equal totals the higher Randomizer. Nodes that tie
// on both come out in the order the heap's structure gives them, not at
// random: without extenders (which set Randomizer) the winner among equals
// depends on the order Filter found the nodes in, which starts where the
// previous search stopped. OpportunisticBatching keeps what a cycle did not
// Pop, to hand the next node out as the next alike pod's hint.
type SortedScoredNodes struct {
	nodes nodeScoreHeap
}

// NewSortedScoredNodes ranks scores; the slice becomes the heap's.
func NewSortedScoredNodes(scores []NodePluginScores) *SortedScoredNodes {
	h := nodeScoreHeap(scores)
	heap.Init(&h)
	return &SortedScoredNodes{nodes: h}
}

// Pop removes and returns the best node. The heap must not be empty.
func (s *SortedScoredNodes) Pop() NodePluginScores {
	return heap.Pop(&s.nodes).(NodePluginScores)
}

// Len is how many nodes are left.
func (s *SortedScoredNodes) Len() int {
	if s == nil {
		return 0
	}
	return len(s.nodes)
}

// UnorderedList returns the nodes left, in the heap's internal order. The
// outer slice is a copy; the elements' Scores are shared with the heap.
func (s *SortedScoredNodes) UnorderedList() []NodePluginScores {
	return append([]NodePluginScores(nil), s.nodes...)
}

// nodeScoreHeap implements heap.Interface, best first.
type nodeScoreHeap []NodePluginScores

func (h nodeScoreHeap) Len() int { return len(h) }
func (h nodeScoreHeap) Less(i, j int) bool {
	return h[i].TotalScore > h[j].TotalScore ||
		(h[i].TotalScore == h[j].TotalScore && h[i].Randomizer > h[j].Randomizer)
}
func (h nodeScoreHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *nodeScoreHeap) Push(x any)   { *h = append(*h, x.(NodePluginScores)) }
func (h *nodeScoreHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
