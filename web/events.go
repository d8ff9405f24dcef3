// The events that would move an unschedulable pod, put in words: the
// queue's ClusterEvents grouped by the resource they are about, each group
// a sentence a person reads ("a node is added or is cordoned or
// uncordoned") beside upstream's labels for it.

package web

import (
	"strings"

	"github.com/minisched/minisched/minisched/framework"
)

// eventGroup is the events about one resource that may move a pod: Words
// says them as a sentence, Labels are their names as the queue gives them
// (framework.ClusterEvent.String, upstream's labels).
type eventGroup struct {
	Words  string   `json:"words"`
	Labels []string `json:"labels"`
}

// eventSubjects names each resource as the subject of a sentence.
var eventSubjects = map[framework.EventResource]string{
	framework.Pod:                   "a pod on a node",
	framework.UnscheduledPod:        "a pending pod",
	framework.Node:                  "a node",
	framework.PersistentVolume:      "a PersistentVolume",
	framework.PersistentVolumeClaim: "a PersistentVolumeClaim",
	framework.StorageClass:          "a StorageClass",
	framework.CSINode:               "a CSINode",
	framework.CSIDriver:             "a CSIDriver",
	framework.CSIStorageCapacity:    "a CSIStorageCapacity",
	framework.VolumeAttachment:      "a VolumeAttachment",
	framework.ResourceClaim:         "a ResourceClaim",
	framework.ResourceSlice:         "a ResourceSlice",
	framework.DeviceClass:           "a DeviceClass",
	framework.PodGroup:              "a PodGroup",
	framework.WildCard:              "anything in the cluster",
}

// actionWords is what one action bit says after the subject. A phrase with
// a part (labels, taints) is merged with the others into "has its labels or
// taints changed"; a phrase with a verb is said as it is.
type actionWords struct {
	verb string
	part string
}

// actionPhrases says each action bit the queue sends. Node and pod updates
// are split by what changed (framework.NodeUpdateEvents,
// framework.PodUpdateActions); the other resources' updates carry every
// Update bit at once and say "changes".
var actionPhrases = map[framework.ActionType]actionWords{
	framework.Add:                                {verb: "is added"},
	framework.Delete:                             {verb: "is deleted"},
	framework.UpdateNodeAllocatable:              {part: "allocatable resources"},
	framework.UpdateNodeLabel:                    {part: "labels"},
	framework.UpdateNodeTaint:                    {part: "taints"},
	framework.UpdateNodeCondition:                {part: "conditions"},
	framework.UpdateNodeAnnotation:               {part: "annotations"},
	framework.UpdateNodeUnschedulable:            {verb: "is cordoned or uncordoned"},
	framework.UpdateNodeDeclaredFeature:          {part: "declared features"},
	framework.UpdatePodLabel:                     {part: "labels"},
	framework.UpdatePodScaleDown:                 {verb: "has its resource requests lowered"},
	framework.UpdatePodToleration:                {part: "tolerations"},
	framework.UpdatePodSchedulingGatesEliminated: {verb: "has its last scheduling gate removed"},
	framework.UpdatePodGeneratedResourceClaim:    {verb: "gets the names of the claims generated for it"},
	framework.UpdatePodOther:                     {verb: "has anything else in its spec or metadata changed"},
}

// eventGroups groups events by resource, in the order each resource first
// appears, and says each group in words. An event whose resource or action
// has no words here is said by its label alone (the exhaustive test in
// events_test.go keeps every registered event out of that case).
func eventGroups(events []framework.ClusterEvent) []eventGroup {
	var order []framework.EventResource
	actions := map[framework.EventResource]framework.ActionType{}
	labels := map[framework.EventResource][]string{}
	for _, e := range events {
		if _, ok := actions[e.Resource]; !ok {
			order = append(order, e.Resource)
		}
		actions[e.Resource] |= e.ActionType
		labels[e.Resource] = append(labels[e.Resource], e.String())
	}
	out := make([]eventGroup, 0, len(order))
	for _, r := range order {
		words, ok := eventWords(r, actions[r])
		if !ok {
			words = strings.Join(labels[r], ", ")
		}
		out = append(out, eventGroup{Words: words, Labels: labels[r]})
	}
	return out
}

// eventWords says that resource r saw one of actions, as one sentence, and
// whether every part of it had words.
func eventWords(r framework.EventResource, actions framework.ActionType) (string, bool) {
	subject, ok := eventSubjects[r]
	if !ok {
		return "", false
	}
	if r == framework.WildCard {
		// Any event at all: what a plugin without EnqueueExtensions, or an
		// extender, gets.
		return subject + " changes", true
	}
	// Every update at once, or any update of a resource whose updates are
	// not split: say "changes".
	var verbs []string
	if actions&framework.Add != 0 {
		verbs = append(verbs, actionPhrases[framework.Add].verb)
	}
	if actions&framework.Delete != 0 {
		verbs = append(verbs, actionPhrases[framework.Delete].verb)
	}
	update := actions & framework.Update
	if update == framework.Update || (update != 0 && !splitsUpdates(r)) {
		return subject + " " + orList(append(verbs, "changes")), true
	}
	var parts []string
	for bit := framework.ActionType(1); bit <= update; bit <<= 1 {
		if update&bit == 0 {
			continue
		}
		w, ok := actionPhrases[bit]
		if !ok {
			return "", false
		}
		if w.part != "" {
			parts = append(parts, w.part)
		} else {
			verbs = append(verbs, w.verb)
		}
	}
	if len(parts) > 0 {
		verbs = append(verbs, "has its "+orList(parts)+" changed")
	}
	return subject + " " + orList(verbs), true
}

// splitsUpdates reports whether r's update events say what changed: nodes
// and pods do; every other resource's update carries every Update bit.
func splitsUpdates(r framework.EventResource) bool {
	return r == framework.Node || r == framework.Pod || r == framework.UnscheduledPod
}

// orList joins phrases as "a", "a or b", "a, b, or c" (the serial comma
// keeps "is cordoned or uncordoned" one phrase).
func orList(phrases []string) string {
	switch len(phrases) {
	case 0, 1:
		return strings.Join(phrases, "")
	case 2:
		return phrases[0] + " or " + phrases[1]
	}
	return strings.Join(phrases[:len(phrases)-1], ", ") + ", or " + phrases[len(phrases)-1]
}

// eventLabels names events as the queue's JSON always has: each event's
// String.
func eventLabels(events []framework.ClusterEvent) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.String())
	}
	return out
}
