// This file renders an attempt record as two tables: Filter (nodes ×
// Filter plugins and extenders, ✓ or the reason; below it, devices.go's
// section when DynamicResources rejected the pod) and Score (feasible
// nodes × scorers, and the total), then the verdict.

package explain

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/minisched/minisched/minisched/attempt"
)

// Cell marks of the Filter table.
const (
	passed = "✓"
	notRun = "–"
)

// Options say how much to show.
type Options struct {
	// Wide shows every Filter plugin as a column, not only those that
	// rejected a node, and each score as raw/normalised/weighted.
	Wide bool
}

// Render writes the record of pod's (namespace/name) last attempt as
// tables: which node failed which Filter plugin or extender and why, each
// feasible node's scores, and the outcome.
func Render(w io.Writer, pod string, r *attempt.Record, o Options) {
	render(w, pod, r, nil, o)
}

// render is Render with, below the Filter table, the device section when
// there is one (Pod reads the cluster for it; a record alone cannot
// tell).
func render(w io.Writer, pod string, r *attempt.Record, devices *deviceReport, o Options) {
	fmt.Fprintf(w, "Pod %s: %s (attempt %d, profile %s, %s)\n", pod, r.Result, r.Attempt, r.Profile,
		r.Time.Local().Format(time.DateTime))
	nodes := r.SortedNodes()
	renderFilter(w, r, nodes, o)
	if devices != nil {
		renderDevices(w, devices)
	}
	renderScore(w, r, nodes, o)
	renderOutcome(w, r, nodes)
}

// renderEarlierPreemption writes, after a record, the pod's last attempt
// that preempted, when that was an earlier one: why the pod went where it
// did may be that preemption made room there.
func renderEarlierPreemption(w io.Writer, r *attempt.Record) {
	fmt.Fprintf(w, "\nPreempted earlier: attempt %d (%s) found no node, was nominated to %s, and evicted %s.\n",
		r.Attempt, r.Time.Local().Format(time.DateTime), r.NominatedNode, strings.Join(r.Victims, ", "))
	fmt.Fprintf(w, "  It said: %s\n", r.Message)
}

// renderFilter writes the Filter table.
func renderFilter(w io.Writer, r *attempt.Record, nodes []attempt.NodeRecord, o Options) {
	fmt.Fprintln(w)
	if r.PreFilter != nil {
		fmt.Fprintf(w, "PreFilter: %s rejected the pod before any node was examined, on all %d nodes:\n  %s\n",
			r.PreFilter.Plugin, r.NumNodes, r.PreFilter.Reason)
		return
	}
	if len(nodes) == 0 {
		fmt.Fprintf(w, "Filter: no node was examined (%d nodes).\n", r.NumNodes)
		return
	}
	// Columns: PreFilter's narrowing, the Filter plugins, the extenders,
	// and any other plugin that rejected a node (Reserve, Permit).
	rejecting := map[string]bool{}
	for _, n := range nodes {
		rejecting[n.RejectedBy] = true
	}
	order := append(append([]string{attempt.PreFilterRejector}, r.Filters...), r.Extenders...)
	for _, n := range nodes {
		if n.RejectedBy != "" && !slices.Contains(order, n.RejectedBy) {
			order = append(order, n.RejectedBy)
		}
	}
	var columns, quiet []string
	for _, name := range order {
		switch {
		case rejecting[name] || (o.Wide && name != attempt.PreFilterRejector):
			columns = append(columns, name)
		case name != attempt.PreFilterRejector:
			quiet = append(quiet, name)
		}
	}
	skipped := map[string]bool{}
	for _, name := range r.Skipped {
		skipped[name] = true
	}

	if len(columns) == 0 {
		var names []string
		for _, n := range nodes {
			names = append(names, n.Name)
		}
		if len(names) > 10 {
			names = append(names[:10], "…")
		}
		fmt.Fprintf(w, "Filter: every plugin passed on the %d node(s) examined: %s\n", len(nodes), strings.Join(names, ", "))
		return
	}
	fmt.Fprintf(w, "Filter (%s passed, %s not run: a node's plugins stop at its first failure):\n", passed, notRun)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "NODE\t%s\n", strings.Join(columns, "\t"))
	for _, n := range nodes {
		cells := []string{n.Name}
		// A node passes every plugin before the one that rejected it; the
		// ones after it did not run.
		after := false
		for _, col := range columns {
			switch {
			case skipped[col]:
				cells = append(cells, "skip")
			case after:
				cells = append(cells, notRun)
			case col == n.RejectedBy:
				cells = append(cells, n.Reason)
				after = true
			default:
				cells = append(cells, passed)
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
	var ran []string
	for _, name := range quiet {
		if !skipped[name] {
			ran = append(ran, name)
		}
	}
	if len(ran) > 0 {
		fmt.Fprintf(w, "Rejected no node: %s\n", strings.Join(ran, ", "))
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "Skipped (their PreFilter had nothing to check): %s\n", strings.Join(r.Skipped, ", "))
	}
}

// renderScore writes the Score table, if the pod was scored.
func renderScore(w io.Writer, r *attempt.Record, nodes []attempt.NodeRecord, o Options) {
	var scored []attempt.NodeRecord
	for _, n := range nodes {
		if len(n.Scores) > 0 {
			scored = append(scored, n)
		}
	}
	if len(scored) == 0 {
		return
	}
	fmt.Fprintln(w)
	if o.Wide {
		fmt.Fprintln(w, "Score (raw/normalised/weighted; an extender's 0–10 is normalised to 0–100):")
	} else {
		fmt.Fprintln(w, "Score (weighted: normalised score × weight; --wide shows raw and normalised):")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"NODE"}
	for _, sc := range r.Scorers {
		header = append(header, fmt.Sprintf("%s×%d", sc.Name, sc.Weight))
	}
	fmt.Fprintf(tw, "%s\tTOTAL\n", strings.Join(header, "\t"))
	for _, n := range scored {
		cells := []string{n.Name}
		for _, s := range n.Scores {
			if o.Wide {
				cells = append(cells, fmt.Sprintf("%d/%d/%d", s[0], s[1], s[2]))
			} else {
				cells = append(cells, fmt.Sprint(s[2]))
			}
		}
		cells = append(cells, fmt.Sprint(n.Total))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
}

// renderOutcome writes the verdict: the selected node and the runner-up, or
// why no node, the nomination and the victims; and what the record leaves
// out.
func renderOutcome(w io.Writer, r *attempt.Record, nodes []attempt.NodeRecord) {
	fmt.Fprintln(w)
	if r.NotEvaluated > 0 {
		fmt.Fprintf(w, "Not evaluated: %d of %d nodes (the search stops once it has found enough feasible "+
			"nodes, percentageOfNodesToScore, or at a nominated or hinted node that fits).\n", r.NotEvaluated, r.NumNodes)
	}
	if o := r.Omitted; o != nil {
		fmt.Fprintf(w, "Left out of the record to bound its size: %d nodes (%s).\n", o.Nodes, reasonCounts(o.Reasons))
	}
	switch {
	case r.Result == attempt.Scheduled && r.Hint == r.Node:
		fmt.Fprintf(w, "Selected: %s (OpportunisticBatching's hint: the best node left of the ranking an "+
			"alike pod's cycle kept; no other node was filtered or scored)\n", r.Node)
	case r.Result == attempt.Scheduled:
		fmt.Fprintf(w, "Selected: %s%s\n", r.Node, runnerUp(r.Node, nodes))
		if r.Hint != "" {
			fmt.Fprintf(w, "Hint: %s, from OpportunisticBatching, no longer fitted: every node was searched\n", r.Hint)
		}
	case r.Result == attempt.Unschedulable:
		fmt.Fprintf(w, "No node: %s\n", r.Message)
	default:
		fmt.Fprintf(w, "Error: %s\n", r.Message)
	}
	if r.NominatedNode != "" {
		victims := "none evicted in this attempt"
		if len(r.Victims) > 0 {
			victims = strings.Join(r.Victims, ", ")
		}
		fmt.Fprintf(w, "Nominated: %s (preemption makes room there; victims: %s)\n", r.NominatedNode, victims)
	}
}

// runnerUp says how the selected node compares with the next best.
func runnerUp(selected string, nodes []attempt.NodeRecord) string {
	var best, next *attempt.NodeRecord
	for i := range nodes {
		n := &nodes[i]
		switch {
		case n.Name == selected:
			best = n
		case n.Passed() && len(n.Scores) > 0 && (next == nil || n.Total > next.Total):
			next = n
		}
	}
	switch {
	case best == nil || len(best.Scores) == 0:
		return " (the only feasible node: nothing to rank)"
	case next == nil:
		return fmt.Sprintf(" (total %d)", best.Total)
	case next.Total == best.Total:
		return fmt.Sprintf(" (total %d, tied with %s: a tie goes to the node found first, "+
			"or at random among nodes an extender scored)", best.Total, next.Name)
	}
	return fmt.Sprintf(" (total %d; next best %s, %d)", best.Total, next.Name, next.Total)
}

// reasonCounts renders reason counts, most frequent first.
func reasonCounts(reasons map[string]int) string {
	keys := slices.Collect(maps.Keys(reasons))
	sort.Slice(keys, func(i, j int) bool {
		if reasons[keys[i]] != reasons[keys[j]] {
			return reasons[keys[i]] > reasons[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		label := k
		if label == "" {
			label = "feasible"
		}
		parts[i] = fmt.Sprintf("%d %s", reasons[k], label)
	}
	return strings.Join(parts, ", ")
}
