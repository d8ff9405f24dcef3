//go:build conformance

package conformance

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// freePort returns a TCP port nothing listens on at the moment.
func freePort(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	_, port, _ := net.SplitHostPort(lis.Addr().String())
	return port
}

// scrapeMetrics reads url's metrics in Prometheus' text format; an HTTPS
// url's self-signed certificate is accepted.
func scrapeMetrics(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a test against a local scheduler
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// shape is a metric family's type and label names.
func shape(f *dto.MetricFamily) string {
	labels := map[string]bool{}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = true
		}
	}
	var names []string
	for l := range labels {
		names = append(names, l)
	}
	sort.Strings(names)
	return f.GetType().String() + "{" + strings.Join(names, ",") + "}"
}

// TestMetricNames runs the same workload (pods scheduled, one rejected, one
// preempting) behind both schedulers and checks that every scheduler_*
// metric minisched reports, kube-scheduler reports too, with the same type
// and label names.
func TestMetricNames(t *testing.T) {
	classes := priorityClasses(map[string]int32{"low": 10, "high": 1000})
	c := Case{Name: "metrics", Profiles: defaultProfile, Backlog: []Step{classes,
		nodes(node("n1").Capacity(R{"cpu": "2"}), node("n2").Capacity(R{"cpu": "2"})),
		pods(pod("a").PriorityClassName("low").Req(R{"cpu": "2"}).TerminationGracePeriod(0),
			pod("b").PriorityClassName("low").Req(R{"cpu": "2"}).TerminationGracePeriod(0),
			pod("too-big").Req(R{"cpu": "3"}))},
		Steps: []Step{waitBound("a", "b"), pods(pod("vip").PriorityClassName("high").Req(R{"cpu": "1"})),
			waitBound("vip")}}
	_, ours := runAndScrape(t, c, Minisched, true)
	_, theirs := runAndScrape(t, c, KubeScheduler, true)
	var checked []string
	for name, f := range ours {
		if !strings.HasPrefix(name, "scheduler_") {
			continue
		}
		checked = append(checked, name)
		g := theirs[name]
		if g == nil {
			t.Errorf("%s: kube-scheduler does not report it", name)
			continue
		}
		if shape(f) != shape(g) {
			t.Errorf("%s: minisched %s, kube-scheduler %s", name, shape(f), shape(g))
		}
	}
	sort.Strings(checked)
	// Every metric the workload must have moved; plugin durations are
	// timed in a 10% sample of cycles only, so they may be missing.
	for _, name := range []string{
		"scheduler_event_handling_duration_seconds", "scheduler_framework_extension_point_duration_seconds",
		"scheduler_goroutines", "scheduler_pending_pods", "scheduler_pod_scheduling_attempts",
		"scheduler_pod_scheduling_sli_duration_seconds", "scheduler_preemption_attempts_total",
		"scheduler_preemption_victims", "scheduler_queue_incoming_pods_total", "scheduler_schedule_attempts_total",
		"scheduler_scheduling_algorithm_duration_seconds", "scheduler_scheduling_attempt_duration_seconds",
		"scheduler_unschedulable_pods",
	} {
		if ours[name] == nil {
			t.Errorf("minisched does not report %s", name)
		}
	}
	t.Logf("same type and labels in both: %s", strings.Join(checked, ", "))
}
