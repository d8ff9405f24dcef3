// Chapter 9's stories (docs/09-default-plugins.md): the default plugins,
// one story each. TaintToleration and NodeAffinity are told as YAML, in
// scenarios/ch9-taint-toleration.yaml and scenarios/ch9-node-affinity.yaml.

package chapters

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/scenario"
)

// chapter9 is chapter 9's stories: one per default plugin, each showing
// where every pod went — the plugin that ruled out each other node, and the
// top scores.
func chapter9() []scenario.Scenario {
	return []scenario.Scenario{
		{Name: "ch9-scheduling-gates", Chapter: 9, Run: runSchedulingGates,
			Description: "SchedulingGates: a gated pod waits without being tried; removing its last gate schedules it"},
		{Name: "ch9-node-ports", Chapter: 9, Run: runNodePorts,
			Description: "NodePorts: two pods cannot share a host port on one node"},
		{Name: "ch9-most-allocated", Chapter: 9, Run: runMostAllocated,
			Description: "NodeResourcesFit with MostAllocated: pods are packed onto the fullest node that fits",
			Config: scenario.ProfilesYAML(`- plugins:
    multiPoint:
      enabled: [{name: PrioritySort}, {name: NodeResourcesFit}, {name: DefaultBinder}]
      disabled: [{name: "*"}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
`)},
		{Name: "ch9-balanced-allocation", Chapter: 9, Run: runBalancedAllocation,
			Description: "NodeResourcesBalancedAllocation: prefer the node whose cpu and memory stay equally used",
			Config: scenario.ProfilesYAML(`- plugins:
    multiPoint:
      enabled: [{name: PrioritySort}, {name: NodeResourcesFit}, {name: NodeResourcesBalancedAllocation},
	{name: DefaultBinder}]
      disabled: [{name: "*"}]
    score:
      disabled: [{name: NodeResourcesFit}]
`)},
		{Name: "ch9-image-locality", Chapter: 9, Run: runImageLocality,
			Description: "ImageLocality: a node that already has the pod's image scores higher"},
		{Name: "ch9-pod-topology-spread", Chapter: 9, Run: runTopologySpread,
			Description: "PodTopologySpread: six pods with maxSkew 1 over three zones land two per zone"},
		{Name: "ch9-inter-pod-affinity", Chapter: 9, Run: runInterPodAffinity,
			Description: "InterPodAffinity: web follows db into its zone; anti-affinity keeps replicas apart"},
	}
}

// zoned is a node of the zone.
func zoned(name, zone string) *builders.NodeWrapper {
	return scenario.MakeNode(name).Label(v1.LabelTopologyZone, zone)
}

func runSchedulingGates(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.MakeNode("node0").Obj()); err != nil {
		return err
	}
	gated := scenario.MakePod("gated").SchedulingGates("example.com/quota").Obj()
	if err := env.CreatePods(ctx, gated, scenario.MakePod("open").Obj()); err != nil {
		return err
	}
	if _, err := env.WaitForPodBound(ctx, "open", scenario.DefaultWait); err != nil {
		return err
	}
	if err := env.ExpectNoNewAttempts(ctx, "gated", 2*time.Second); err != nil {
		return err
	}
	if n := len(env.PodAttempts("gated")); n != 0 {
		return fmt.Errorf("the gated pod was tried %d times", n)
	}
	env.Logf("gated was never tried (no FailedScheduling noise); removing its gate")
	patch := []byte(`{"spec":{"schedulingGates":null}}`)
	if _, err := env.Client.CoreV1().Pods(env.Namespace).Patch(ctx,
		"gated", "application/strategic-merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		return err
	}
	if _, err := env.WaitForPodBound(ctx, "gated", scenario.DefaultWait); err != nil {
		return err
	}
	if _, err := env.WaitForAttempts(ctx, "gated", 1, scenario.DefaultWait); err != nil {
		return err
	}
	env.ShowAttempt("gated")
	return nil
}

func runNodePorts(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.MakeNode("node0").Obj(), scenario.MakeNode("node1").Obj()); err != nil {
		return err
	}
	for _, name := range []string{"proxy-a", "proxy-b"} {
		if err := env.CreatePods(ctx, scenario.MakePod(name).HostPort(v1.ProtocolTCP, "", 8080).Obj()); err != nil {
			return err
		}
		if _, err := env.WaitForPodBound(ctx, name, scenario.DefaultWait); err != nil {
			return err
		}
		env.ShowAttempt(name)
	}
	if err := env.CreatePods(ctx, scenario.MakePod("proxy-c").HostPort(v1.ProtocolTCP, "", 8080).Obj()); err != nil {
		return err
	}
	msg, err := env.WaitForPodUnschedulable(ctx, "proxy-c", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.ShowAttempt("proxy-c")
	want := "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports. " +
		"preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
	if msg != want {
		return fmt.Errorf("message %q, want %q", msg, want)
	}
	return nil
}

func runMostAllocated(ctx context.Context, env *scenario.Env) error {
	err := env.CreateNodes(ctx,
		scenario.MakeNode("small").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "2", v1.ResourceMemory: "4Gi"}).Obj(),
		scenario.MakeNode("big").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "16", v1.ResourceMemory: "64Gi"}).Obj())
	if err != nil {
		return err
	}
	half := map[v1.ResourceName]string{v1.ResourceCPU: "500m", v1.ResourceMemory: "1Gi"}
	return env.PlaceAndCheck(ctx, map[string]string{"job1": "small", "job2": "small"},
		scenario.MakePod("job1").Req(half).Obj(), scenario.MakePod("job2").Req(half).Obj())
}

func runBalancedAllocation(ctx context.Context, env *scenario.Env) error {
	err := env.CreateNodes(ctx,
		scenario.MakeNode("lopsided").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "8", v1.ResourceMemory: "8Gi"}).Obj(),
		scenario.MakeNode("even").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "4", v1.ResourceMemory: "16Gi"}).Obj())
	if err != nil {
		return err
	}
	return env.PlaceAndCheck(ctx, map[string]string{"cache": "even"},
		scenario.MakePod("cache").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "4Gi"}).Obj())
}

func runImageLocality(ctx context.Context, env *scenario.Env) error {
	err := env.CreateNodes(ctx,
		scenario.MakeNode("warm").Images(800*1024*1024, "registry.example/ml/trainer:2.1").Obj(),
		scenario.MakeNode("cold").Obj())
	if err != nil {
		return err
	}
	return env.PlaceAndCheck(ctx, map[string]string{"trainer": "warm"},
		scenario.MakePod("trainer").Image("registry.example/ml/trainer:2.1").Obj())
}

func runTopologySpread(ctx context.Context, env *scenario.Env) error {
	err := env.CreateNodes(ctx, zoned("a", "zone-a").Obj(), zoned("b", "zone-b").Obj(), zoned("c", "zone-c").Obj())
	if err != nil {
		return err
	}
	// Every web pod is spread over zones with maxSkew 1, counting the pods
	// labelled app=web.
	overZones := v1.TopologySpreadConstraint{
		MaxSkew: 1, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	}
	perZone := map[string]int{}
	for i := range 6 {
		name := fmt.Sprintf("web%d", i)
		p := scenario.MakePod(name).Label("app", "web").SpreadConstraint(overZones).Obj()
		if err := env.CreatePods(ctx, p); err != nil {
			return err
		}
		bound, err := env.WaitForPodBound(ctx, name, scenario.DefaultWait)
		if err != nil {
			return err
		}
		perZone[bound.Spec.NodeName]++
	}
	env.Logf("per zone: a=%d b=%d c=%d", perZone["a"], perZone["b"], perZone["c"])
	if perZone["a"] != 2 || perZone["b"] != 2 || perZone["c"] != 2 {
		return fmt.Errorf("want two pods per zone, got %v", perZone)
	}
	// Cordon zone-b and zone-c: the next pods can only go to zone-a. (A
	// nodeSelector would not do: with the default nodeAffinityPolicy Honor,
	// nodes the pod may not use do not count towards the skew at all.) A
	// seventh pod makes 3:2:2, skew 1, allowed; an eighth would make 4:2:2.
	for _, n := range []string{"b", "c"} {
		if err := env.SetUnschedulable(ctx, n, true); err != nil {
			return err
		}
	}
	for _, name := range []string{"web6", "web7"} {
		p := scenario.MakePod(name).Label("app", "web").SpreadConstraint(overZones).Obj()
		if err := env.CreatePods(ctx, p); err != nil {
			return err
		}
		if _, err := env.WaitForAttempts(ctx, name, 1, scenario.DefaultWait); err != nil {
			return err
		}
		env.ShowAttempt(name)
	}
	msg, err := env.WaitForPodUnschedulable(ctx, "web7", scenario.DefaultWait)
	if err != nil {
		return err
	}
	// Preemption cannot uncordon a node ("not helpful"), and no victim on
	// a would lower its skew for a pod of the same priority.
	want := "0/3 nodes are available: 1 node(s) didn't match pod topology spread constraints, " +
		"2 node(s) were unschedulable. preemption: 0/3 nodes are available: " +
		"1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."
	if msg != want {
		return fmt.Errorf("message %q, want %q", msg, want)
	}
	return nil
}

func runInterPodAffinity(ctx context.Context, env *scenario.Env) error {
	err := env.CreateNodes(ctx, zoned("a1", "zone-a").Obj(), zoned("b1", "zone-b").Obj(), zoned("b2", "zone-b").Obj())
	if err != nil {
		return err
	}
	if err := env.CreatePods(ctx,
		scenario.MakePod("db").Label("app", "db").NodeSelector("kubernetes.io/hostname", "b1").Obj()); err != nil {
		return err
	}
	if _, err := env.WaitForPodBound(ctx, "db", scenario.DefaultWait); err != nil {
		return err
	}
	term := func(app, key string) v1.PodAffinityTerm {
		return v1.PodAffinityTerm{TopologyKey: key,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}
	}
	nearDB := &v1.Affinity{
		PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term("db",
			v1.LabelTopologyZone)}},
		PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term("web",
			v1.LabelHostname)}},
	}
	// web1: zone-a has no db; of b1 and b2, b2 has less requested.
	// web2: b2 already runs a web pod, which the anti-affinity forbids.
	return env.PlaceAndCheck(ctx, map[string]string{"web1": "b2", "web2": "b1"},
		scenario.MakePod("web1").Label("app", "web").Affinity(nearDB).Obj(),
		scenario.MakePod("web2").Label("app", "web").Affinity(nearDB.DeepCopy()).Obj())
}
