// Where each of a story's pods went, or why it waits: the lines the runner
// prints at the end of a story.

package scenario

import (
	"context"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxPlacementLines is how many pods placement lists one by one; beyond
// that, it counts them by node and lists only the pending ones.
const maxPlacementLines = 30

// placement lists the scenario's pods: where each went, or why it waits.
// Many pods are summed up: how many went to how many nodes, and the first
// few pending ones.
func (e *Env) placement(ctx context.Context) ([]string, error) {
	list, err := e.Client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	many := len(list.Items) > maxPlacementLines
	var lines []string
	nodes := map[string]bool{}
	bound := 0
	for i := range list.Items {
		p := &list.Items[i]
		switch {
		case p.Spec.NodeName != "" && many:
			bound++
			nodes[p.Spec.NodeName] = true
		case p.Spec.NodeName != "":
			lines = append(lines, fmt.Sprintf("%s → %s", p.Name, p.Spec.NodeName))
		case !many || len(lines) < maxPlacementLines/3:
			lines = append(lines, fmt.Sprintf("%s pending (%s)", p.Name, describePending(p)))
		}
	}
	if many {
		lines = append([]string{fmt.Sprintf("%d pods: %d bound on %d nodes, %d pending", len(list.Items), bound,
			len(nodes), len(list.Items)-bound)}, lines...)
	}
	return lines, nil
}
