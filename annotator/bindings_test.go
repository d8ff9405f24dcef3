// Unit tests of the annotator's parts: binding records, hot values, reading
// Scheduled events, and the Prometheus queries (against a fake HTTP API).
package annotator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minisched/minisched/annotator"
	"github.com/minisched/minisched/plugins/dynamic"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// cranePolicy is crane-scheduler's default hotValue policy.
var cranePolicy = []dynamic.HotValuePolicy{
	{TimeRange: metav1.Duration{Duration: 5 * time.Minute}, Count: 5},
	{TimeRange: metav1.Duration{Duration: time.Minute}, Count: 2},
}

func bindingsAgo(node string, ages ...time.Duration) []annotator.Binding {
	var out []annotator.Binding
	for i, age := range ages {
		out = append(out, annotator.Binding{Node: node, Namespace: "ns", Pod: fmt.Sprintf("%s-p%d", node, i),
			Time: now.Add(-age)})
	}
	return out
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func TestHotValue(t *testing.T) {
	tests := []struct {
		name     string
		bindings []annotator.Binding
		want     int
	}{
		{name: "no bindings", want: 0},
		{name: "one binding", bindings: bindingsAgo("n1", 10*time.Second), want: 0},
		// ⌊2/2⌋ + ⌊2/5⌋
		{name: "two in the last minute", bindings: bindingsAgo("n1", 10*time.Second, 20*time.Second), want: 1},
		// ⌊5/2⌋ + ⌊5/5⌋
		{name: "five in the last minute", bindings: bindingsAgo("n1", repeat(30*time.Second, 5)...), want: 3},
		// only the 5m range sees them: ⌊0/2⌋ + ⌊5/5⌋
		{name: "five, two to four minutes ago", bindings: bindingsAgo("n1", repeat(3*time.Minute, 5)...), want: 1},
		{name: "older than every range", bindings: bindingsAgo("n1", repeat(6*time.Minute, 9)...), want: 0},
		{name: "exactly at the edge is out", bindings: bindingsAgo("n1", repeat(time.Minute, 2)...), want: 0},
		{name: "other nodes' bindings do not count", bindings: bindingsAgo("n2", repeat(time.Second, 9)...), want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := annotator.NewBindingRecords(annotator.DefaultBindingHeapSize)
			for _, b := range tt.bindings {
				r.Add(b)
			}
			if got := annotator.HotValue(cranePolicy, r, "n1", now); got != tt.want {
				t.Errorf("HotValue = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestBindingRecords(t *testing.T) {
	t.Run("full records drop the oldest", func(t *testing.T) {
		r := annotator.NewBindingRecords(3)
		// Added out of order: the heap orders by time, not by arrival.
		for _, age := range []time.Duration{time.Second, 5 * time.Second, 2 * time.Second, 4 * time.Second, 3 * time.Second} {
			r.Add(bindingsAgo("n1", age)[0])
		}
		if r.Len() != 3 {
			t.Fatalf("Len = %d, want 3", r.Len())
		}
		// Kept: 1s, 2s and 3s ago; 4s and 5s were the oldest when the records were full.
		if got := r.Count("n1", now.Add(-3500*time.Millisecond)); got != 3 {
			t.Errorf("Count since 3.5s ago = %d, want 3", got)
		}
	})
	t.Run("ForgetBefore drops old bindings only", func(t *testing.T) {
		r := annotator.NewBindingRecords(10)
		for _, b := range bindingsAgo("n1", time.Second, time.Minute, 10*time.Minute) {
			r.Add(b)
		}
		r.ForgetBefore(now.Add(-5 * time.Minute))
		if r.Len() != 2 {
			t.Errorf("Len after ForgetBefore = %d, want 2", r.Len())
		}
	})
	t.Run("size 0 keeps nothing", func(t *testing.T) {
		r := annotator.NewBindingRecords(0)
		r.Add(bindingsAgo("n1", time.Second)[0])
		if r.Len() != 0 {
			t.Errorf("Len = %d, want 0", r.Len())
		}
	})
}

func TestBindingFromEvent(t *testing.T) {
	eventTime := now.Add(-time.Second)
	last := now.Add(-2 * time.Second)
	created := now.Add(-3 * time.Second)
	event := func(mutate func(*v1.Event)) *v1.Event {
		ev := &v1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p1.abc", CreationTimestamp: metav1.NewTime(created)},
			Type:       v1.EventTypeNormal, Reason: "Scheduled",
			Message:   "Successfully assigned ns/p1 to node-a",
			EventTime: metav1.NewMicroTime(eventTime), LastTimestamp: metav1.NewTime(last),
		}
		mutate(ev)
		return ev
	}
	tests := []struct {
		name    string
		ev      *v1.Event
		want    annotator.Binding
		wantOK  bool
		wantErr string
	}{
		{name: "events.k8s.io event: no count, eventTime", ev: event(func(*v1.Event) {}),
			want: annotator.Binding{Node: "node-a", Namespace: "ns", Pod: "p1", Time: eventTime}, wantOK: true},
		{name: "legacy event: count, lastTimestamp", ev: event(func(e *v1.Event) { e.Count = 2 }),
			want: annotator.Binding{Node: "node-a", Namespace: "ns", Pod: "p1", Time: last}, wantOK: true},
		{name: "no count and no eventTime", ev: event(func(e *v1.Event) { e.EventTime = metav1.MicroTime{} }),
			want: annotator.Binding{Node: "node-a", Namespace: "ns", Pod: "p1", Time: last}, wantOK: true},
		{name: "no times but creation", ev: event(func(e *v1.Event) {
			e.EventTime, e.LastTimestamp = metav1.MicroTime{}, metav1.Time{}
		}), want: annotator.Binding{Node: "node-a", Namespace: "ns", Pod: "p1", Time: created}, wantOK: true},
		{name: "FailedScheduling", ev: event(func(e *v1.Event) { e.Reason, e.Type = "FailedScheduling", v1.EventTypeWarning })},
		{name: "a Warning named Scheduled", ev: event(func(e *v1.Event) { e.Type = v1.EventTypeWarning })},
		{name: "odd message", ev: event(func(e *v1.Event) { e.Message = "assigned somewhere" }),
			wantErr: `message "assigned somewhere" is not`},
		{name: "no namespace in the message", ev: event(func(e *v1.Event) { e.Message = "Successfully assigned a/b/c to n" }),
			wantErr: `"a/b/c" is not <namespace>/<pod>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := annotator.BindingFromEvent(tt.ev)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); ok && diff != "" {
				t.Errorf("binding (-want +got):\n%s", diff)
			}
		})
	}
}

// fakePrometheus answers /api/v1/query from a table of query → value and
// records the queries it was asked, in order.
type fakePrometheus struct {
	mu      sync.Mutex
	answers map[string]string
	asked   []string
}

func (f *fakePrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := r.Form.Get("query")
	f.mu.Lock()
	f.asked = append(f.asked, q)
	value, ok := f.answers[q]
	f.mu.Unlock()
	result := []any{}
	if ok {
		result = append(result, map[string]any{"metric": map[string]string{}, "value": []any{1.0, value}})
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success",
		"data": map[string]any{"resultType": "vector", "result": result}})
}

func TestNodeMetricQueries(t *testing.T) {
	withIP := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"},
		Status: v1.NodeStatus{Addresses: []v1.NodeAddress{
			{Type: v1.NodeHostName, Address: "node-b"}, {Type: v1.NodeInternalIP, Address: "10.0.0.7"}}}}
	noIP := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	byIP := `cpu{instance=~"10\\.0\\.0\\.7"} / 100`
	byIPPort := `cpu{instance=~"10\\.0\\.0\\.7:.+"} / 100`
	byName := `cpu{instance=~"node-b"} / 100`
	tests := []struct {
		name      string
		node      *v1.Node
		answers   map[string]string
		want      string
		wantAsked []string
		wantErr   string
	}{
		{name: "InternalIP first", node: withIP, answers: map[string]string{byIP: "0.25", byName: "0.5"},
			want: "0.25000", wantAsked: []string{byIP}},
		{name: "then InternalIP with a port", node: withIP, answers: map[string]string{byIPPort: "0.875"},
			want: "0.87500", wantAsked: []string{byIP, byIPPort}},
		{name: "then the node's name", node: withIP, answers: map[string]string{byName: "0.123456"},
			want: "0.12346", wantAsked: []string{byIP, byIPPort, byName}},
		{name: "no InternalIP: the name all along", node: noIP,
			answers: map[string]string{`cpu{instance=~"node-a:.+"} / 100`: "0.5"}, want: "0.50000",
			wantAsked: []string{`cpu{instance=~"node-a"} / 100`, `cpu{instance=~"node-a:.+"} / 100`}},
		{name: "negative becomes 0", node: withIP, answers: map[string]string{byIP: "-0.2"}, want: "0.00000",
			wantAsked: []string{byIP}},
		{name: "NaN becomes 0", node: withIP, answers: map[string]string{byIP: "NaN"}, want: "0.00000",
			wantAsked: []string{byIP}},
		{name: "nothing anywhere", node: withIP, wantAsked: []string{byIP, byIPPort, byName},
			wantErr: "no value of cpu for node node-b (InternalIP 10.0.0.7): no series matched"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakePrometheus{answers: tt.answers}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			prom, err := annotator.NewPrometheus(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			got, err := prom.NodeMetric(context.Background(), "cpu", tt.node)
			switch {
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			case tt.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case got != tt.want:
				t.Errorf("NodeMetric = %q, want %q", got, tt.want)
			}
			if diff := cmp.Diff(tt.wantAsked, fake.asked); diff != "" {
				t.Errorf("queries (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeMetricServerError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "bad_data",
			"error": "parse error"})
	}))
	defer srv.Close()
	prom, err := annotator.NewPrometheus(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = prom.NodeMetric(context.Background(), "cpu", &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	for _, want := range []string{"no value of cpu for node n1", `query "cpu{instance=~\"n1\"} / 100"`, "parse error"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one containing %q", err, want)
		}
	}
}
