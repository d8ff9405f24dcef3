package app

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	explainpkg "github.com/minisched/minisched/explain"
)

// explainHelp is `explain -h`'s text.
var explainHelp = help{
	usage: "%[1]s explain POD [-n NAMESPACE] [--kubeconfig FILE] [--wide]",
	about: `
Says why a pod is pending, or why it went where it did. A pod that minisched
scheduled with attempt records on (run --record-attempts; start always) carries
its last attempt in the annotation minisched.io/last-attempt: explain shows
it as a Filter table (nodes × Filter plugins and extenders: ✓, the reason, or
– for a plugin that did not run after the node's first failure), a Score table
(each feasible node's weighted score per plugin, and the total), then the
selected node, or why none, the nominated node and the victims of preemption.
When DynamicResources rejected the pod, a device section below the Filter table
says, per claim, request and node, how many devices the node reaches, how many
match, how many other claims hold or taints keep away, and what is asked for.

For any other pod (one only kube-scheduler handled, say) it reads the pod's
Scheduled and FailedScheduling events, counts the nodes per reason, and says
what events cannot tell.

The kubeconfig is --kubeconfig, else $KUBECONFIG, else ~/.kube/config, as for
kubectl; the namespace is -n, else the kubeconfig context's, else default.
Flags may come before or after the pod's name.`,
	examples: []string{
		"%[1]s explain web",
		"%[1]s explain web -n shop --kubeconfig ~/.kube/config",
		"%[1]s explain web -n shop --wide",
	},
}

// explainPod, the explain subcommand, prints why a pod is pending or where
// it went, and why, with package explain.
func (c *Command) explainPod(ctx context.Context, args []string) error {
	fs := c.flagSet("explain", explainHelp)
	var namespace string
	fs.StringVar(&namespace, "n", "", "the pod's `NAMESPACE` (default: the kubeconfig context's, else default)")
	fs.StringVar(&namespace, "namespace", "", "the same as -n")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig `FILE` (default: $KUBECONFIG, else ~/.kube/config)")
	wide := fs.Bool("wide", false, "show every Filter plugin, and raw/normalised/weighted scores")
	pods, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pods) != 1 {
		fs.Usage()
		return errors.New("explain takes exactly one pod name")
	}

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = *kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	if namespace == "" {
		if namespace, _, err = loader.Namespace(); err != nil {
			return fmt.Errorf("reading the kubeconfig: %w", err)
		}
	}
	rc, err := loader.ClientConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	return explainpkg.Pod(ctx, client, namespace, pods[0], c.stdout, explainpkg.Options{Wide: *wide})
}

// parseInterspersed parses flags wherever they are among args (Go's flag
// package stops at the first argument that is not a flag) and returns the
// other arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return rest, nil
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// recordAttemptsHelp is the help of run's --record-attempts.
const recordAttemptsHelp = "write each pod's last scheduling attempt to the pod, as the annotation " +
	"minisched.io/last-attempt, for `minisched explain` (needs the permission to patch pods)"
