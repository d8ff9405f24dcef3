// Tests for NodeResourcesFit's args, PreFilter and Filter.
package noderesources

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

const gpu v1.ResourceName = "example.com/gpu"

// res is shorthand for a resource map in test tables.
type res = map[v1.ResourceName]string

func newFit(t *testing.T, args *runtime.RawExtension) *Fit {
	t.Helper()
	pl, err := New(context.Background(), args, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return pl.(*Fit)
}

func rawArgs(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

func TestFilter(t *testing.T) {
	// node has 4 cpu, 8Gi memory, 10Gi ephemeral storage, 2 GPUs and 110 pod slots.
	node := st.MakeNode().Name("n").Capacity(res{
		v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", v1.ResourceEphemeralStorage: "10Gi", gpu: "2",
		"hugepages-2Mi": "4Mi",
	}).Obj()
	// busy takes 2 cpu, 6Gi memory, 8Gi storage and 1 GPU, leaving 2 cpu,
	// 2Gi memory, 2Gi storage and 1 GPU.
	busy := st.MakePod().Name("busy").UID("busy").NodeName("n").Req(res{
		v1.ResourceCPU: "2", v1.ResourceMemory: "6Gi", v1.ResourceEphemeralStorage: "8Gi", gpu: "1",
	}).Obj()
	onePodNode := st.MakeNode().Name("small").Capacity(res{v1.ResourceCPU: "4", v1.ResourcePods: "1"}).Obj()

	unschedulable := func(reasons ...string) *framework.Status {
		return framework.NewStatus(framework.Unschedulable, reasons...)
	}
	unresolvable := func(reasons ...string) *framework.Status {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, reasons...)
	}

	tests := []struct {
		name     string
		args     *runtime.RawExtension
		pod      *v1.Pod
		nodeInfo *framework.NodeInfo
		want     *framework.Status
	}{
		{
			name: "fits in what is left",
			pod: st.MakePod().Name("p").Req(res{v1.ResourceCPU: "2", v1.ResourceMemory: "2Gi",
				v1.ResourceEphemeralStorage: "2Gi", gpu: "1"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy),
		},
		{
			name: "zero-request pod fits a full node",
			pod:  st.MakePod().Name("p").Req(nil).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy,
				st.MakePod().Name("hog").UID("hog").Req(res{v1.ResourceCPU: "2", v1.ResourceMemory: "2Gi"}).Obj()),
		},
		{
			name:     "zero-request pod still needs a pod slot",
			pod:      st.MakePod().Name("p").Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(onePodNode, st.MakePod().Name("other").UID("other").Obj()),
			want:     unschedulable("Too many pods"),
		},
		{
			name:     "insufficient cpu",
			pod:      st.MakePod().Name("p").Req(res{v1.ResourceCPU: "2500m"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy),
			want:     unschedulable("Insufficient cpu"),
		},
		{
			name:     "cpu beyond the node's allocatable is unresolvable",
			pod:      st.MakePod().Name("p").Req(res{v1.ResourceCPU: "5"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node),
			want:     unresolvable("Insufficient cpu"),
		},
		{
			name:     "insufficient memory",
			pod:      st.MakePod().Name("p").Req(res{v1.ResourceMemory: "3Gi"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy),
			want:     unschedulable("Insufficient memory"),
		},
		{
			name:     "insufficient ephemeral-storage",
			pod:      st.MakePod().Name("p").Req(res{v1.ResourceEphemeralStorage: "3Gi"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy),
			want:     unschedulable("Insufficient ephemeral-storage"),
		},
		{
			name:     "insufficient extended resource",
			pod:      st.MakePod().Name("p").Req(res{gpu: "2"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy),
			want:     unschedulable("Insufficient example.com/gpu"),
		},
		{
			name:     "extended resource the node does not have",
			pod:      st.MakePod().Name("p").Req(res{"example.com/fpga": "1"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node),
			want:     unresolvable("Insufficient example.com/fpga"),
		},
		{
			name:     "insufficient hugepages",
			pod:      st.MakePod().Name("p").Req(res{"hugepages-2Mi": "6Mi"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node),
			want:     unresolvable("Insufficient hugepages-2Mi"),
		},
		{
			name: "init container larger than the containers' sum",
			pod: st.MakePod().Name("p").InitReq(res{v1.ResourceCPU: "3"}).
				Req(res{v1.ResourceCPU: "500m"}).Req(res{v1.ResourceCPU: "500m"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy),
			want:     unschedulable("Insufficient cpu"),
		},
		{
			name: "init containers run one at a time: max of init vs sum",
			pod: st.MakePod().Name("p").InitReq(res{v1.ResourceCPU: "2"}).InitReq(res{v1.ResourceCPU: "2"}).
				Req(res{v1.ResourceCPU: "1"}).Req(res{v1.ResourceCPU: "1"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy),
		},
		{
			name:     "regular init container does not add to the containers",
			pod:      st.MakePod().Name("p").InitReq(res{v1.ResourceCPU: "1"}).Req(res{v1.ResourceCPU: "1500m"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy),
		},
		{
			name:     "sidecar init container adds to the containers",
			pod:      st.MakePod().Name("p").SidecarReq(res{v1.ResourceCPU: "1"}).Req(res{v1.ResourceCPU: "1500m"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy),
			want:     unschedulable("Insufficient cpu"),
		},
		{
			name: "init container after a sidecar runs beside it",
			pod: st.MakePod().Name("p").SidecarReq(res{v1.ResourceCPU: "1"}).InitReq(res{v1.ResourceCPU: "1500m"}).
				Req(res{v1.ResourceCPU: "500m"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy),
			want:     unschedulable("Insufficient cpu"),
		},
		{
			name:     "pod overhead counts",
			pod:      st.MakePod().Name("p").Req(res{v1.ResourceCPU: "1500m"}).Overhead(res{v1.ResourceCPU: "1"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy),
			want:     unschedulable("Insufficient cpu"),
		},
		{
			name: "every reason at once, in order",
			pod: st.MakePod().Name("p").Req(res{
				v1.ResourceCPU: "3", v1.ResourceMemory: "1Gi", v1.ResourceEphemeralStorage: "1Gi",
				"example.com/b": "1", "example.com/a": "1",
			}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(onePodNode,
				st.MakePod().Name("other").UID("other").Req(res{v1.ResourceCPU: "2"}).Obj()),
			want: unresolvable("Too many pods", "Insufficient cpu", "Insufficient memory", "Insufficient ephemeral-storage",
				"Insufficient example.com/a", "Insufficient example.com/b"),
		},
		{
			name:     "several resolvable reasons",
			pod:      st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3", v1.ResourceMemory: "3Gi"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy),
			want:     unschedulable("Insufficient cpu", "Insufficient memory"),
		},
		{
			name:     "one unresolvable reason makes the status unresolvable",
			pod:      st.MakePod().Name("p").Req(res{v1.ResourceCPU: "3", v1.ResourceMemory: "9Gi"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy),
			want:     unresolvable("Insufficient cpu", "Insufficient memory"),
		},
		{
			name:     "ignored resource is not checked",
			args:     rawArgs(`{"ignoredResources": ["example.com/gpu"]}`),
			pod:      st.MakePod().Name("p").Req(res{gpu: "5"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy),
		},
		{
			name:     "ignored resource group is not checked",
			args:     rawArgs(`{"ignoredResourceGroups": ["example.com"]}`),
			pod:      st.MakePod().Name("p").Req(res{gpu: "5", "example.com/fpga": "1"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy),
		},
		{
			name:     "other resources are checked despite ignored ones",
			args:     rawArgs(`{"ignoredResources": ["example.com/gpu"]}`),
			pod:      st.MakePod().Name("p").Req(res{gpu: "5", "example.com/fpga": "1", v1.ResourceCPU: "3"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy),
			want:     unresolvable("Insufficient cpu", "Insufficient example.com/fpga"),
		},
		{
			name:     "only extended resources can be ignored",
			args:     rawArgs(`{"ignoredResources": ["hugepages-2Mi", "cpu"], "ignoredResourceGroups": ["hugepages-2Mi"]}`),
			pod:      st.MakePod().Name("p").Req(res{"hugepages-2Mi": "6Mi", v1.ResourceCPU: "3"}).Obj(),
			nodeInfo: plugintesting.MakeNodeInfo(node, busy),
			want:     unresolvable("Insufficient cpu", "Insufficient hugepages-2Mi"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			pl := newFit(t, tt.args)
			state := framework.NewCycleState()
			if _, s := pl.PreFilter(ctx, state, tt.pod, nil); !s.IsSuccess() {
				t.Fatalf("PreFilter: %v", s)
			}
			got := pl.Filter(ctx, state, tt.pod, tt.nodeInfo)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Filter (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilterWithoutPreFilter(t *testing.T) {
	pl := newFit(t, nil)
	got := pl.Filter(context.Background(), framework.NewCycleState(), st.MakePod().Obj(),
		plugintesting.MakeNodeInfo(st.MakeNode().Name("n").Obj()))
	if got.Code() != framework.Error {
		t.Fatalf("want Error, got %v", got)
	}
	if want := `error reading "PreFilterNodeResourcesFit" from cycleState: not found`; got.Message() != want {
		t.Errorf("message = %q, want %q", got.Message(), want)
	}
}

func TestPreFilterState(t *testing.T) {
	pl := newFit(t, nil)
	state := framework.NewCycleState()
	pod := st.MakePod().Name("p").
		InitReq(res{v1.ResourceCPU: "3"}).
		Req(res{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi", gpu: "1"}).
		Overhead(res{v1.ResourceCPU: "100m"}).Obj()
	result, s := pl.PreFilter(context.Background(), state, pod, nil)
	if !s.IsSuccess() || result != nil {
		t.Fatalf("PreFilter = %v, %v; want nil, nil", result, s)
	}
	if pl.PreFilterExtensions() != nil {
		t.Error("PreFilterExtensions should be nil")
	}
	data, err := state.Read("PreFilterNodeResourcesFit")
	if err != nil {
		t.Fatal(err)
	}
	got := data.(*preFilterState)
	want := &preFilterState{Resource: framework.Resource{
		MilliCPU: 3100, Memory: 1 << 30, ScalarResources: map[v1.ResourceName]int64{gpu: 1},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}

	clone := got.Clone().(*preFilterState)
	clone.MilliCPU = 1
	clone.ScalarResources[gpu] = 7
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changing the clone changed the state (-want +got):\n%s", diff)
	}
}

func TestNewArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    *runtime.RawExtension
		wantErr string
		want    *Fit
	}{
		{
			name: "no args",
			want: &Fit{scoringStrategy: &configv1.ScoringStrategy{Type: configv1.LeastAllocated, Resources: defaultResources()}},
		},
		{
			name: "empty args",
			args: rawArgs(`{}`),
			want: &Fit{scoringStrategy: &configv1.ScoringStrategy{Type: configv1.LeastAllocated, Resources: defaultResources()}},
		},
		{
			name: "full args with apiVersion and kind",
			args: rawArgs(`{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeResourcesFitArgs",
				"ignoredResources": ["example.com/gpu"], "ignoredResourceGroups": ["example.org"],
				"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 3},
					{"name": "example.com/gpu"}]}}`),
			want: &Fit{
				ignoredResources:      sets.New("example.com/gpu"),
				ignoredResourceGroups: sets.New("example.org"),
				scoringStrategy: &configv1.ScoringStrategy{Type: configv1.LeastAllocated, Resources: []configv1.ResourceSpec{
					{Name: "cpu", Weight: 3}, {Name: "example.com/gpu", Weight: 1},
				}},
			},
		},
		{
			name: "typed args",
			args: &runtime.RawExtension{Object: &configv1.NodeResourcesFitArgs{IgnoredResources: []string{"example.com/gpu"}}},
			want: &Fit{
				ignoredResources: sets.New("example.com/gpu"),
				scoringStrategy:  &configv1.ScoringStrategy{Type: configv1.LeastAllocated, Resources: defaultResources()},
			},
		},
		{
			name:    "unknown field",
			args:    rawArgs(`{"ignoredResource": ["example.com/gpu"]}`),
			wantErr: `decoding NodeResourcesFitArgs: unknown field "ignoredResource"`,
		},
		{
			name:    "invalid ignored resource",
			args:    rawArgs(`{"ignoredResources": ["example.com/gpu/x"]}`),
			wantErr: `ignoredResources[0]: Invalid value: "example.com/gpu/x"`,
		},
		{
			name:    "resource group with a slash",
			args:    rawArgs(`{"ignoredResourceGroups": ["example.com/gpu"]}`),
			wantErr: `ignoredResourceGroups[0]: Invalid value: "example.com/gpu": resource group name can't contain '/'`,
		},
		{
			name: "MostAllocated with defaulted resources",
			args: rawArgs(`{"scoringStrategy": {"type": "MostAllocated"}}`),
			want: &Fit{scoringStrategy: &configv1.ScoringStrategy{Type: configv1.MostAllocated, Resources: defaultResources()}},
		},
		{
			name: "RequestedToCapacityRatio",
			args: rawArgs(`{"scoringStrategy": {"type": "RequestedToCapacityRatio", "resources": [{"name": "cpu"}],
				"requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}}`),
			want: &Fit{scoringStrategy: &configv1.ScoringStrategy{
				Type: configv1.RequestedToCapacityRatio, Resources: []configv1.ResourceSpec{{Name: "cpu", Weight: 1}},
				RequestedToCapacityRatio: &configv1.RequestedToCapacityRatioParam{Shape: []configv1.UtilizationShapePoint{
					{Utilization: 0, Score: 0}, {Utilization: 100, Score: 10},
				}},
			}},
		},
		{
			name: "unsupported scoring strategy",
			args: rawArgs(`{"scoringStrategy": {"type": "Random"}}`),
			wantErr: `scoringStrategy.type: Unsupported value: "Random": supported values: "LeastAllocated", "MostAllocated", ` +
				`"RequestedToCapacityRatio"`,
		},
		{
			name: "scoring strategy without a type",
			args: rawArgs(`{"scoringStrategy": {"resources": [{"name": "cpu", "weight": 1}]}}`),
			wantErr: `scoringStrategy.type: Unsupported value: "": supported values: "LeastAllocated", "MostAllocated", ` +
				`"RequestedToCapacityRatio"`,
		},
		{
			name: "negative weight",
			args: rawArgs(`{"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "memory", "weight": -1}]}}`),
			wantErr: `scoringStrategy.resources[0].weight: Invalid value: -1: resource weight of memory not in valid range (0,` +
				` 100]`,
		},
		{
			name: "RequestedToCapacityRatio without its parameters",
			args: rawArgs(`{"scoringStrategy": {"type": "RequestedToCapacityRatio"}}`),
			wantErr: `scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type is ` +
				`RequestedToCapacityRatio`,
		},
		{
			name:    "RequestedToCapacityRatio without shape points",
			args:    rawArgs(`{"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {}}}`),
			wantErr: `scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified`,
		},
		{
			name: "shape points out of order",
			args: rawArgs(`{"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
				{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}, {"utilization": 10, "score": 3}]}}}`),
			// Only the first offence is reported.
			wantErr: `scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 50: values must be sorted ` +
				`in increasing order`,
		},
		{
			name: "shape utilization out of range",
			args: rawArgs(`{"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
				{"utilization": -10, "score": 1}, {"utilization": 101, "score": 2}]}}}`),
			wantErr: `[scoringStrategy.requestedToCapacityRatio.shape[0].utilization: Invalid value: -10: not in valid range ` +
				`[0, 100], ` +
				`scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 101: not in valid range [0, 100]]`,
		},
		{
			name: "shape score out of range",
			args: rawArgs(`{"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
				{"utilization": 10, "score": -1}, {"utilization": 20, "score": 11}]}}}`),
			wantErr: `[scoringStrategy.requestedToCapacityRatio.shape[0].score: ` +
				`Invalid value: -1: not in valid range [0, 10], ` +
				`scoringStrategy.requestedToCapacityRatio.shape[1].score: Invalid value: 11: not in valid range [0, 10]]`,
		},
		{
			name: "weight out of range",
			args: rawArgs(`{"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 101}]}}`),
			wantErr: `scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, ` +
				`100]`,
		},
		{
			name: "shape without RequestedToCapacityRatio",
			args: rawArgs(`{"scoringStrategy": {"type": "LeastAllocated", "requestedToCapacityRatio": {"shape": ` +
				`[{"utilization": 0, "score": 10}]}}}`),
			wantErr: `scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not ` +
				`RequestedToCapacityRatio`,
		},
		{
			name:    "wrong typed args",
			args:    &runtime.RawExtension{Object: &configv1.NodeAffinityArgs{}},
			wantErr: "want args of type *v1.NodeResourcesFitArgs, got *v1.NodeAffinityArgs",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := New(context.Background(), tt.args, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, pl, cmp.AllowUnexported(Fit{}), cmpopts.IgnoreFields(Fit{}, "scorer", "placementScorer"),
				cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plugin (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewDoesNotChangeTypedArgs(t *testing.T) {
	args := &configv1.NodeResourcesFitArgs{ScoringStrategy: &configv1.ScoringStrategy{
		Type: configv1.LeastAllocated, Resources: []configv1.ResourceSpec{{Name: "cpu"}},
	}}
	want := args.DeepCopy()
	newFit(t, &runtime.RawExtension{Object: args})
	if diff := cmp.Diff(want, args); diff != "" {
		t.Errorf("New changed the configuration's args (-want +got):\n%s", diff)
	}
}
