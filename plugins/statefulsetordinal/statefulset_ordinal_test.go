// Tests for StatefulSetOrdinal: args, PreEnqueue, PreFilter with Filter, and
// the node queueing hint.
package statefulsetordinal

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

const (
	brokerLabel = "strimzi.io/kind"
	ordinalKey  = "example.com/ordinal"
)

func newPlugin(t *testing.T) *StatefulSetOrdinal {
	t.Helper()
	raw := &runtime.RawExtension{Raw: []byte(`{"podLabels":["` + brokerLabel + `"],"nodeOrdinalLabel":"` + ordinalKey + `"}`)}
	pl, err := New(context.Background(), raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pl.(*StatefulSetOrdinal)
}

func broker(name string) *st.PodWrapper {
	return st.MakePod().Name(name).Label(brokerLabel, "Kafka").OwnerReference("StatefulSet", "kafka", "uid-1")
}

func ordinalNode(name, ordinal string) *v1.Node {
	n := st.MakeNode().Name(name)
	if ordinal != "" {
		n = n.Label(ordinalKey, ordinal)
	}
	return n.Obj()
}

func TestArgs(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		wantErr string
	}{
		{name: "valid", raw: `{"podLabels":["a"],"nodeOrdinalLabel":"b"}`},
		{name: "no args", raw: ``, wantErr: "podLabels: Required value"},
		{name: "no node label", raw: `{"podLabels":["a"]}`, wantErr: "nodeOrdinalLabel: Required value"},
		{name: "bad pod label", raw: `{"podLabels":["a b"],"nodeOrdinalLabel":"b"}`, wantErr: "podLabels[0]: Invalid value"},
		{name: "unknown field", raw: `{"podLabels":["a"],"nodeOrdinalLabel":"b","nodeLabel":"c"}`,
			wantErr: `unknown field "nodeLabel"`},
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

func TestPreEnqueue(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want *framework.Status
	}{
		{name: "StatefulSet pod", pod: broker("kafka-0").Obj()},
		{name: "no owner", pod: st.MakePod().Name("kafka-0").Obj(),
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable, "pod is not owned by a StatefulSet")},
		{name: "ReplicaSet pod", pod: st.MakePod().Name("web-0").OwnerReference("ReplicaSet", "web", "u").Obj(),
			want: framework.NewStatus(framework.UnschedulableAndUnresolvable, "pod is not owned by a StatefulSet")},
	}
	pl := newPlugin(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			if got := pl.PreEnqueue(ctx, tt.pod); !got.Equal(tt.want) {
				t.Errorf("PreEnqueue = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPreFilterAndFilter(t *testing.T) {
	nodes := []*v1.Node{ordinalNode("n0", "0"), ordinalNode("n1", "1"), ordinalNode("n2", "2"), ordinalNode("bare", "")}
	tests := []struct {
		name          string
		pod           *v1.Pod
		nodes         []*v1.Node
		wantPreFilter *framework.Status
		// wantFilter maps node names to Filter's verdict (nil: fits).
		wantFilter map[string]*framework.Status
	}{
		{
			name:  "ordinal from the name",
			pod:   broker("kafka-1").Obj(),
			nodes: nodes,
			wantFilter: map[string]*framework.Status{
				"n0":   framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonDifferentOrdinal),
				"n1":   nil,
				"n2":   framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonDifferentOrdinal),
				"bare": framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNoOrdinalLabel),
			},
		},
		{
			name:  "the pod-index label wins over the name",
			pod:   broker("kafka-1").Label("apps.kubernetes.io/pod-index", "2").Obj(),
			nodes: nodes,
			wantFilter: map[string]*framework.Status{
				"n1": framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonDifferentOrdinal),
				"n2": nil,
			},
		},
		{
			name:          "none of podLabels",
			pod:           st.MakePod().Name("kafka-0").OwnerReference("StatefulSet", "kafka", "u").Obj(),
			nodes:         nodes,
			wantPreFilter: framework.NewStatus(framework.Unschedulable, "pod has none of the labels [strimzi.io/kind]"),
		},
		{
			name:  "no ordinal",
			pod:   broker("kafka").Obj(),
			nodes: nodes,
			wantPreFilter: framework.NewStatus(framework.UnschedulableAndUnresolvable,
				"pod has no ordinal: no apps.kubernetes.io/pod-index label and no -N name suffix"),
		},
		{
			name:  "two nodes with the ordinal",
			pod:   broker("kafka-0").Obj(),
			nodes: append(nodes, ordinalNode("n0-again", "0")),
			wantPreFilter: framework.NewStatus(framework.UnschedulableAndUnresolvable,
				"nodes [n0 n0-again] all have example.com/ordinal=0"),
		},
	}
	pl := newPlugin(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			infos := map[string]*framework.NodeInfo{}
			var list []*framework.NodeInfo
			for _, n := range tt.nodes {
				infos[n.Name] = plugintesting.MakeNodeInfo(n)
				list = append(list, infos[n.Name])
			}
			state := framework.NewCycleState()
			if _, got := pl.PreFilter(ctx, state, tt.pod, list); !got.Equal(tt.wantPreFilter) {
				t.Fatalf("PreFilter = %v, want %v", got, tt.wantPreFilter)
			}
			for node, want := range tt.wantFilter {
				if got := pl.Filter(ctx, state, tt.pod, infos[node]); !got.Equal(want) {
					t.Errorf("Filter on %s = %v, want %v", node, got, want)
				}
			}
		})
	}
}

func TestNodeHint(t *testing.T) {
	pod := broker("kafka-1").Obj()
	tests := []struct {
		name     string
		old, new *v1.Node
		want     framework.QueueingHint
	}{
		{name: "added with the pod's ordinal", new: ordinalNode("n", "1"), want: framework.Queue},
		{name: "added with another ordinal", new: ordinalNode("n", "2"), want: framework.QueueSkip},
		{name: "labelled with the pod's ordinal", old: ordinalNode("n", ""), new: ordinalNode("n", "1"),
			want: framework.Queue},
		{name: "relabelled from one other ordinal to another", old: ordinalNode("n", "0"), new: ordinalNode("n", "2"),
			want: framework.QueueSkip},
		{name: "a duplicate loses the ordinal", old: ordinalNode("n", "1"), new: ordinalNode("n", ""),
			want: framework.Queue},
		{name: "a duplicate is deleted", old: ordinalNode("n", "1"), want: framework.Queue},
	}
	pl := newPlugin(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			var oldObj, newObj interface{}
			if tt.old != nil {
				oldObj = tt.old
			}
			if tt.new != nil {
				newObj = tt.new
			}
			got, err := pl.isSchedulableAfterNodeChange(logger, pod, oldObj, newObj)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}
