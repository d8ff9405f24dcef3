// This file holds chapter 12's scenario, extending the scheduler from
// outside: an HTTP extender beside the plugins.

package scenario

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/examples/extender/server"
)

// ExtenderURL stands, in a scenario's configuration, for the URL of the
// example extender the runner starts for a scenario with Extender set.
const ExtenderURL = "http://example-extender.invalid"

func extenderScenarios() []Scenario {
	return []Scenario{
		{
			Name: "ch12-extender", Chapter: 12,
			Description: "an HTTP extender beside the plugins: it filters nodes in maintenance, scores by a label, " +
				"binds the pods itself, and a pod it turned away is retried on any node change",
			Config: func() (*configv1.KubeSchedulerConfiguration, error) {
				cfg, err := fromYAML("- schedulerName: default-scheduler\n")()
				if err != nil {
					return nil, err
				}
				cfg.Extenders = []configv1.Extender{{
					URLPrefix: ExtenderURL, FilterVerb: "filter", PrioritizeVerb: "prioritize", Weight: 1,
					BindVerb: "bind", PreemptVerb: "preempt", NodeCacheCapable: true,
				}}
				return cfg, nil
			},
			Extender: true,
			Run:      runExtender,
		},
	}
}

// startExtender serves the example extender for a scenario and points the
// configuration's ExtenderURL entries at it; stop shuts it down.
func startExtender(client kubernetes.Interface, cfg *configv1.KubeSchedulerConfiguration) (
	*configv1.KubeSchedulerConfiguration, func()) {
	srv := httptest.NewServer(server.New(client, server.ClientNodes{Client: client}))
	cfg = cfg.DeepCopy()
	for i := range cfg.Extenders {
		if cfg.Extenders[i].URLPrefix == ExtenderURL {
			cfg.Extenders[i].URLPrefix = srv.URL
		}
	}
	return cfg, srv.Close
}

func runExtender(ctx context.Context, env *Env) error {
	if err := env.CreateNodes(ctx,
		MakeNode("node0").Label("disk", "ssd").Annotation(server.MaintenanceAnnotation, "firmware upgrade").Obj(),
		MakeNode("node1").Label("disk", "ssd").Annotation(server.RetiredAnnotation, "end of lease").Obj(),
		MakeNode("node2").Label(server.PreferenceLabel, "10").Obj(),
		MakeNode("node3").Obj(),
	); err != nil {
		return err
	}
	env.Logf("node0 (ssd) is in maintenance, node1 (ssd) is retired, the extender prefers node2 (preference 10)")

	// 1. Filter, prioritize and bind.
	if err := env.CreatePods(ctx, MakePod("web").Obj()); err != nil {
		return err
	}
	web, err := env.WaitForPodBound(ctx, "web", DefaultWait)
	if err != nil {
		return err
	}
	by := web.Annotations[server.BoundByAnnotation]
	env.Logf("web -> %s, bound by %q (the extender's bind verb, not DefaultBinder)", web.Spec.NodeName, by)
	if web.Spec.NodeName != "node2" || by != server.Name {
		return fmt.Errorf("web went to %s bound by %q, want node2 bound by %s", web.Spec.NodeName, by, server.Name)
	}

	// 2. The extender's reasons are counted with the plugins'.
	if err := env.CreatePods(ctx, MakePod("db").NodeSelector("disk", "ssd").Obj()); err != nil {
		return err
	}
	msg, err := env.WaitForPodUnschedulable(ctx, "db", DefaultWait)
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
	return env.expectBound(ctx, map[string]string{"db": "node0"}, "db")
}
