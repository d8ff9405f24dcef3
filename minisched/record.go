// The attempt record, built once a scheduling cycle has ended, from what
// the cycle returned (its scheduleResult and CycleState): the cycle itself
// narrates nothing. It is built only when someone reads it (an Observer, a
// Watcher that watches, or annotations on), and gets its outcome when that
// is known: from the failure handler, or from the binding cycle once the
// pod is bound.

package minisched

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/minisched/minisched/minisched/attempt"
	"github.com/minisched/minisched/minisched/framework"
)

// recording reports whether attempts are recorded: for an observer, for a
// watcher that watches now, or for annotations.
func (s *Scheduler) recording() bool { return s.observer != nil || s.records != nil || s.watching() }

// recordAttempt builds the record of the attempt whose scheduling cycle
// just ended, without its outcome (see setOutcome); nil when nobody reads
// records. It must run before the next cycle refreshes the snapshot, whose
// nodes it lists.
func (s *Scheduler) recordAttempt(schedFramework *framework.Framework, state *framework.CycleState,
	podInfo *framework.QueuedPodInfo, result scheduleResult) *attempt.Record {
	if !s.recording() {
		return nil
	}
	seen := &result.seen
	rec := &attempt.Record{
		Version: attempt.Version, Profile: schedFramework.ProfileName(), Attempt: podInfo.Attempts,
		NumNodes: s.snapshot.NumNodes(), Filters: schedFramework.FilterPluginNames(),
		Skipped: sets.List(state.SkipFilterPlugins), Extenders: filteringExtenders(schedFramework, podInfo.Pod),
		Hint: seen.hint, Group: result.podGroup,
	}
	if result.nominatingInfo.Mode() == framework.ModeOverride && result.nominatingInfo.NominatedNodeName != "" {
		rec.NominatedNode = result.nominatingInfo.NominatedNodeName
		for _, v := range seen.victims {
			rec.Victims = append(rec.Victims, framework.PodKey(v))
		}
	}
	d := seen.diagnosis
	if d.NodeToStatus == nil {
		return rec // the search for feasible nodes did not finish
	}
	if d.PreFilterMsg != "" {
		rec.PreFilter = &attempt.Verdict{Plugin: d.NodeToStatus.AbsentNodesStatus().Plugin(), Reason: d.PreFilterMsg}
		return rec
	}
	rec.Nodes, rec.NotEvaluated = s.nodeRecords(schedFramework, rec, seen)
	return rec
}

// filteringExtenders names the extenders that filter nodes for pod, in the
// order they run.
func filteringExtenders(schedFramework *framework.Framework, pod *v1.Pod) []string {
	var names []string
	for _, ext := range schedFramework.Extenders() {
		if ext.IsFilter() && ext.IsInterested(pod) {
			names = append(names, ext.Name())
		}
	}
	return names
}

// nodeRecords lists each snapshot node's outcome, in snapshot order, and
// counts the nodes the search never reached. It sets rec.Scorers.
func (s *Scheduler) nodeRecords(schedFramework *framework.Framework, rec *attempt.Record,
	seen *cycleSeen) ([]attempt.NodeRecord, int) {
	allNodes, err := s.snapshot.NodeInfos().List()
	if err != nil {
		return nil, 0
	}
	scores := nodeScores(schedFramework, rec, seen)
	feasible := sets.New[string]()
	for _, n := range seen.feasible {
		feasible.Insert(n.Node().Name)
	}
	statuses := seen.diagnosis.NodeToStatus
	// The nodes without a verdict of their own share the absent-nodes
	// status: a PreFilterResult left them out if it says why; else the
	// search did not reach them.
	absent := statuses.AbsentNodesStatus()
	var (
		nodes        []attempt.NodeRecord
		notEvaluated int
	)
	for _, ni := range allNodes {
		name := ni.Node().Name
		n := attempt.NodeRecord{Name: name}
		sts := statuses.Get(name)
		switch {
		case feasible.Has(name):
			if sc, ok := scores[name]; ok {
				n.Scores, n.Total = sc.Scores, sc.Total
			}
		case sts == absent && absent.Message() == "":
			notEvaluated++
			continue
		default:
			n.RejectedBy, n.Reason = sts.Plugin(), sts.Message()
			n.Unresolvable = sts.Code() == framework.UnschedulableAndUnresolvable
			if n.RejectedBy == "" {
				n.RejectedBy = attempt.PreFilterRejector
			}
		}
		nodes = append(nodes, n)
	}
	return nodes, notEvaluated
}

// nodeScores sets rec.Scorers (see scorers) and returns each scored
// node's [raw, normalised, weighted] score per scorer.
func nodeScores(schedFramework *framework.Framework, rec *attempt.Record,
	seen *cycleSeen) map[string]attempt.NodeRecord {
	if len(seen.scores) == 0 {
		return nil
	}
	rec.Scorers = scorers(schedFramework, seen)
	index := make(map[string]int, len(rec.Scorers))
	for i, sc := range rec.Scorers {
		index[sc.Name] = i
	}
	out := make(map[string]attempt.NodeRecord, len(seen.scores))
	for _, ns := range seen.scores {
		n := attempt.NodeRecord{Name: ns.Name, Total: ns.TotalScore, Scores: make([][3]int64, len(rec.Scorers))}
		for _, ps := range ns.Scores {
			i, ok := index[ps.Name]
			if !ok {
				continue
			}
			if sc := rec.Scorers[i]; sc.Extender {
				// An extender scores 0–10; scaled to the plugins' 0–100.
				n.Scores[i] = [3]int64{ps.Raw, ps.Raw * (framework.MaxNodeScore / extenderv1.MaxExtenderPriority), ps.Score}
			} else {
				n.Scores[i] = [3]int64{ps.Raw, ps.Score / sc.Weight, ps.Score}
			}
		}
		out[ns.Name] = n
	}
	return out
}

// scorers lists what scored the nodes: the Score plugins with a weight, in
// the order they ran, then the prioritizing extenders that scored a node, in
// the order they are configured. An extender without a prioritize verb
// answers zeros, and a plugin of weight 0 counts for nothing: both are left
// out. The order does not depend on the nodes' order, which selectHost
// changes when it builds its heap in their array.
func scorers(schedFramework *framework.Framework, seen *cycleSeen) []attempt.Scorer {
	var out []attempt.Scorer
	named := sets.New[string]()
	for _, ns := range seen.scores {
		for _, ps := range ns.Scores {
			if named.Has(ps.Name) {
				continue
			}
			named.Insert(ps.Name)
			if _, isExt := seen.extenderWeights[ps.Name]; !isExt && schedFramework.ScoreWeight(ps.Name) > 0 {
				out = append(out, attempt.Scorer{Name: ps.Name, Weight: schedFramework.ScoreWeight(ps.Name)})
			}
		}
	}
	for _, ext := range schedFramework.Extenders() {
		if weight, ok := seen.extenderWeights[ext.Name()]; ok && named.Has(ext.Name()) {
			out = append(out, attempt.Scorer{Name: ext.Name(), Weight: weight, Extender: true})
		}
	}
	return out
}

// recordOutcome completes rec (nil: not recorded) with how the attempt at
// pod ended, and hands it to its readers (publishRecord). The binding cycle
// calls it once the pod is bound, beside the Scheduled event; the failure
// handler, beside the FailedScheduling event.
func (s *Scheduler) recordOutcome(pod *v1.Pod, rec *attempt.Record, result attempt.Result, node, message string) {
	if rec == nil {
		return
	}
	setOutcome(rec, result, node, message)
	s.publishRecord(pod, rec)
}

// setOutcome completes a record with how the attempt ended.
func setOutcome(rec *attempt.Record, result attempt.Result, node, message string) {
	rec.Result, rec.Node, rec.Time = result, node, time.Now()
	rec.Message = truncate(message, attempt.MaxMessageBytes)
}

// publishRecord hands a completed record to its readers: the record writer
// (annotations on), which patches it onto pod, and the observer.
func (s *Scheduler) publishRecord(pod *v1.Pod, rec *attempt.Record) {
	if s.records != nil {
		s.records.add(pod, rec)
	}
	s.observe(pod, rec)
}
