// This file is the `annotate` subcommand: the annotator that feeds the
// Dynamic plugin, minisched's counterpart of crane-scheduler-controller.

package app

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/annotator"
	"github.com/minisched/minisched/plugins/dynamic"
)

// annotateHelp is `annotate -h`'s text.
var annotateHelp = help{
	usage: "%[1]s annotate --policy FILE --prometheus URL [--kubeconfig FILE]",
	about: `
Plays crane-scheduler-controller for the Dynamic plugin, until SIGINT or
SIGTERM: for every node, it queries Prometheus for each metric of the
policy's syncPolicy, every period, and writes the result, with a timestamp,
to the node's annotations; it also counts recent bindings (Scheduled events)
into the annotation node_hot_value. Dynamic reads those annotations to
filter overloaded nodes and score the others. The Prometheus server must
have node_exporter's metrics (crane's recording rules name them).`,
	examples: []string{
		"%[1]s annotate --kubeconfig /tmp/minisched.kubeconfig --policy plugins/dynamic/testdata/crane-policy.yaml " +
			"--prometheus http://127.0.0.1:9090",
		"%[1]s annotate --policy /etc/kubernetes/policy.yaml --prometheus http://prometheus:9090   # in a pod",
	},
}

// annotate copies node load from Prometheus onto node annotations, and
// recent bindings into node_hot_value, until ctx ends.
func (c *Command) annotate(ctx context.Context, args []string) error {
	fs := c.flagSet("annotate", annotateHelp)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig `FILE` of the cluster (default: in-cluster)")
	policyPath := fs.String("policy", "",
		"DynamicSchedulerPolicy `FILE`, the one Dynamic's policyConfigPath names (required)")
	prometheus := fs.String("prometheus", "",
		"`URL` of the Prometheus server, e.g. http://prometheus:9090 (required)")
	heapSize := fs.Int("binding-heap-size", annotator.DefaultBindingHeapSize,
		"how many recent bindings to remember for hot values")
	workers := fs.Int("workers", annotator.DefaultWorkers, "how many nodes to sync at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *policyPath == "":
		return errors.New("--policy is required")
	case *prometheus == "":
		return errors.New("--prometheus is required")
	}
	policy, err := dynamic.LoadPolicyFile(*policyPath)
	if err != nil {
		return fmt.Errorf("--policy: %w", err)
	}
	metrics, err := annotator.NewPrometheus(*prometheus)
	if err != nil {
		return fmt.Errorf("--prometheus: %w", err)
	}
	var rc *rest.Config
	if *kubeconfig == "" {
		rc, err = rest.InClusterConfig()
	} else {
		rc, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	}
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(rc, "minisched-annotator"))
	if err != nil {
		return err
	}
	ctx = klog.NewContext(ctx, klog.Background().WithName("annotator"))
	factory := informers.NewSharedInformerFactory(client, 0)
	defer factory.Shutdown()
	ctrl, err := annotator.NewController(ctx, client, factory, metrics, policy,
		annotator.Options{BindingHeapSize: *heapSize, Workers: *workers})
	if err != nil {
		return err
	}
	return ctrl.Run(ctx)
}
