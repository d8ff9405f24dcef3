// The end of a run of scenarios: a table of what each one came to, in
// colour on a terminal.

package scenario

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// Result is what one scenario of a run came to.
type Result struct {
	Name    string
	Chapter int
	// Err is nil if the scenario passed.
	Err      error
	Duration time.Duration
}

// ANSI colours for PASS and FAIL, used only when the output is a terminal.
const (
	green = "\x1b[32m"
	red   = "\x1b[31m"
	reset = "\x1b[0m"
)

// isTerminal reports whether w is a terminal, where colours are welcome.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// verdict is PASS or FAIL, coloured if colour is true.
func verdict(err error, colour bool) string {
	v, c := "PASS", green
	if err != nil {
		v, c = "FAIL", red
	}
	if !colour {
		return v
	}
	return c + v + reset
}

// writeSummary prints a table of results (scenario, chapter, result, time)
// and a line of totals. The columns are padded by hand: colour codes take no
// room on the screen, but text/tabwriter would count them.
func writeSummary(w io.Writer, results []Result, colour bool) {
	nameWidth := len("scenario")
	for _, r := range results {
		nameWidth = max(nameWidth, len(r.Name))
	}
	fmt.Fprintf(w, "%-*s  %-7s  %-6s  %s\n", nameWidth, "scenario", "chapter", "result", "time")
	failed := 0
	var total time.Duration
	for _, r := range results {
		if r.Err != nil {
			failed++
		}
		total += r.Duration
		// PASS and FAIL are four wide, the column six.
		fmt.Fprintf(w, "%-*s  %-7d  %s    %.1fs\n", nameWidth, r.Name, r.Chapter, verdict(r.Err, colour),
			r.Duration.Seconds())
	}
	fmt.Fprintf(w, "%d scenarios: %d passed, %d failed (%.0fs)\n",
		len(results), len(results)-failed, failed, total.Seconds())
}

// progress is the line that opens a scenario's report: where the run is,
// which scenario, its chapter and what it shows.
func progress(i, n int, s Scenario) string {
	width := len(fmt.Sprint(n))
	return fmt.Sprintf("=== [%*d/%d] %s (chapter %d): %s", width, i, n, s.Name, s.Chapter,
		strings.TrimSpace(s.Description))
}
