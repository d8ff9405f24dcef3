// Tests for PrioritySort's ordering.
package prioritysort

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
)

func TestLess(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Second)
	queued := func(pod *v1.Pod, ts time.Time) *framework.QueuedPodInfo {
		return framework.NewQueuedPodInfo(pod, ts)
	}
	tests := []struct {
		name string
		a, b *framework.QueuedPodInfo
		want bool
	}{
		{
			name: "higher priority first",
			a:    queued(st.MakePod().Name("a").Priority(100).Obj(), t1),
			b:    queued(st.MakePod().Name("b").Priority(10).Obj(), t0),
			want: true,
		},
		{
			name: "lower priority after, even if older",
			a:    queued(st.MakePod().Name("a").Priority(10).Obj(), t0),
			b:    queued(st.MakePod().Name("b").Priority(100).Obj(), t1),
			want: false,
		},
		{
			name: "equal priority: earlier timestamp first",
			a:    queued(st.MakePod().Name("a").Priority(10).Obj(), t0),
			b:    queued(st.MakePod().Name("b").Priority(10).Obj(), t1),
			want: true,
		},
		{
			name: "equal priority: later timestamp after",
			a:    queued(st.MakePod().Name("a").Priority(10).Obj(), t1),
			b:    queued(st.MakePod().Name("b").Priority(10).Obj(), t0),
			want: false,
		},
		{
			name: "equal priority and timestamp: not less",
			a:    queued(st.MakePod().Name("a").Priority(10).Obj(), t0),
			b:    queued(st.MakePod().Name("b").Priority(10).Obj(), t0),
			want: false,
		},
		{
			name: "no priority counts as 0",
			a:    queued(st.MakePod().Name("a").Obj(), t1),
			b:    queued(st.MakePod().Name("b").Priority(-1).Obj(), t0),
			want: true,
		},
	}
	pl, err := New(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	qs := pl.(framework.QueueSortPlugin)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := qs.Less(tt.a, tt.b); got != tt.want {
				t.Errorf("Less(%s, %s) = %v, want %v", tt.a.Pod.Name, tt.b.Pod.Name, got, tt.want)
			}
		})
	}
}

func TestOrdering(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pods := []*framework.QueuedPodInfo{
		framework.NewQueuedPodInfo(st.MakePod().Name("low-old").Priority(1).Obj(), t0),
		framework.NewQueuedPodInfo(st.MakePod().Name("high-new").Priority(1000).Obj(), t0.Add(3*time.Second)),
		framework.NewQueuedPodInfo(st.MakePod().Name("mid-new").Priority(50).Obj(), t0.Add(2*time.Second)),
		framework.NewQueuedPodInfo(st.MakePod().Name("mid-old").Priority(50).Obj(), t0.Add(time.Second)),
		framework.NewQueuedPodInfo(st.MakePod().Name("none").Obj(), t0),
	}
	pl := &PrioritySort{}
	sort.SliceStable(pods, func(i, j int) bool { return pl.Less(pods[i], pods[j]) })
	var got []string
	for _, p := range pods {
		got = append(got, p.Pod.Name)
	}
	want := []string{"high-new", "mid-old", "mid-new", "low-old", "none"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}
