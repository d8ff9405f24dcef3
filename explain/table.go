// This file renders an attempt record as two tables: Filter (nodes ×
// Filter plugins and extenders, ✓ or the reason; below it, devices.go's
// section when DynamicResources rejected the pod) and Score (feasible
// nodes × scorers, and the total), then the verdict; above them, a pod-group
// member's group section (group.go).

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
// tables: for a member of a pod group, its group's attempt; which node
// failed which Filter plugin or extender and why, each feasible node's
// scores, and the outcome.
func Render(w io.Writer, pod string, r *attempt.Record, o Options) {
	render(w, pod, r, nil, o)
}

// Table is one of a record's tables as explain prints it: a title line,
// the column headers and the rows (each cell as printed; none when the
// title says it all), and lines printed below it. The live view shows the
// same tables in HTML.
type Table struct {
	Title   string     `json:"title"`
	Columns []string   `json:"columns,omitempty"`
	Rows    [][]string `json:"rows,omitempty"`
	Notes   []string   `json:"notes,omitempty"`
}

// Tables is a record as explain prints it: the heading line, the group
// section of a pod-group member (nil for another pod, group.go), the
// Filter table, the Score table (nil when no node was scored) and the
// outcome's lines.
type Tables struct {
	Heading string   `json:"heading"`
	Group   *Table   `json:"group"`
	Filter  Table    `json:"filter"`
	Score   *Table   `json:"score"`
	Outcome []string `json:"outcome"`
}

// RecordTables makes the tables Render prints for pod's record r.
func RecordTables(pod string, r *attempt.Record, o Options) Tables {
	nodes := r.SortedNodes()
	return Tables{
		Heading: fmt.Sprintf("Pod %s: %s (attempt %d, profile %s, %s)", pod, r.Result, r.Attempt, r.Profile,
			r.Time.Local().Format(time.DateTime)),
		Group:   groupTable(pod, r),
		Filter:  filterTable(r, nodes, o),
		Score:   scoreTable(r, nodes, o),
		Outcome: outcome(r, nodes),
	}
}

// render is Render with, below the Filter table, the device section when
// there is one (Pod reads the cluster for it; a record alone cannot
// tell).
func render(w io.Writer, pod string, r *attempt.Record, devices *deviceReport, o Options) {
	writeTables(w, RecordTables(pod, r, o), devices)
}

// Write prints t as Render prints the record it was made from.
func (t Tables) Write(w io.Writer) { writeTables(w, t, nil) }

// writeTables prints t with, below the Filter table, the device section
// when there is one.
func writeTables(w io.Writer, t Tables, devices *deviceReport) {
	fmt.Fprintln(w, t.Heading)
	fmt.Fprintln(w)
	if t.Group != nil {
		writeTable(w, *t.Group)
		fmt.Fprintln(w)
	}
	writeTable(w, t.Filter)
	if devices != nil {
		renderDevices(w, devices)
	}
	if t.Score != nil {
		fmt.Fprintln(w)
		writeTable(w, *t.Score)
	}
	fmt.Fprintln(w)
	for _, line := range t.Outcome {
		fmt.Fprintln(w, line)
	}
}

// writeTable prints t: its title, its columns aligned, and its notes.
func writeTable(w io.Writer, t Table) {
	fmt.Fprintln(w, t.Title)
	if len(t.Columns) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(t.Columns, "\t"))
		for _, row := range t.Rows {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		_ = tw.Flush()
	}
	for _, n := range t.Notes {
		fmt.Fprintln(w, n)
	}
}

// renderEarlierPreemption writes, after a record, the pod's last attempt
// that preempted, when that was an earlier one: why the pod went where it
// did may be that preemption made room there.
func renderEarlierPreemption(w io.Writer, r *attempt.Record) {
	fmt.Fprintf(w, "\nPreempted earlier: attempt %d (%s) found no node, was nominated to %s, and evicted %s.\n",
		r.Attempt, r.Time.Local().Format(time.DateTime), r.NominatedNode, strings.Join(r.Victims, ", "))
	fmt.Fprintf(w, "  It said: %s\n", r.Message)
}

// filterTable is the Filter table: nodes × the plugins and extenders that
// rejected one (all of them, Wide), each cell ✓, the reason, – or skip.
func filterTable(r *attempt.Record, nodes []attempt.NodeRecord, o Options) Table {
	if r.PreFilter != nil {
		return Table{Title: fmt.Sprintf("PreFilter: %s rejected the pod before any node was examined, on all %d nodes:",
			r.PreFilter.Plugin, r.NumNodes), Notes: []string{"  " + r.PreFilter.Reason}}
	}
	if len(nodes) == 0 {
		return Table{Title: fmt.Sprintf("Filter: no node was examined (%d nodes).", r.NumNodes)}
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
		return Table{Title: fmt.Sprintf("Filter: every plugin passed on the %d node(s) examined: %s", len(nodes),
			strings.Join(names, ", "))}
	}
	t := Table{
		Title:   fmt.Sprintf("Filter (%s passed, %s not run: a node's plugins stop at its first failure):", passed, notRun),
		Columns: append([]string{"NODE"}, columns...),
	}
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
		t.Rows = append(t.Rows, cells)
	}
	var ran []string
	for _, name := range quiet {
		if !skipped[name] {
			ran = append(ran, name)
		}
	}
	if len(ran) > 0 {
		t.Notes = append(t.Notes, "Rejected no node: "+strings.Join(ran, ", "))
	}
	if len(r.Skipped) > 0 {
		t.Notes = append(t.Notes, "Skipped (their PreFilter had nothing to check): "+strings.Join(r.Skipped, ", "))
	}
	return t
}

// scoreTable is the Score table (feasible nodes × scorers, and the total),
// nil if no node was scored.
func scoreTable(r *attempt.Record, nodes []attempt.NodeRecord, o Options) *Table {
	var scored []attempt.NodeRecord
	for _, n := range nodes {
		if len(n.Scores) > 0 {
			scored = append(scored, n)
		}
	}
	if len(scored) == 0 {
		return nil
	}
	t := &Table{Title: "Score (weighted: normalised score × weight; --wide shows raw and normalised):"}
	if o.Wide {
		t.Title = "Score (raw/normalised/weighted; an extender's 0–10 is normalised to 0–100):"
	}
	t.Columns = []string{"NODE"}
	for _, sc := range r.Scorers {
		t.Columns = append(t.Columns, fmt.Sprintf("%s×%d", sc.Name, sc.Weight))
	}
	t.Columns = append(t.Columns, "TOTAL")
	for _, n := range scored {
		cells := []string{n.Name}
		for _, s := range n.Scores {
			if o.Wide {
				cells = append(cells, fmt.Sprintf("%d/%d/%d", s[0], s[1], s[2]))
			} else {
				cells = append(cells, fmt.Sprint(s[2]))
			}
		}
		t.Rows = append(t.Rows, append(cells, fmt.Sprint(n.Total)))
	}
	return t
}

// outcome is the verdict's lines: the selected node and the runner-up, or
// why no node, the nomination and the victims; and what the record leaves
// out.
func outcome(r *attempt.Record, nodes []attempt.NodeRecord) []string {
	var lines []string
	if r.NotEvaluated > 0 {
		lines = append(lines, fmt.Sprintf("Not evaluated: %d of %d nodes (the search stops once it has found enough feasible "+
			"nodes, percentageOfNodesToScore, or at a nominated or hinted node that fits).", r.NotEvaluated, r.NumNodes))
	}
	if o := r.Omitted; o != nil {
		lines = append(lines, fmt.Sprintf("Left out of the record to bound its size: %d nodes (%s).", o.Nodes,
			reasonCounts(o.Reasons)))
	}
	switch {
	case r.Result == attempt.Scheduled && r.Hint == r.Node:
		lines = append(lines, fmt.Sprintf("Selected: %s (OpportunisticBatching's hint: the best node left of the ranking an "+
			"alike pod's cycle kept; no other node was filtered or scored)", r.Node))
	case r.Result == attempt.Scheduled:
		lines = append(lines, fmt.Sprintf("Selected: %s%s", r.Node, runnerUp(r.Node, nodes)))
		if r.Hint != "" {
			lines = append(lines, fmt.Sprintf("Hint: %s, from OpportunisticBatching, no longer fitted: every node was searched",
				r.Hint))
		}
	case r.Result == attempt.Unschedulable && r.Group != nil:
		// A member may have fitted and still not be scheduled: its
		// group's section says why.
		lines = append(lines, "Not scheduled: "+r.Message)
	case r.Result == attempt.Unschedulable:
		lines = append(lines, "No node: "+r.Message)
	default:
		lines = append(lines, "Error: "+r.Message)
	}
	if r.NominatedNode != "" {
		victims := "none evicted in this attempt"
		if len(r.Victims) > 0 {
			victims = strings.Join(r.Victims, ", ")
		}
		lines = append(lines, fmt.Sprintf("Nominated: %s (preemption makes room there; victims: %s)", r.NominatedNode, victims))
	}
	return lines
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
