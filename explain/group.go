// This file renders a pod-group member's record (chapter 19): its group's
// attempt as a table of the members in the order the cycle tried them,
// where each went in the simulation and which shape of message it got,
// then PlacementFeasible's arithmetic, the group's verdict and, in one
// sentence, why this pod's message reads as it does.

package explain

import (
	"fmt"
	"strings"

	"github.com/minisched/minisched/minisched/attempt"
)

// shapeLabels name the shapes in the MESSAGE column.
var shapeLabels = map[attempt.Shape]string{
	attempt.ShapePlacedGroupFailed: "1: the group's",
	attempt.ShapeFitNowhere:        "2: its own",
	attempt.ShapeNotTried:          "3: the group's status then",
	attempt.ShapeError:             "4: the error",
	"":                             "none: went on to binding",
}

// shapeSentences say why a member's message reads as it does.
var shapeSentences = map[attempt.Shape]string{
	attempt.ShapePlacedGroupFailed: "This pod was placed in the simulation, but its group failed: its message " +
		"is the group's (shape 1).",
	attempt.ShapeFitNowhere: "This pod was tried and fitted on no node: its message is its own, without a " +
		`"preemption:" part, since a member's PostFilter does not run (shape 2).`,
	attempt.ShapeNotTried: "This pod was never tried, the cycle having stopped once minCount could no longer " +
		"be met: its message is the group's status at that moment (shape 3).",
	attempt.ShapeError: "The cycle ended in an error: this pod's message is the error (shape 4).",
	"":                 "This pod was placed and its group scheduled: it went on to Reserve, Permit and binding.",
}

// groupTable is the group section of pod's (namespace/name) record r, nil
// for a pod of no group.
func groupTable(pod string, r *attempt.Record) *Table {
	g := r.Group
	if g == nil {
		return nil
	}
	namespace, name, _ := strings.Cut(pod, "/")
	t := &Table{
		Title: fmt.Sprintf("Pod group %s/%s (%s), group attempt %d: %s. Its members, in the order the cycle "+
			"tried them:", namespace, g.PodGroup, policy(g), g.Attempt, g.Result),
		Columns: []string{"MEMBER", "IN THE SIMULATION", "MESSAGE"},
	}
	for _, m := range g.Members {
		member := m.Pod
		if m.Pod == name {
			member += " (this pod)"
		}
		t.Rows = append(t.Rows, []string{member, simulation(m), shapeLabels[m.Shape]})
	}
	if g.OmittedMembers > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("Left out of the record to bound its size: %d members (the last "+
			"ones tried).", g.OmittedMembers))
	}
	t.Notes = append(t.Notes, fmt.Sprintf("Scheduled before this cycle (assumed or bound): %d.", g.ScheduledBefore))
	if f := g.Feasibility; f != nil {
		verdict := "satisfied"
		if !f.Satisfied {
			verdict = f.Reason
		}
		t.Notes = append(t.Notes, fmt.Sprintf("PlacementFeasible at the end: minCount %d: %d scheduled, %d remaining → %s.",
			f.MinCount, f.Scheduled, f.Remaining, verdict))
	}
	verdict := fmt.Sprintf("The group: %s", g.Result)
	if g.Message != "" {
		verdict += ": " + g.Message
	}
	if g.WaitingOnPreemption {
		verdict += " (waiting on preemption: its members are nominated, and the group is retried)"
	}
	t.Notes = append(t.Notes, verdict)
	if m, ok := g.Member(name); ok {
		t.Notes = append(t.Notes, shapeSentences[m.Shape])
	}
	return t
}

// policy says a group's policy: "gang, minCount 3" or "basic".
func policy(g *attempt.GroupAttempt) string {
	if g.Policy == attempt.PolicyGang {
		return fmt.Sprintf("gang, minCount %d", g.MinCount)
	}
	return g.Policy
}

// simulation says where a member went in the simulation: its node, why it
// went nowhere, or that it was not tried; and its nomination.
func simulation(m attempt.GroupMember) string {
	s := "not tried"
	switch {
	case m.Node != "":
		s = "placed on " + m.Node
	case m.Tried:
		s = m.Message
	}
	if m.NominatedNode != "" {
		s += "; nominated to " + m.NominatedNode
	}
	return s
}
