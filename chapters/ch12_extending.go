// Chapter 12's story (docs/12-extending.md), extending the scheduler from
// outside: an HTTP extender beside the plugins.

package chapters

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/examples/extender/server"
	"github.com/minisched/minisched/scenario"
)

// chapter12 is chapter 12's story.
func chapter12() []scenario.Scenario {
	return []scenario.Scenario{
		{
			Name: "ch12-extender", Chapter: 12,
			Description: "an HTTP extender beside the plugins: it filters nodes in maintenance, scores by a label, " +
				"binds the pods itself, and a pod it turned away is retried on any node change",
			Config: func() (*configv1.KubeSchedulerConfiguration, error) {
				cfg, err := scenario.ProfilesYAML("- schedulerName: default-scheduler\n")()
				if err != nil {
					return nil, err
				}
				cfg.Extenders = []configv1.Extender{{
					URLPrefix: scenario.ExtenderURL, FilterVerb: "filter", PrioritizeVerb: "prioritize", Weight: 1,
					BindVerb: "bind", PreemptVerb: "preempt", NodeCacheCapable: true,
				}}
				return cfg, nil
			},
			Parts: scenario.Parts{scenario.Extender},
			Run:   runExtender,
		},
	}
}

func runExtender(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx,
		scenario.MakeNode("node0").Label("disk", "ssd").Annotation(server.MaintenanceAnnotation, "firmware upgrade").Obj(),
		scenario.MakeNode("node1").Label("disk", "ssd").Annotation(server.RetiredAnnotation, "end of lease").Obj(),
		scenario.MakeNode("node2").Label(server.PreferenceLabel, "10").Obj(),
		scenario.MakeNode("node3").Obj(),
	); err != nil {
		return err
	}
	env.Logf("node0 (ssd) is in maintenance, node1 (ssd) is retired, the extender prefers node2 (preference 10)")

	// 1. Filter, prioritize and bind.
	if err := env.CreatePods(ctx, scenario.MakePod("web").Obj()); err != nil {
		return err
	}
	web, err := env.WaitForPodBound(ctx, "web", scenario.DefaultWait)
	if err != nil {
		return err
	}
	by := web.Annotations[server.BoundByAnnotation]
	env.Logf("web -> %s, bound by %q (the extender's bind verb, not DefaultBinder)", web.Spec.NodeName, by)
	if web.Spec.NodeName != "node2" || by != server.Name {
		return fmt.Errorf("web went to %s bound by %q, want node2 bound by %s", web.Spec.NodeName, by, server.Name)
	}

	// 2. The extender's reasons are counted with the plugins'.
	if err := env.CreatePods(ctx, scenario.MakePod("db").NodeSelector("disk", "ssd").Obj()); err != nil {
		return err
	}
	msg, err := env.WaitForPodUnschedulable(ctx, "db", scenario.DefaultWait)
	if err != nil {
		return err
	}
	env.Logf("db (needs an ssd) is pending: %s", msg)
	const want = "0/4 nodes are available: 1 node(s) in maintenance, 1 node(s) retired, " +
		"2 node(s) didn't match Pod's node affinity/selector."
	if !strings.HasPrefix(msg, want) {
		return fmt.Errorf("db's message is %q, want it to start with %q", msg, want)
	}

	// 3. Extenders register no events: any node change retries the pod.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, server.MaintenanceAnnotation)
	if _, err := env.Client.CoreV1().Nodes().Patch(ctx, "node0", types.MergePatchType, []byte(patch),
		metav1.PatchOptions{}); err != nil {
		return err
	}
	env.Logf("maintenance on node0 is over (annotation removed)")
	return env.ExpectBound(ctx, map[string]string{"db": "node0"}, "db")
}
