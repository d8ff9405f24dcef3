// Tests for NodeDeclaredFeatures' PreFilter and Filter, with the pods and
// nodes the tests of this package share.
package nodedeclaredfeatures

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// Feature names as the library spells them. A pod needs
// UserNamespacesHostNetworkSupport when it runs in the host network and in
// its own user namespace (hostUsers: false), and
// RestartAllContainersOnContainerExits when a container has a restart rule
// with the action RestartAllContainers. Neither has a MaxVersion, so both
// still count at v1.37.1.
const (
	featureUserNSHostNetwork = "UserNamespacesHostNetworkSupport"
	featureRestartAll        = "RestartAllContainersOnContainerExits"
)

// plainPod requires no declared feature.
func plainPod() *v1.Pod {
	return st.MakePod().Name("p").Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m"}).Obj()
}

// hostNetworkPod runs in the host network; with hostUsers false it also asks
// for its own user namespace, and so requires featureUserNSHostNetwork.
func hostNetworkPod(hostUsers *bool) *v1.Pod {
	pod := plainPod()
	pod.Spec.HostNetwork = true
	pod.Spec.HostUsers = hostUsers
	return pod
}

// userNSPod requires featureUserNSHostNetwork.
func userNSPod() *v1.Pod {
	no := false
	return hostNetworkPod(&no)
}

// withRestartAll adds to pod's first container a rule that restarts all
// containers on exit, which requires featureRestartAll.
func withRestartAll(pod *v1.Pod) *v1.Pod {
	pod.Spec.Containers[0].RestartPolicyRules = append(pod.Spec.Containers[0].RestartPolicyRules,
		v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestartAllContainers})
	return pod
}

// nodeDeclaring is a node named name declaring features (sorted, as the API
// requires).
func nodeDeclaring(name string, features ...string) *v1.Node {
	node := st.MakeNode().Name(name).Obj()
	node.Status.DeclaredFeatures = features
	return node
}

// newPlugin builds the plugin as the registry would.
func newPlugin(t *testing.T) *NodeDeclaredFeatures {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	pl, err := New(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pl.(*NodeDeclaredFeatures)
}

func TestNewMirrorsSchedulerVersion(t *testing.T) {
	if got, want := newPlugin(t).version.String(), "1.37.1"; got != want {
		t.Errorf("version = %q, want %q", got, want)
	}
}

func TestPreFilter(t *testing.T) {
	yes := true
	tests := []struct {
		name string
		pod  *v1.Pod
		// wantFeatures is nil when PreFilter should Skip.
		wantFeatures []string
	}{
		{name: "no requirements", pod: plainPod()},
		{name: "host network alone requires nothing", pod: hostNetworkPod(nil)},
		{name: "host network with host users requires nothing", pod: hostNetworkPod(&yes)},
		{name: "user namespace in the host network", pod: userNSPod(), wantFeatures: []string{featureUserNSHostNetwork}},
		{name: "restart-all rule", pod: withRestartAll(plainPod()), wantFeatures: []string{featureRestartAll}},
		{
			name:         "both, listed in the library's (sorted) order",
			pod:          withRestartAll(userNSPod()),
			wantFeatures: []string{featureRestartAll, featureUserNSHostNetwork},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := newPlugin(t)
			state := framework.NewCycleState()
			result, status := pl.PreFilter(ctx, state, tt.pod, nil)
			if result != nil {
				t.Errorf("PreFilterResult = %v, want nil", result)
			}
			if tt.wantFeatures == nil {
				if !status.IsSkip() {
					t.Errorf("status = %v, want Skip", status)
				}
				if _, err := state.Read(preFilterStateKey); err == nil {
					t.Error("PreFilter wrote state for a pod it skipped")
				}
				return
			}
			if !status.IsSuccess() {
				t.Fatalf("status = %v, want Success", status)
			}
			s, err := getPreFilterState(state)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pl.features.Unmap(s.reqs)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantFeatures, got); diff != "" {
				t.Errorf("required features (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilter(t *testing.T) {
	unsatisfied := framework.NewStatus(framework.UnschedulableAndUnresolvable,
		"node(s) didn't match Pod's required features")
	tests := []struct {
		name string
		pod  *v1.Pod
		node *v1.Node
		want *framework.Status
	}{
		{
			name: "node declares the required feature",
			pod:  userNSPod(),
			node: nodeDeclaring("n", featureUserNSHostNetwork),
		},
		{
			name: "node declares nothing",
			pod:  userNSPod(),
			node: nodeDeclaring("n"),
			want: unsatisfied,
		},
		{
			name: "node declares only another feature",
			pod:  userNSPod(),
			node: nodeDeclaring("n", featureRestartAll),
			want: unsatisfied,
		},
		{
			name: "node declares more than required",
			pod:  withRestartAll(plainPod()),
			node: nodeDeclaring("n", featureRestartAll, featureUserNSHostNetwork),
		},
		{
			name: "features unknown to the library are ignored",
			pod:  userNSPod(),
			node: nodeDeclaring("n", "AFeatureFromTheFuture", featureUserNSHostNetwork, "ZFeatureFromTheFuture"),
		},
		{
			name: "an unknown feature does not stand in for a required one",
			pod:  userNSPod(),
			node: nodeDeclaring("n", "AFeatureFromTheFuture"),
			want: unsatisfied,
		},
		{
			name: "one of two required features missing",
			pod:  withRestartAll(userNSPod()),
			node: nodeDeclaring("n", featureUserNSHostNetwork),
			want: unsatisfied,
		},
		{
			name: "both required features declared",
			pod:  withRestartAll(userNSPod()),
			node: nodeDeclaring("n", featureRestartAll, featureUserNSHostNetwork),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := newPlugin(t)
			state := framework.NewCycleState()
			if _, s := pl.PreFilter(ctx, state, tt.pod, nil); !s.IsSuccess() {
				t.Fatalf("PreFilter = %v, want Success", s)
			}
			got := pl.Filter(ctx, state, tt.pod, plugintesting.MakeNodeInfo(tt.node))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Filter (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilterErrors(t *testing.T) {
	tests := []struct {
		name     string
		prefill  bool
		nodeInfo *framework.NodeInfo
	}{
		{name: "PreFilter did not run", nodeInfo: plugintesting.MakeNodeInfo(nodeDeclaring("n", featureUserNSHostNetwork))},
		{name: "NodeInfo without a node", prefill: true, nodeInfo: framework.NewNodeInfo()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := newPlugin(t)
			state := framework.NewCycleState()
			if tt.prefill {
				pl.PreFilter(ctx, state, userNSPod(), nil)
			}
			got := pl.Filter(ctx, state, userNSPod(), tt.nodeInfo)
			if got.Code() != framework.Error {
				t.Errorf("Filter = %v, want code Error", got)
			}
		})
	}
}

func TestPreFilterExtensions(t *testing.T) {
	if ext := newPlugin(t).PreFilterExtensions(); ext != nil {
		t.Errorf("PreFilterExtensions = %v, want nil", ext)
	}
}
