// Package explain answers "why is my pod pending, why did it go there?"
// for any client of the apiserver. A pod minisched scheduled with attempt
// records on carries the record of its last attempt in the annotation
// attempt.Annotation, which Render shows as tables; when DynamicResources
// rejected the pod, Pod adds what the cluster's ResourceSlices, classes and
// claims say about each node it rejected. For any other pod (one only
// kube-scheduler handled, say) Pod falls back to its events, and says what
// they cannot tell.
package explain

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/podstatus"
)

// Pod explains the pod namespace/name to w: from its attempt record if it
// has one (with, when DynamicResources rejected it, what the cluster's
// devices say about each node), else from its events.
func Pod(ctx context.Context, client kubernetes.Interface, namespace, name string, w io.Writer, o Options) error {
	pod, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	key := namespace + "/" + name
	if value, ok := pod.Annotations[attempt.Annotation]; ok {
		rec, err := attempt.Decode(value)
		if err != nil {
			return fmt.Errorf("pod %s: %w", key, err)
		}
		render(w, key, rec, explainDevices(ctx, client, pod, rec), o)
		if pod.Spec.NodeName != "" && rec.Result != attempt.Scheduled {
			fmt.Fprintf(w, "The pod is bound to %s now: the record is of an earlier attempt.\n", pod.Spec.NodeName)
		}
		if value, ok := pod.Annotations[attempt.PreemptionAnnotation]; ok {
			earlier, err := attempt.Decode(value)
			if err != nil {
				return fmt.Errorf("pod %s: %s: %w", key, attempt.PreemptionAnnotation, err)
			}
			if earlier.Attempt != rec.Attempt {
				renderEarlierPreemption(w, earlier)
			}
		}
		return nil
	}
	events, err := SchedulingEvents(ctx, client, pod)
	if err != nil {
		return err
	}
	fromEvents(w, pod, events)
	return nil
}

// Event is the part of a scheduling event explain reads, from either API:
// why (Scheduled or FailedScheduling), what it said, who said it, how many
// times, and when last.
type Event struct {
	Reason   string    `json:"reason"`
	Note     string    `json:"message"`
	Reporter string    `json:"reporter"`
	Count    int32     `json:"count"`
	Last     time.Time `json:"time"`
}

// SchedulingEvents lists the Scheduled and FailedScheduling events about
// pod, oldest first. kube-scheduler and minisched write them to
// events.k8s.io/v1 (reported by the profile's schedulerName); the core/v1
// view of the same events is the fallback for a user who may read only
// that.
func SchedulingEvents(ctx context.Context, client kubernetes.Interface, pod *v1.Pod) ([]Event, error) {
	var out []Event
	sel := fields.Set{"regarding.name": pod.Name}.AsSelector().String()
	list, err := client.EventsV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err == nil {
		for _, e := range list.Items {
			if e.Regarding.UID != pod.UID || (e.Reason != "Scheduled" && e.Reason != "FailedScheduling") {
				continue
			}
			ev := Event{Reason: e.Reason, Note: e.Note, Reporter: e.ReportingController, Count: 1,
				Last: e.EventTime.Time}
			if e.Series != nil {
				ev.Count, ev.Last = e.Series.Count, e.Series.LastObservedTime.Time
			}
			if ev.Last.IsZero() {
				ev.Last = e.DeprecatedLastTimestamp.Time
			}
			out = append(out, ev)
		}
	} else {
		sel := fields.Set{"involvedObject.name": pod.Name}.AsSelector().String()
		list, cerr := client.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
		if cerr != nil {
			return nil, fmt.Errorf("listing the pod's events: %w", cerr)
		}
		for _, e := range list.Items {
			if e.InvolvedObject.UID != pod.UID || (e.Reason != "Scheduled" && e.Reason != "FailedScheduling") {
				continue
			}
			ev := Event{Reason: e.Reason, Note: e.Message, Reporter: e.ReportingController, Count: max(e.Count, 1),
				Last: e.LastTimestamp.Time}
			if e.Series != nil {
				ev.Count, ev.Last = e.Series.Count, e.Series.LastObservedTime.Time
			}
			if ev.Last.IsZero() {
				ev.Last = e.EventTime.Time
			}
			if ev.Reporter == "" {
				ev.Reporter = e.Source.Component
			}
			out = append(out, ev)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Last.Before(out[j].Last) })
	return out, nil
}

// fromEvents explains a pod without an attempt record from its events (and
// its PodScheduled condition), and says what they cannot tell.
func fromEvents(w io.Writer, pod *v1.Pod, events []Event) {
	key := pod.Namespace + "/" + pod.Name
	fmt.Fprintf(w, "Pod %s has no %s annotation: minisched did not record its attempts "+
		"(another scheduler handled it, or minisched ran without --record-attempts).\n",
		key, attempt.Annotation)
	var scheduled, failed *Event
	for i := range events {
		switch events[i].Reason {
		case "Scheduled":
			scheduled = &events[i]
		case "FailedScheduling":
			failed = &events[i]
		}
	}
	if pod.Spec.NodeName != "" {
		fmt.Fprintf(w, "\nBound to %s", pod.Spec.NodeName)
		if scheduled != nil {
			fmt.Fprintf(w, " by %s (%s, %s)", scheduled.Reporter, scheduled.Note,
				scheduled.Last.Local().Format(time.DateTime))
		} else {
			fmt.Fprint(w, " (no Scheduled event is left: events expire, by default after an hour)")
		}
		fmt.Fprintln(w, ".")
		fmt.Fprintln(w, "Cannot be known: the scores that chose this node, and which nodes were feasible "+
			"(kube-scheduler does not publish them).")
		return
	}
	msg, by, when, count := "", "", time.Time{}, int32(0)
	if failed != nil {
		msg, by, when, count = failed.Note, failed.Reporter, failed.Last, failed.Count
	} else if c := podstatus.Condition(&pod.Status, v1.PodScheduled); c != nil && c.Status == v1.ConditionFalse {
		msg, by, when = c.Message, "its PodScheduled condition", c.LastTransitionTime.Time
	}
	if msg == "" {
		fmt.Fprintf(w, "\nPending, with no FailedScheduling event and no PodScheduled=False condition: "+
			"no scheduler has tried it yet (is spec.schedulerName %q running?), or its events expired.\n",
			pod.Spec.SchedulerName)
		return
	}
	fmt.Fprintf(w, "\nPending. Last FailedScheduling, from %s", by)
	if count > 1 {
		fmt.Fprintf(w, " (%d times)", count)
	}
	if !when.IsZero() {
		fmt.Fprintf(w, ", %s", when.Local().Format(time.DateTime))
	}
	fmt.Fprintf(w, ":\n  %s\n", msg)
	if s, ok := ParseFailedScheduling(msg); ok {
		fmt.Fprintf(w, "\nOf %d nodes:\n", s.NumNodes)
		for _, r := range s.Reasons {
			if r.Nodes == 0 {
				fmt.Fprintf(w, "  all  %s\n", r.Reason)
				continue
			}
			fmt.Fprintf(w, "  %3d  %s\n", r.Nodes, r.Reason)
		}
		if s.PostFilter != "" {
			fmt.Fprintf(w, "Then %s\n", s.PostFilter)
		}
	}
	fmt.Fprintln(w, "\nCannot be known from events: which node failed which plugin (only how many nodes "+
		"each reason ruled out), whether the plugins after a node's first failure would have passed, "+
		"and any scores.")
}

// FailedScheduling is a FailedScheduling message taken apart.
type FailedScheduling struct {
	// NumNodes is how many nodes the scheduler considered.
	NumNodes int
	// Reasons count the nodes each reason ruled out; a Reason with 0 Nodes
	// ruled out every node (a PreFilter rejection).
	Reasons []ReasonCount
	// PostFilter is what preemption said, if it was tried.
	PostFilter string
}

// ReasonCount is one reason and how many nodes it ruled out.
type ReasonCount struct {
	Nodes  int
	Reason string
}

// failedSchedulingRE matches kube-scheduler's FitError message:
// "0/3 nodes are available: 1 node(s) had ..., 2 Insufficient cpu. preemption: ...".
var failedSchedulingRE = regexp.MustCompile(`^0/(\d+) nodes are available: (.*?)\.(?: (.*))?$`)

// countRE matches one "N reason" of the histogram.
var countRE = regexp.MustCompile(`^(\d+) (.+)$`)

// ParseFailedScheduling takes a FailedScheduling message apart into reason
// counts; ok is false for a message of another form.
func ParseFailedScheduling(msg string) (FailedScheduling, bool) {
	m := failedSchedulingRE.FindStringSubmatch(msg)
	if m == nil {
		return FailedScheduling{}, false
	}
	n, _ := strconv.Atoi(m[1])
	s := FailedScheduling{NumNodes: n, PostFilter: m[3]}
	// The histogram joins "N reason" with ", "; a reason may itself hold a
	// comma, so a part that does not start with a count continues the
	// previous one.
	var parts []string
	for _, p := range strings.Split(m[2], ", ") {
		if len(parts) > 0 && !countRE.MatchString(p) {
			parts[len(parts)-1] += ", " + p
			continue
		}
		parts = append(parts, p)
	}
	for _, p := range parts {
		if c := countRE.FindStringSubmatch(p); c != nil {
			k, _ := strconv.Atoi(c[1])
			s.Reasons = append(s.Reasons, ReasonCount{Nodes: k, Reason: c[2]})
		} else {
			s.Reasons = append(s.Reasons, ReasonCount{Reason: p})
		}
	}
	return s, true
}
