// Tests for Dynamic: args and policy loading, annotation parsing and
// freshness, Filter, Score and the node queueing hint, all with a fake clock.
package dynamic

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// cranePolicy is crane-scheduler's published policy, verbatim.
const cranePolicy = "testdata/crane-policy.yaml"

// now is the fake clock's time in every test.
var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// shanghai is the zone crane deployments run in; tests pass it explicitly,
// so that a timestamp's "Z" is not UTC there.
var shanghai = mustLoad("Asia/Shanghai")

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// ago is an annotation value written d before now, in crane's form.
func ago(value string, d time.Duration) string {
	return FormatAnnotation(value, now.Add(-d), shanghai)
}

func loadedNode(name string, annotations map[string]string) *v1.Node {
	n := st.MakeNode().Name(name).Obj()
	n.Annotations = annotations
	return n
}

func testPlugin(t *testing.T, policyYAML string) *Dynamic {
	t.Helper()
	policy, err := ParsePolicy([]byte(policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	return newWithPolicy(policy, clocktesting.NewFakePassiveClock(now), shanghai)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNewArgsAndPolicy(t *testing.T) {
	good, err := os.ReadFile(cranePolicy)
	if err != nil {
		t.Fatal(err)
	}
	policyArgs := func(path string) string { return `{"policyConfigPath":"` + path + `"}` }
	tests := []struct {
		name    string
		raw     string
		wantErr string
	}{
		{name: "crane's policy, verbatim", raw: policyArgs(cranePolicy)},
		{name: "apiVersion and kind in args", raw: `{"apiVersion":"kubescheduler.config.k8s.io/v1","kind":"DynamicArgs",` +
			`"policyConfigPath":"` + cranePolicy + `"}`},
		{name: "no args", raw: ``, wantErr: "Dynamic args: policyConfigPath: Required value"},
		{name: "empty path", raw: `{"policyConfigPath":""}`, wantErr: "policyConfigPath: Required value"},
		{name: "unknown field", raw: `{"policyConfigPath":"x","policyPath":"y"}`, wantErr: `unknown field "policyPath"`},
		{name: "missing file", raw: policyArgs("testdata/nope.yaml"),
			wantErr: "policyConfigPath: reading the DynamicSchedulerPolicy: open testdata/nope.yaml"},
		{name: "unknown policy field", raw: policyArgs(writeFile(t, "typo.yaml",
			strings.Replace(string(good), "maxLimitPecent", "maxLimitPercent", 1))),
			wantErr: `typo.yaml: error unmarshaling JSON: while decoding JSON: json: unknown field "maxLimitPercent"`},
		{name: "wrong kind", raw: policyArgs(writeFile(t, "kind.yaml",
			strings.Replace(string(good), "kind: DynamicSchedulerPolicy", "kind: Policy", 1))),
			wantErr: `kind.yaml: kind: Unsupported value: "Policy"`},
		{name: "zero hot value count", raw: policyArgs(writeFile(t, "count.yaml",
			strings.Replace(string(good), "count: 5", "count: 0", 1))),
			wantErr: "spec.hotValue[0].count: Invalid value: 0: must be positive"},
		{name: "not YAML", raw: policyArgs(writeFile(t, "bad.yaml", "spec: [")), wantErr: "bad.yaml: error converting YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(context.Background(), &runtime.RawExtension{Raw: []byte(tt.raw)}, nil)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoadCranePolicy(t *testing.T) {
	got, err := LoadPolicyFile(cranePolicy)
	if err != nil {
		t.Fatal(err)
	}
	d := func(s string) metav1.Duration {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return metav1.Duration{Duration: v}
	}
	want := &DynamicSchedulerPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: PolicyAPIVersion, Kind: PolicyKind},
		Spec: PolicySpec{
			SyncPeriod: []SyncPolicy{
				{"cpu_usage_avg_5m", d("3m")}, {"cpu_usage_max_avg_1h", d("15m")}, {"cpu_usage_max_avg_1d", d("3h")},
				{"mem_usage_avg_5m", d("3m")}, {"mem_usage_max_avg_1h", d("15m")}, {"mem_usage_max_avg_1d", d("3h")},
			},
			Predicate: []PredicatePolicy{
				{"cpu_usage_avg_5m", 0.65}, {"cpu_usage_max_avg_1h", 0.75},
				{"mem_usage_avg_5m", 0.65}, {"mem_usage_max_avg_1h", 0.75},
			},
			Priority: []PriorityPolicy{
				{"cpu_usage_avg_5m", 0.2}, {"cpu_usage_max_avg_1h", 0.3}, {"cpu_usage_max_avg_1d", 0.5},
				{"mem_usage_avg_5m", 0.2}, {"mem_usage_max_avg_1h", 0.3}, {"mem_usage_max_avg_1d", 0.5},
			},
			HotValue: []HotValuePolicy{{d("5m"), 5}, {d("1m"), 2}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("policy (-want +got):\n%s", diff)
	}
	if active, ok := got.Spec.activeDuration("cpu_usage_max_avg_1h"); !ok || active != 20*time.Minute {
		t.Errorf("active duration of cpu_usage_max_avg_1h = %v, %v; want 20m (15m + 5m)", active, ok)
	}
	if _, ok := got.Spec.activeDuration("gpu_usage"); ok {
		t.Errorf("a metric without syncPolicy has an active duration")
	}
}

func TestParseAnnotation(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantValue float64
		// wantTime is the instant, compared with Equal.
		wantTime time.Time
		wantErr  string
	}{
		{name: "crane's form is wall-clock time in its zone", in: "0.31250,2026-11-23T20:00:00Z",
			wantValue: 0.3125, wantTime: now},
		{name: "RFC 3339 with an offset", in: "0.5,2026-11-23T13:00:00+01:00", wantValue: 0.5, wantTime: now},
		{name: "RFC 3339 with fractional seconds", in: "1,2026-11-23T12:00:00.5-00:00", wantValue: 1,
			wantTime: now.Add(500 * time.Millisecond)},
		{name: "hot value", in: "3,2026-11-23T20:00:00Z", wantValue: 3, wantTime: now},
		{name: "no timestamp", in: "0.5", wantErr: `"0.5" is not <value>,<timestamp>`},
		{name: "three parts", in: "0.5,1,2026-11-23T20:00:00Z", wantErr: "is not <value>,<timestamp>"},
		{name: "not a number", in: "high,2026-11-23T20:00:00Z", wantErr: `value "high"`},
		{name: "negative", in: "-0.1,2026-11-23T20:00:00Z", wantErr: `value "-0.1"`},
		{name: "NaN", in: "NaN,2026-11-23T20:00:00Z", wantErr: `value "NaN"`},
		{name: "bad timestamp", in: "0.5,yesterday", wantErr: `timestamp "yesterday"`},
		{name: "date only", in: "0.5,2026-11-23", wantErr: `timestamp "2026-11-23"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			value, ts, err := ParseAnnotation(tt.in, shanghai)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if value != tt.wantValue || !ts.Equal(tt.wantTime) {
				t.Errorf("got %v at %v, want %v at %v", value, ts, tt.wantValue, tt.wantTime)
			}
		})
	}
}

func TestFormatAnnotationRoundTrip(t *testing.T) {
	s := FormatAnnotation("0.25000", now, shanghai)
	if want := "0.25000,2026-11-23T20:00:00Z"; s != want {
		t.Fatalf("FormatAnnotation = %q, want %q", s, want)
	}
	if _, ts, err := ParseAnnotation(s, shanghai); err != nil || !ts.Equal(now) {
		t.Errorf("round trip: %v, %v; want %v", ts, err, now)
	}
}

func TestTimestampLocation(t *testing.T) {
	tests := []struct{ tz, want string }{
		{tz: "", want: "UTC"},
		{tz: "Asia/Shanghai", want: "Asia/Shanghai"},
		{tz: "Europe/Berlin", want: "Europe/Berlin"},
		{tz: "Not/AZone", want: "UTC"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Setenv("TZ", tt.tz)
			if got := TimestampLocation().String(); got != tt.want {
				t.Errorf("TimestampLocation() = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestFreshness(t *testing.T) {
	const active = 8 * time.Minute // a 3m period plus ExtraActivePeriod
	tests := []struct {
		name    string
		value   string
		want    float64
		wantErr string
	}{
		{name: "just written", value: ago("0.4", 0), want: 0.4},
		{name: "one second before it expires", value: ago("0.4", active-time.Second), want: 0.4},
		{name: "exactly expired", value: ago("0.4", active), wantErr: "is stale"},
		{name: "long stale", value: ago("0.4", time.Hour), wantErr: "is stale"},
		{name: "from the future", value: ago("0.4", -time.Minute), want: 0.4},
		{name: "missing", wantErr: "no annotation"},
		{name: "malformed", value: "0.4", wantErr: "is not <value>,<timestamp>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			anno := map[string]string{}
			if tt.value != "" {
				anno["m"] = tt.value
			}
			got, err := freshValue(anno, "m", active, now, shanghai)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("freshValue = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// filterPolicy has two limits, one of them off, and a metric without a
// syncPolicy entry.
const filterPolicy = `apiVersion: scheduler.policy.crane.io/v1alpha1
kind: DynamicSchedulerPolicy
spec:
  syncPolicy:
  - {name: cpu_usage_avg_5m, period: 3m}
  - {name: mem_usage_avg_5m, period: 3m}
  - {name: cpu_usage_max_avg_1h, period: 15m}
  predicate:
  - {name: cpu_usage_avg_5m, maxLimitPecent: 0.65}
  - {name: mem_usage_avg_5m, maxLimitPecent: 0}
  - {name: cpu_usage_max_avg_1h, maxLimitPecent: 0.75}
  - {name: gpu_usage, maxLimitPecent: 0.1}
`

func TestFilter(t *testing.T) {
	pod := st.MakePod().Name("p").Obj()
	dsPod := st.MakePod().Name("ds").OwnerReference("DaemonSet", "agent", "u1").Obj()
	tests := []struct {
		name        string
		pod         *v1.Pod
		annotations map[string]string
		want        *framework.Status
	}{
		{name: "no annotations", pod: pod},
		{name: "under every limit", pod: pod, annotations: map[string]string{
			"cpu_usage_avg_5m": ago("0.65", time.Minute), "cpu_usage_max_avg_1h": ago("0.7", time.Minute)}},
		{name: "over the 5m cpu limit", pod: pod, annotations: map[string]string{"cpu_usage_avg_5m": ago("0.66", time.Minute)},
			want: framework.NewStatus(framework.Unschedulable, "Load[cpu_usage_avg_5m] of node[n1] is too high")},
		{name: "over the 1h cpu limit, fresh for 20m", pod: pod,
			annotations: map[string]string{"cpu_usage_max_avg_1h": ago("0.9", 19*time.Minute)},
			want:        framework.NewStatus(framework.Unschedulable, "Load[cpu_usage_max_avg_1h] of node[n1] is too high")},
		{name: "the first metric over its limit is named", pod: pod, annotations: map[string]string{
			"cpu_usage_avg_5m": ago("0.9", time.Minute), "cpu_usage_max_avg_1h": ago("0.9", time.Minute)},
			want: framework.NewStatus(framework.Unschedulable, "Load[cpu_usage_avg_5m] of node[n1] is too high")},
		{name: "limit 0 is off", pod: pod, annotations: map[string]string{"mem_usage_avg_5m": ago("0.99", time.Minute)}},
		{name: "stale value ignored", pod: pod, annotations: map[string]string{"cpu_usage_avg_5m": ago("0.99", 8*time.Minute)}},
		{name: "malformed value ignored", pod: pod, annotations: map[string]string{"cpu_usage_avg_5m": "0.99"}},
		{name: "metric without syncPolicy ignored", pod: pod, annotations: map[string]string{"gpu_usage": ago("0.99", 0)}},
		{name: "DaemonSet pod not filtered", pod: dsPod, annotations: map[string]string{
			"cpu_usage_avg_5m": ago("0.99", time.Minute)}},
	}
	pl := testPlugin(t, filterPolicy)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ni := plugintesting.MakeNodeInfo(loadedNode("n1", tt.annotations))
			if got := pl.Filter(ctx, framework.NewCycleState(), tt.pod, ni); !got.Equal(tt.want) {
				t.Errorf("Filter = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("node not found", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		got := pl.Filter(ctx, framework.NewCycleState(), pod, framework.NewNodeInfo())
		if want := framework.NewStatus(framework.Error, ErrReasonNodeNotFound); !got.Equal(want) {
			t.Errorf("Filter = %v, want %v", got, want)
		}
	})
}

// scorePolicy weighs cpu 1 and memory 3.
const scorePolicy = `apiVersion: scheduler.policy.crane.io/v1alpha1
kind: DynamicSchedulerPolicy
spec:
  syncPolicy:
  - {name: cpu_usage_avg_5m, period: 3m}
  - {name: mem_usage_avg_5m, period: 3m}
  priority:
  - {name: cpu_usage_avg_5m, weight: 1}
  - {name: mem_usage_avg_5m, weight: 3}
  - {name: gpu_usage, weight: 0}
`

func TestScore(t *testing.T) {
	tests := []struct {
		name        string
		policy      string
		annotations map[string]string
		want        int64
	}{
		{name: "idle", policy: scorePolicy, annotations: map[string]string{
			"cpu_usage_avg_5m": ago("0", 0), "mem_usage_avg_5m": ago("0", 0)}, want: 100},
		// (0.8×1 + 0.4×3) × 100 / 4 = 50
		{name: "weights", policy: scorePolicy, annotations: map[string]string{
			"cpu_usage_avg_5m": ago("0.2", 0), "mem_usage_avg_5m": ago("0.6", 0)}, want: 50},
		// (0.6×1 + 0.8×3) × 100 / 4 = 75: memory weighs more
		{name: "weights, the other way", policy: scorePolicy, annotations: map[string]string{
			"cpu_usage_avg_5m": ago("0.4", 0), "mem_usage_avg_5m": ago("0.2", 0)}, want: 75},
		// 0.9×1×100 / 4 = 22.5 → 22: a missing metric adds 0 but keeps its weight
		{name: "missing metric counts as fully used", policy: scorePolicy, annotations: map[string]string{
			"cpu_usage_avg_5m": ago("0.1", 0)}, want: 22},
		{name: "stale metric counts as fully used", policy: scorePolicy, annotations: map[string]string{
			"cpu_usage_avg_5m": ago("0.1", 0), "mem_usage_avg_5m": ago("0", 9*time.Minute)}, want: 22},
		{name: "no annotations", policy: scorePolicy, want: 0},
		// 100 − 3×10 = 70
		{name: "hot value", policy: scorePolicy, annotations: map[string]string{
			"cpu_usage_avg_5m": ago("0", 0), "mem_usage_avg_5m": ago("0", 0), HotValueKey: ago("3", 4*time.Minute)},
			want: 70},
		{name: "stale hot value ignored", policy: scorePolicy, annotations: map[string]string{
			"cpu_usage_avg_5m": ago("0", 0), "mem_usage_avg_5m": ago("0", 0), HotValueKey: ago("3", 5*time.Minute)},
			want: 100},
		// 50 − 8×10 clamps to 0
		{name: "clamped at 0", policy: scorePolicy, annotations: map[string]string{
			"cpu_usage_avg_5m": ago("0.2", 0), "mem_usage_avg_5m": ago("0.6", 0), HotValueKey: ago("8", 0)}, want: 0},
		// usage above 1 makes the sum negative; still 0
		{name: "overcommitted clamps at 0", policy: scorePolicy, annotations: map[string]string{
			"cpu_usage_avg_5m": ago("1.5", 0), "mem_usage_avg_5m": ago("1.2", 0)}, want: 0},
		{name: "no priority metrics", policy: filterPolicy, annotations: map[string]string{
			"cpu_usage_avg_5m": ago("0", 0)}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := testPlugin(t, tt.policy)
			ni := plugintesting.MakeNodeInfo(loadedNode("n1", tt.annotations))
			got, status := pl.Score(ctx, framework.NewCycleState(), st.MakePod().Name("p").Obj(), ni)
			if !status.IsSuccess() {
				t.Fatal(status)
			}
			if got != tt.want {
				t.Errorf("Score = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestEventsToRegister(t *testing.T) {
	pl := testPlugin(t, filterPolicy)
	events, err := pl.EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeAnnotation}
	if len(events) != 1 || events[0].Event != want || events[0].QueueingHintFn == nil {
		t.Errorf("EventsToRegister = %v, want %v with a hint", events, want)
	}
}

func TestNodeHint(t *testing.T) {
	hot := func(v string) *v1.Node {
		return loadedNode("n1", map[string]string{"cpu_usage_avg_5m": ago(v, time.Minute)})
	}
	tests := []struct {
		name     string
		old, new *v1.Node
		want     framework.QueueingHint
	}{
		{name: "added, not overloaded", new: hot("0.3"), want: framework.Queue},
		{name: "added, overloaded", new: hot("0.9"), want: framework.QueueSkip},
		{name: "load fell below the limit", old: hot("0.9"), new: hot("0.3"), want: framework.Queue},
		{name: "load fell but is still over", old: hot("0.95"), new: hot("0.9"), want: framework.QueueSkip},
		{name: "load changed under the limit", old: hot("0.3"), new: hot("0.4"), want: framework.QueueSkip},
		{name: "load rose over the limit", old: hot("0.3"), new: hot("0.9"), want: framework.QueueSkip},
	}
	pl := testPlugin(t, filterPolicy)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			var oldObj interface{}
			if tt.old != nil {
				oldObj = tt.old
			}
			got, err := pl.isSchedulableAfterNodeChange(logger, st.MakePod().Name("p").Obj(), oldObj, tt.new)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}
