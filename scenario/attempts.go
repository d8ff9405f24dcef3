// The scheduler's attempts as a story sees them: a log of every attempt per
// pod, waits on it, and ShowAttempt, which prints a pod's last attempt as
// `minisched explain` does.

package scenario

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/minisched/minisched/explain"
	"github.com/minisched/minisched/minisched"
	"github.com/minisched/minisched/minisched/attempt"
)

// AttemptLog records the scheduler's attempts, per pod, in order.
type AttemptLog struct {
	mu    sync.Mutex
	byPod map[string][]minisched.Attempt
}

// NewAttemptLog returns an empty log.
func NewAttemptLog() *AttemptLog { return &AttemptLog{byPod: map[string][]minisched.Attempt{}} }

// Record is a minisched.Observer.
func (l *AttemptLog) Record(a minisched.Attempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := a.Namespace + "/" + a.Name
	l.byPod[key] = append(l.byPod[key], a)
}

// Of returns a copy of the attempts for namespace/name.
func (l *AttemptLog) Of(namespace, name string) []minisched.Attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]minisched.Attempt(nil), l.byPod[namespace+"/"+name]...)
}

// PodAttempts is a convenience for the scenario's namespace.
func (e *Env) PodAttempts(name string) []minisched.Attempt { return e.Attempts.Of(e.Namespace, name) }

// WaitForAttempts polls the attempt log until the pod has at least n attempts.
func (e *Env) WaitForAttempts(ctx context.Context, name string, n int,
	timeout time.Duration) ([]minisched.Attempt, error) {
	var got []minisched.Attempt
	err := wait.PollUntilContextTimeout(ctx, PollInterval, e.WaitLimit(timeout), true, func(context.Context) (bool, error) {
		got = e.PodAttempts(name)
		return len(got) >= n, nil
	})
	if err != nil {
		return got, fmt.Errorf("pod %s had %d scheduling attempts, want %d within %v", name, len(got), n, timeout)
	}
	return got, nil
}

// WaitForScheduledAttempt polls the attempt log until the pod's last
// attempt is a Scheduled one, and returns it. The scheduler tells of an
// attempt that bound its pod after the bind, so a pod can be seen bound a
// moment before its attempt is told.
func (e *Env) WaitForScheduledAttempt(ctx context.Context, name string, timeout time.Duration) (minisched.Attempt,
	error) {
	var last minisched.Attempt
	err := wait.PollUntilContextTimeout(ctx, PollInterval, e.WaitLimit(timeout), true, func(context.Context) (bool, error) {
		got := e.PodAttempts(name)
		if len(got) == 0 {
			return false, nil
		}
		last = got[len(got)-1]
		return last.Result == attempt.Scheduled, nil
	})
	if err != nil {
		return last, fmt.Errorf("pod %s had no Scheduled attempt within %v", name, timeout)
	}
	return last, nil
}

// ExpectNoNewAttempts checks, for the whole duration, that the pod is not
// tried again: the "consistently" counterpart of WaitForAttempts.
func (e *Env) ExpectNoNewAttempts(ctx context.Context, name string, duration time.Duration) error {
	before := len(e.PodAttempts(name))
	err := wait.PollUntilContextTimeout(ctx, PollInterval, duration, true, func(context.Context) (bool, error) {
		if n := len(e.PodAttempts(name)); n != before {
			return false, fmt.Errorf("pod %s was retried (%d attempts, had %d)", name, n, before)
		}
		return false, nil
	})
	if wait.Interrupted(err) {
		return nil
	}
	return err
}

// ShowAttempt narrates the pod's last attempt as `minisched explain` shows
// it: the Filter and Score tables of its record, then where it went or why
// not.
func (e *Env) ShowAttempt(name string) {
	attempts := e.PodAttempts(name)
	if len(attempts) == 0 {
		e.Logf("%s: not tried", name)
		return
	}
	a := attempts[len(attempts)-1]
	var b strings.Builder
	explain.Render(&b, e.Namespace+"/"+name, a.Record, explain.Options{})
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		e.Logf("  %s", line)
	}
}

// ScoreSummary renders the three best weighted scores of an attempt:
// "node1=10 (NodeNumber=10)".
func ScoreSummary(a minisched.Attempt) string {
	var parts []string
	for _, n := range a.TopScores(3) {
		var per []string
		for _, sc := range a.Scorers {
			per = append(per, fmt.Sprintf("%s=%d", sc.Name, Weighted(a, n, sc.Name)))
		}
		sort.Strings(per)
		parts = append(parts, fmt.Sprintf("%s=%d (%s)", n.Name, n.Total, strings.Join(per, ", ")))
	}
	return strings.Join(parts, ", ")
}

// Weighted is the weighted score scorer gave node in attempt a (0 if it
// gave none).
func Weighted(a minisched.Attempt, node attempt.NodeRecord, scorer string) int64 {
	w, _ := a.Weighted(node, scorer)
	return w
}
