// Chapter 6's story (docs/06-cache.md): the cache assumes a pod on its node
// the moment it is chosen, before the apiserver confirms the binding.

package chapters

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/minisched/minisched/scenario"
)

// chapter6 is chapter 6's story, run with the scheduler as it stands at
// its chapter (ChapterConfig).
func chapter6() []scenario.Scenario {
	return []scenario.Scenario{
		{
			Name: "ch6-assume", Chapter: 6,
			Description: "the cache assumes pods: a node with room for one pod, two pods at once, exactly one bound",
			Config:      chapterConfig(6),
			Run:         runAssume,
		},
	}
}

func runAssume(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx,
		scenario.MakeNode("node0").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()); err != nil {
		return err
	}
	cpu := map[v1.ResourceName]string{v1.ResourceCPU: "1"}
	if err := env.CreatePods(ctx, scenario.MakePod("pod-a").Req(cpu).Obj(), scenario.MakePod("pod-b").Req(cpu).Obj()); err != nil {
		return err
	}
	// Whichever was tried first is bound; the other must not be, even though
	// the apiserver may not have confirmed the first bind when it was tried.
	first, second, err := firstBound(ctx, env, "pod-a", "pod-b")
	if err != nil {
		return err
	}
	msg, err := env.WaitForPodUnschedulable(ctx, second, scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("%s is bound; %s is pending: %s", first, second, msg)
	// Chapter 6 has no PostFilter plugin: with DefaultPreemption (chapter
	// 10) a second sentence would say that evicting the bound pod, of the
	// same priority, would not help.
	want := "0/1 nodes are available: 1 Insufficient cpu."
	if msg != want {
		return fmt.Errorf("pending message %q, want %q", msg, want)
	}
	return nil
}

// firstBound waits until one of the two pods is bound, and returns it first.
func firstBound(ctx context.Context, env *scenario.Env, a, b string) (first, second string, err error) {
	err = wait.PollUntilContextTimeout(ctx, scenario.PollInterval, env.WaitLimit(scenario.DefaultWait), true,
		func(ctx context.Context) (bool, error) {
			for _, p := range [][2]string{{a, b}, {b, a}} {
				pod, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, p[0], metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				if pod.Spec.NodeName != "" {
					first, second = p[0], p[1]
					return true, nil
				}
			}
			return false, nil
		})
	if err != nil {
		return "", "", fmt.Errorf("neither %s nor %s was bound: %w", a, b, err)
	}
	return first, second, nil
}
