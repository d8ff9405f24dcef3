// This file holds chapter 13's StatefulSetOrdinal scenario (custom schedulers
// from practice): a rule teams write when affinity and taints cannot say what
// they need.

package scenario

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minisched/minisched/builders"
)

// ordinalLabel is the node label StatefulSetOrdinal reads in the scenario.
const ordinalLabel = "example.com/ordinal"

func customPluginScenarios() []Scenario {
	return []Scenario{
		{
			Name: "ch13-statefulset-ordinal", Chapter: 13,
			Description: "StatefulSetOrdinal: pod app-N runs only on the node labelled with ordinal N; pods wait for " +
				"their node, come back to it, and a pod nothing owns is never tried",
			Config: fromYAML(`- plugins:
    multiPoint:
      enabled:
      - name: StatefulSetOrdinal
  pluginConfig:
  - name: StatefulSetOrdinal
    args:
      podLabels: [app]
      nodeOrdinalLabel: ` + ordinalLabel + `
`),
			Run: runStatefulSetOrdinal,
		},
	}
}

func runStatefulSetOrdinal(ctx context.Context, env *Env) error {
	if err := env.CreateNodes(ctx, nodes(numbered("node", 0, 4)...)...); err != nil {
		return err
	}
	owner, err := env.createStatefulSet(ctx, "app")
	if err != nil {
		return err
	}
	member := func(name string) *v1.Pod {
		p := MakePod(name).Label("app", "kafka").Obj()
		p.OwnerReferences = []metav1.OwnerReference{*owner}
		return p
	}
	if err := env.CreatePods(ctx, member("app-0"), member("app-1"), member("app-2")); err != nil {
		return err
	}
	for _, name := range []string{"app-0", "app-1", "app-2"} {
		msg, err := env.WaitForPodUnschedulable(ctx, name, DefaultWait)
		if err != nil {
			return err
		}
		env.Logf("%s pending: %s", name, msg)
		if want := "0/5 nodes are available: 5 node(s) had no ordinal label."; !strings.HasPrefix(msg, want) {
			return fmt.Errorf("%s: message %q, want it to start with %q", name, msg, want)
		}
	}
	// Ordinals do not follow node names, so landing right is no accident.
	labels := map[string]string{"node1": "0", "node2": "1", "node3": "2", "node4": "3"}
	env.Logf("labelling node1..node4 with %s 0..3; node0 stays unlabelled", ordinalLabel)
	for _, node := range []string{"node1", "node2", "node3", "node4"} {
		if err := env.labelNode(ctx, node, ordinalLabel, labels[node]); err != nil {
			return err
		}
	}
	want := map[string]string{"app-0": "node1", "app-1": "node2", "app-2": "node3", "app-3": "node4"}
	if err := env.expectBound(ctx, want, "app-0", "app-1", "app-2"); err != nil {
		return err
	}
	env.Logf("deleting app-1 and creating it again, as its StatefulSet would")
	if err := env.DeletePod(ctx, "app-1"); err != nil {
		return err
	}
	if err := env.waitGone(ctx, "app-1"); err != nil {
		return err
	}
	if err := env.CreatePods(ctx, member("app-1"), member("app-3"), member("app-4")); err != nil {
		return err
	}
	if err := env.expectBound(ctx, want, "app-1", "app-3"); err != nil {
		return err
	}
	msg, err := env.WaitForPodUnschedulable(ctx, "app-4", DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("app-4 pending: %s", msg)
	if want := "0/5 nodes are available: 1 node(s) had no ordinal label, 4 node(s) had a different ordinal."; !strings.HasPrefix(msg, want) {
		return fmt.Errorf("app-4: message %q, want it to start with %q", msg, want)
	}
	// A pod no StatefulSet owns is held by PreEnqueue: never tried at all.
	if err := env.CreatePods(ctx, MakePod("stray-0").Label("app", "kafka").Obj()); err != nil {
		return err
	}
	if err := env.ExpectNoNewAttempts(ctx, "stray-0", time.Second); err != nil {
		return err
	}
	env.Logf("stray-0, owned by no StatefulSet, was never tried: PreEnqueue keeps it out of activeQ")
	return nil
}

// createStatefulSet creates a StatefulSet with no replicas (no controller
// runs here; the scenario creates its pods) and returns the controller
// reference its pods carry.
func (e *Env) createStatefulSet(ctx context.Context, name string) (*metav1.OwnerReference, error) {
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas: new(int32),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kafka"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "kafka"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c0", Image: builders.PauseImage}}},
			},
		},
	}
	created, err := e.Client.AppsV1().StatefulSets(e.Namespace).Create(ctx, sts, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating StatefulSet %s: %w", name, err)
	}
	return metav1.NewControllerRef(created, appsv1.SchemeGroupVersion.WithKind("StatefulSet")), nil
}

// labelNode sets one label on a node.
func (e *Env) labelNode(ctx context.Context, node, key, value string) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	_, err := e.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}
