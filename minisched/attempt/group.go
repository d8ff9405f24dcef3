// This file is a pod group's attempt as its members' records carry it
// (chapter 19, the GenericWorkload gate): the members the pod-group cycle
// tried, in its order, where each went in the simulation or why it went
// nowhere, PlacementFeasible's arithmetic when the cycle ended, the group's
// verdict, and which shape of message each member got.

package attempt

// Shape is which of the four messages of a pod-group member a member's
// attempt ended with (the comment at the top of
// minisched/schedule_one_podgroup.go draws them). A member its group sent
// on to binding has none ("").
type Shape string

// The shapes of a member's message.
const (
	// ShapePlacedGroupFailed (1): placed in the simulation, but the group
	// failed: "pod group is unschedulable, " and the group's message.
	ShapePlacedGroupFailed Shape = "placedGroupFailed"
	// ShapeFitNowhere (2): tried, and placed on no node: its own message,
	// without a "preemption:" part (a member's PostFilter does not run).
	ShapeFitNowhere Shape = "fitNowhere"
	// ShapeNotTried (3): never tried, the cycle having stopped once minCount
	// could no longer be met: a copy of the group's status at that moment.
	ShapeNotTried Shape = "notTried"
	// ShapeError (4): the cycle ended in an error: the error.
	ShapeError Shape = "error"
)

// The policies of a PodGroup.
const (
	// PolicyGang: at least MinCount of the group's pods are placed
	// together, or none.
	PolicyGang = "gang"
	// PolicyBasic: the members are placed as they fit, in one cycle; its
	// MinCount is 1.
	PolicyBasic = "basic"
)

// GroupAttempt is one attempt of a pod group, in each member's Record. It is
// built once, from what the pod-group cycle returned, before any member's
// outcome is known: the records of one attempt's members share it.
type GroupAttempt struct {
	// PodGroup is the PodGroup's name, in the pod's namespace; Policy is
	// PolicyGang or PolicyBasic, and MinCount how many of its pods must be
	// placed together (1 for a basic group).
	PodGroup string `json:"podGroup"`
	Policy   string `json:"policy"`
	MinCount int    `json:"minCount"`
	// Attempt counts the group's attempts, this one included.
	Attempt int `json:"attempt"`
	// ScheduledBefore counts the group's pods already scheduled (assumed or
	// bound) when the cycle began.
	ScheduledBefore int `json:"scheduledBefore"`
	// Members are the members the cycle had, in the order it tried them.
	Members []GroupMember `json:"members"`
	// OmittedMembers counts the members left out of Members to bound an
	// encoded record's size (the last ones tried).
	OmittedMembers int `json:"omittedMembers,omitempty"`
	// Feasibility is PlacementFeasible's arithmetic when the cycle's
	// algorithm ended; nil if it ended in an error.
	Feasibility *Feasibility `json:"feasibility,omitempty"`
	// Result and Message are the group's verdict, as the PodGroup's
	// PodGroupInitiallyScheduled condition says it: Scheduled (its placed
	// members go on to binding), Unschedulable or SchedulerError, and the
	// condition's message.
	Result  Result `json:"result"`
	Message string `json:"message,omitempty"`
	// WaitingOnPreemption says the PodGroupPostFilter is making room for
	// the group: its members wait, nominated, and the group is retried.
	WaitingOnPreemption bool `json:"waitingOnPreemption,omitempty"`
}

// GroupMember is one member of a group's attempt. A member placed in the
// simulation has Node; one tried and placed nowhere has Message, its own;
// one never tried has neither, and Tried false.
type GroupMember struct {
	// Pod is the member's name, in the group's namespace.
	Pod   string `json:"pod"`
	Tried bool   `json:"tried,omitempty"`
	// Node is where the cycle placed the member in the simulation (the
	// snapshot, undone at the end of the cycle).
	Node string `json:"node,omitempty"`
	// Message is why a tried member was placed nowhere.
	Message string `json:"message,omitempty"`
	// NominatedNode is the node the PodGroupPostFilter nominated it to.
	NominatedNode string `json:"nominatedNode,omitempty"`
	// Shape is its message's shape; "" when it went on to binding.
	Shape Shape `json:"shape,omitempty"`
}

// Feasibility is PlacementFeasible's arithmetic at the end of a cycle:
// with MinCount to place, Scheduled of the group's pods placed (those
// scheduled before the cycle and the members placed in the simulation),
// and Remaining members not tried, the group was Satisfied, or not, in
// the words of Reason: the algorithm's status (GangScheduling's "minCount
// (3) cannot be satisfied: …", or "pod group is unschedulable" when no
// member was placed).
type Feasibility struct {
	MinCount  int    `json:"minCount"`
	Scheduled int    `json:"scheduled"`
	Remaining int    `json:"remaining"`
	Satisfied bool   `json:"satisfied,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// Member returns the member named pod, and false if the attempt does not
// list it.
func (g *GroupAttempt) Member(pod string) (GroupMember, bool) {
	for _, m := range g.Members {
		if m.Pod == pod {
			return m, true
		}
	}
	return GroupMember{}, false
}
