// This file unpacks a node event for the queueing hints that decide on a
// node's add or update.

package helper

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// NodesOfEvent returns the nodes of a node add or update event, as a
// QueueingHintFn receives them: oldNode is nil for an add. An object that is
// not a node, or an event without a new node, is an error; the hint returns
// it with framework.Queue, so that a pod is never stranded by an event the
// hint cannot read.
func NodesOfEvent(oldObj, newObj interface{}) (oldNode, newNode *v1.Node, err error) {
	oldNode, newNode, err = framework.As[*v1.Node](oldObj, newObj)
	if err == nil && newNode == nil {
		err = fmt.Errorf("node event without a new node")
	}
	return oldNode, newNode, err
}
