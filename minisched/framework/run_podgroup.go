// This file runs the pod-group extension points (chapter 19, the
// GenericWorkload gate) with kube-scheduler's rules and messages:
// PlacementGenerate (the sets of nodes to try the group on),
// PlacementFeasible (can the group still meet its minCount?),
// PlacementScore (the best of the placements that held the whole group)
// and PodGroupPostFilter (make room for a group that fits nowhere).

package framework

import (
	"context"
	"fmt"
	"time"
)

// PlacementScores are one placement's weighted scores, one per
// PlacementScore plugin, and their total.
type PlacementScores struct {
	Placement  *Placement
	Scores     []PluginScore
	TotalScore int64
}

// RunPlacementGeneratePlugins returns the placements a pod group's cycle
// tries. Without a PlacementGenerate plugin that is one placement of nodes;
// a profile has one at most (NewFramework refuses more, as kube-scheduler
// does). A plugin that proposes nothing makes the group unschedulable: "no
// feasible placements found".
func (f *Framework) RunPlacementGeneratePlugins(ctx context.Context, state *CycleState, podGroup *PodGroupInfo,
	nodes []*NodeInfo) (_ []*Placement, status *Status) {
	defer f.observe(placementGeneratePoint, time.Now(), &status)
	parent := &Placement{Nodes: nodes}
	if len(f.placementGeneratePlugins) == 0 {
		return []*Placement{parent}, nil
	}
	pl := f.placementGeneratePlugins[0]
	start := f.sampleStart(state)
	placements, s := pl.GeneratePlacements(ctx, state, podGroup, parent)
	f.recordPlugin(pl.Name(), placementGeneratePoint, start, s)
	if !s.IsSuccess() {
		return nil, s.WithPlugin(pl.Name())
	}
	if len(placements) == 0 {
		return nil, NewStatus(Unschedulable, "no feasible placements found").WithPlugin(pl.Name())
	}
	return placements, nil
}

// HasPlacementGeneratePlugins reports whether the profile proposes
// placements (with TopologyAwareWorkloadScheduling): the cycle then tries
// the group on each and scores them.
func (f *Framework) HasPlacementGeneratePlugins() bool { return len(f.placementGeneratePlugins) > 0 }

// RunPlacementFeasiblePlugins asks whether the group, as far as its cycle
// has got, can still meet its constraints. Success from every plugin is
// Success; any Wait (and no worse) is the last Wait; Unschedulable stops at
// once; anything else is an Error. Without a PlacementFeasible plugin (no
// GangScheduling, or the gate off) it is Success.
func (f *Framework) RunPlacementFeasiblePlugins(ctx context.Context, state *CycleState, podGroup *PodGroupInfo,
	progress PlacementProgress) (status *Status) {
	defer f.observe(placementFeasiblePoint, time.Now(), &status)
	for _, pl := range f.placementFeasiblePlugins {
		start := f.sampleStart(state)
		s := pl.PlacementFeasible(ctx, state, podGroup, progress)
		f.recordPlugin(pl.Name(), placementFeasiblePoint, start, s)
		switch s.Code() {
		case Success:
		case Wait:
			status = s.WithPlugin(pl.Name())
		case Unschedulable:
			return s.WithPlugin(pl.Name())
		case Error:
			return AsStatus(fmt.Errorf("running PlacementFeasible plugin: %w", s.AsError())).WithPlugin(pl.Name())
		default:
			return AsStatus(fmt.Errorf("unexpected status from PlacementFeasible plugin: %v", s.Code())).
				WithPlugin(pl.Name())
		}
	}
	return status
}

// RunPlacementScorePlugins scores each placement (assignments[i], whose
// members' cycle states hang off states[i]) with every PlacementScore
// plugin, normalises each plugin's scores, checks they are within [0, 100]
// and weighs them, as RunScorePlugins does for nodes. Placements are few (a
// topology domain each), so they are scored one after the other.
func (f *Framework) RunPlacementScorePlugins(ctx context.Context, state *CycleState, podGroup *PodGroupInfo,
	assignments []*PodGroupAssignments, states []*CycleState) (_ []PlacementScores, status *Status) {
	defer f.observe(placementScorePoint, time.Now(), &status)
	if len(assignments) != len(states) {
		return nil, AsStatus(fmt.Errorf("expected one PlacementCycleState per PodGroupAssignments, "+
			"got %d placement states for %d assignments", len(states), len(assignments)))
	}
	raw := make([][]PlacementScore, len(f.placementScorePlugins))
	for j, pl := range f.placementScorePlugins {
		raw[j] = make([]PlacementScore, len(assignments))
		for i, a := range assignments {
			start := f.sampleStart(states[i])
			score, s := pl.ScorePlacement(ctx, states[i], podGroup, a)
			f.recordPlugin(pl.Name(), placementScorePoint, start, s)
			if !s.IsSuccess() {
				return nil, AsStatus(fmt.Errorf("running PlacementScore plugins: plugin %q failed with: %w",
					pl.Name(), s.AsError()))
			}
			raw[j][i] = PlacementScore{Placement: a.Placement, Score: score}
		}
		if ext := pl.PlacementScoreExtensions(); ext != nil {
			if s := ext.NormalizePlacementScore(ctx, state, podGroup, raw[j]); !s.IsSuccess() {
				return nil, AsStatus(fmt.Errorf("running NormalizePlacementScore on PlacementScore plugins: "+
					"plugin %q failed with: %w", pl.Name(), s.AsError()))
			}
		}
	}
	out := make([]PlacementScores, len(assignments))
	for i, a := range assignments {
		out[i] = PlacementScores{Placement: a.Placement, Scores: make([]PluginScore, len(f.placementScorePlugins))}
		for j, pl := range f.placementScorePlugins {
			score := raw[j][i].Score
			if score > MaxNodeScore || score < MinNodeScore {
				return nil, AsStatus(fmt.Errorf("applying score defaultWeights on PlacementScore plugins: plugin %q "+
					"returns an invalid score %v, it should in the range of [%v, %v] after normalizing",
					pl.Name(), score, MinNodeScore, MaxNodeScore))
			}
			weighted := score * f.placementScoreWeights[pl.Name()]
			out[i].Scores[j] = PluginScore{Name: pl.Name(), Score: weighted, Raw: score}
			out[i].TotalScore += weighted
		}
	}
	return out, nil
}

// RunPodGroupPostFilterPlugins asks the PodGroupPostFilter plugins, in
// order, to make room for a group its cycle found unschedulable. The first
// Success wins; UnschedulableAndUnresolvable stops and is returned alone;
// the reasons of the plugins that returned Unschedulable are joined; any
// other status is an Error naming the plugin, in kube-scheduler's words.
func (f *Framework) RunPodGroupPostFilterPlugins(ctx context.Context, state *CycleState, podGroup *PodGroupInfo,
	schedule PodGroupSchedulingFunc) (_ *PodGroupPostFilterResult, status *Status) {
	if !f.gates.GenericWorkload {
		return nil, NewStatus(Unschedulable, "generic workload feature is disabled, cannot perform PodGroupPostFilter")
	}
	defer f.observe(podGroupPostFilterPoint, time.Now(), &status)
	var reasons []string
	rejector := ""
	for _, pl := range f.podGroupPostFilterPlugins {
		start := f.sampleStart(state)
		r, s := pl.PodGroupPostFilter(ctx, state, podGroup, schedule)
		f.recordPlugin(pl.Name(), podGroupPostFilterPoint, start, s)
		switch s.Code() {
		case Success:
			return r, s
		case UnschedulableAndUnresolvable:
			return r, s.WithPlugin(pl.Name())
		case Unschedulable:
			reasons = append(reasons, s.Reasons()...)
			if rejector == "" {
				rejector = pl.Name()
			}
		default:
			return nil, AsStatus(fmt.Errorf("error in %q PodGroupPostFilter plugins: %s", pl.Name(), s.Message())).
				WithPlugin(pl.Name())
		}
	}
	return nil, NewStatus(Unschedulable, reasons...).WithPlugin(rejector)
}
