package defaultpreemption

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/defaultbinder"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/plugins/prioritysort"
)

// trimmingExtender is a preempting extender that drops the nodes in drop,
// answers with no victims for the nodes in empty, or fails with err.
type trimmingExtender struct {
	ignorable   bool
	interested  bool
	drop, empty map[string]bool
	err         error
	calls       int
	seen        []string // the nodes it was asked about, sorted
}

func (e *trimmingExtender) Name() string              { return "trim" }
func (e *trimmingExtender) IsIgnorable() bool         { return e.ignorable }
func (e *trimmingExtender) IsInterested(*v1.Pod) bool { return e.interested }
func (e *trimmingExtender) IsFilter() bool            { return false }
func (e *trimmingExtender) IsPrioritizer() bool       { return false }
func (e *trimmingExtender) IsBinder() bool            { return false }
func (e *trimmingExtender) SupportsPreemption() bool  { return true }
func (e *trimmingExtender) Bind(*v1.Binding) error    { return errors.New("not a binder") }
func (e *trimmingExtender) Filter(*v1.Pod, []*framework.NodeInfo) ([]*framework.NodeInfo,
	extenderv1.FailedNodesMap, extenderv1.FailedNodesMap, error) {
	return nil, nil, nil, errors.New("not a filter")
}
func (e *trimmingExtender) Prioritize(*v1.Pod, []*framework.NodeInfo) (*extenderv1.HostPriorityList, int64, error) {
	return nil, 0, errors.New("not a prioritizer")
}

func (e *trimmingExtender) ProcessPreemption(_ *v1.Pod, in map[string]*extenderv1.Victims,
	_ framework.NodeInfoLister) (map[string]*extenderv1.Victims, error) {
	e.calls++
	e.seen = nil
	for node := range in {
		e.seen = append(e.seen, node)
	}
	if e.err != nil {
		return nil, e.err
	}
	out := map[string]*extenderv1.Victims{}
	for node, v := range in {
		switch {
		case e.drop[node]:
		case e.empty[node]:
			out[node] = &extenderv1.Victims{}
		default:
			out[node] = v
		}
	}
	return out, nil
}

func TestCallExtenders(t *testing.T) {
	candidates := func() []*candidate {
		return []*candidate{
			{name: "a", victims: []*v1.Pod{st.MakePod().Name("va").Obj()}},
			{name: "b", victims: []*v1.Pod{st.MakePod().Name("vb").Obj()}, numPDBViolations: 1},
			{name: "c", victims: []*v1.Pod{st.MakePod().Name("vc").Obj()}},
		}
	}
	tests := []struct {
		name    string
		exts    []*trimmingExtender
		want    []string // candidate node: victims
		wantErr string
		// wantSeen is how many candidates each extender was asked about
		// (0: not asked).
		wantSeen []int
	}{
		{name: "no extenders: unchanged", want: []string{"a:va", "b:vb", "c:vc"}},
		{
			name: "each extender trims what the previous one kept",
			exts: []*trimmingExtender{
				{interested: true, drop: map[string]bool{"a": true}},
				{interested: true, drop: map[string]bool{"c": true}},
			},
			want:     []string{"b:vb"},
			wantSeen: []int{3, 2},
		},
		{
			name:     "an extender not interested in the pod is not asked",
			exts:     []*trimmingExtender{{interested: false, drop: map[string]bool{"a": true}}},
			want:     []string{"a:va", "b:vb", "c:vc"},
			wantSeen: []int{0},
		},
		{
			name: "a failing ignorable extender is passed over",
			exts: []*trimmingExtender{{interested: true, ignorable: true, err: errors.New("down")}},
			want: []string{"a:va", "b:vb", "c:vc"},
		},
		{
			name:    "a failing required extender is an error",
			exts:    []*trimmingExtender{{interested: true, err: errors.New("down")}},
			wantErr: "down",
		},
		{
			name: "an ignorable extender's node without victims is dropped",
			exts: []*trimmingExtender{{interested: true, ignorable: true, empty: map[string]bool{"b": true}}},
			want: []string{"a:va", "c:vc"},
		},
		{
			name:    "a required extender's node without victims is an error",
			exts:    []*trimmingExtender{{interested: true, empty: map[string]bool{"b": true}}},
			wantErr: `expected at least one victim pod on node "b"`,
		},
		{
			name: "nothing left: the other extenders are not asked",
			exts: []*trimmingExtender{
				{interested: true, drop: map[string]bool{"a": true, "b": true, "c": true}},
				{interested: true},
			},
			want:     []string{},
			wantSeen: []int{3, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exts := make([]framework.Extender, len(tt.exts))
			for i, e := range tt.exts {
				exts[i] = e
			}
			schedFramework, err := plugintesting.NewFramework(context.Background(), framework.Registry{
				prioritysort.Name: prioritysort.New, defaultbinder.Name: defaultbinder.New,
			}, &configv1.Plugins{MultiPoint: plugintesting.Enable(prioritysort.Name, defaultbinder.Name)}, nil,
				framework.WithSnapshotSharedLister(cache.NewSnapshot(nil, nil)), framework.WithExtenders(exts))
			if err != nil {
				t.Fatal(err)
			}
			pl := &DefaultPreemption{fh: schedFramework}
			got, err := pl.callExtenders(klog.Background(), st.MakePod().Name("p").Obj(), candidates())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out := []string{}
			for _, c := range got {
				out = append(out, c.name+":"+strings.Join(names(c.victims), ","))
			}
			if diff := cmp.Diff(tt.want, out); diff != "" {
				t.Errorf("candidates (-want +got):\n%s", diff)
			}
			for i, want := range tt.wantSeen {
				if got := len(tt.exts[i].seen); got != want || (want == 0) != (tt.exts[i].calls == 0) {
					t.Errorf("extender %d was asked %d times about %v, want about %d candidates",
						i, tt.exts[i].calls, tt.exts[i].seen, want)
				}
			}
		})
	}
}
