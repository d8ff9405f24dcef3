package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	// None of these may panic.
	m.Attempt(ScheduledResult, "p", time.Second)
	m.Algorithm(time.Second)
	m.PodBound(1, time.Now())
	m.PreemptionAttempt()
	m.PreemptionVictims(2)
	m.QueueIncoming(ActiveQ, "PodAdd")
	m.ExtensionPoint("Filter", "Success", "p", time.Second)
	m.PluginExecution("A", "Filter", "Success", time.Second)
	m.GoroutineStarted(Binding)
	m.GoroutineDone(Binding)
	m.EventHandled("NodeAdd", time.Second)
	m.RegisterQueue(nil)
	m.RegisterPodGroups()
	m.PodGroupAttempt(ScheduledResult, "p", time.Second)
	m.PodGroupAlgorithm(time.Second)
}

// TestSLIAttemptsLabel checks that the attempts label stops at "15+", so
// the metric's cardinality stays bounded.
func TestSLIAttemptsLabel(t *testing.T) {
	tests := []struct {
		attempts int
		want     string
	}{
		{attempts: 1, want: "1"},
		{attempts: 14, want: "14"},
		{attempts: 15, want: "15+"},
		{attempts: 40, want: "15+"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			m := New()
			m.PodBound(tt.attempts, time.Now())
			families, err := m.Gatherer().Gather()
			if err != nil {
				t.Fatal(err)
			}
			var labels []string
			for _, f := range families {
				if f.GetName() == "scheduler_pod_scheduling_sli_duration_seconds" {
					for _, s := range f.GetMetric() {
						labels = append(labels, s.GetLabel()[0].GetValue())
					}
				}
			}
			if len(labels) != 1 || labels[0] != tt.want {
				t.Errorf("attempts labels = %v, want [%s]", labels, tt.want)
			}
		})
	}
}

type fakeQueue struct{}

func (fakeQueue) PendingPodCounts() map[string]int {
	return map[string]int{ActiveQ: 3, Unschedulable: 2, Gated: 1, Incomplete: 4}
}

func (fakeQueue) QueuedEntityCounts() map[QueueEntity]int {
	return map[QueueEntity]int{{Queue: ActiveQ, Type: PodEntity}: 1, {Queue: ActiveQ, Type: PodGroupEntity}: 1,
		{Queue: Unschedulable, Type: PodEntity}: 2, {Queue: Gated, Type: PodEntity}: 1}
}

func (fakeQueue) UnschedulablePodsByPlugin() map[PluginProfile]int {
	return map[PluginProfile]int{{Plugin: "NodeResourcesFit", Profile: "default-scheduler"}: 2}
}

// TestQueueGauges checks that the queue's gauges are read at scrape time,
// every queue label of scheduler_pending_pods present even when empty, and
// a pod group counting its members there and once among the entities.
func TestQueueGauges(t *testing.T) {
	m := New()
	m.RegisterQueue(fakeQueue{})
	want := `
# HELP scheduler_pending_pods Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulableEntities that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to schedule because they are gated; 'incomplete' means number of pods in incompletePodGroupPods; 'pending' means number of pods in pendingPodGroupPods.
# TYPE scheduler_pending_pods gauge
scheduler_pending_pods{queue="active"} 3
scheduler_pending_pods{queue="backoff"} 0
scheduler_pending_pods{queue="gated"} 1
scheduler_pending_pods{queue="incomplete"} 4
scheduler_pending_pods{queue="pending"} 0
scheduler_pending_pods{queue="unschedulable"} 2
# HELP scheduler_queued_entities Number of queued scheduling entities ('pod' or 'podgroup'; 'pod' stands for individual pods that are not members of any podgroup) by the queue type. 'active' means number of entities in activeQ; 'backoff' means number of entities in backoffQ; 'unschedulable' means number of entities in unschedulableEntities that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable entities that the scheduler never attempted to schedule because they are gated.
# TYPE scheduler_queued_entities gauge
scheduler_queued_entities{queue="active",type="pod"} 1
scheduler_queued_entities{queue="active",type="podgroup"} 1
scheduler_queued_entities{queue="gated",type="pod"} 1
scheduler_queued_entities{queue="unschedulable",type="pod"} 2
# HELP scheduler_unschedulable_pods The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for all plugins that caused it to not schedule and so this metric have meaning only when broken down by plugin.
# TYPE scheduler_unschedulable_pods gauge
scheduler_unschedulable_pods{plugin="NodeResourcesFit",profile="default-scheduler"} 2
`
	if err := testutil.GatherAndCompare(m.Gatherer(), strings.NewReader(want),
		"scheduler_pending_pods", "scheduler_queued_entities", "scheduler_unschedulable_pods"); err != nil {
		t.Error(err)
	}
}
