// The controllers that make pods leave their nodes, and what they need to
// run on the embedded cluster: names kube-controller-manager knows, which
// of them need another beside them, and the node lifecycle controller's
// periods, shortened so that a story takes seconds, not minutes.

package testenv

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The controllers of chapter 18 (docs/18-eviction.md), by
// kube-controller-manager's names.
const (
	// NodeLifecycleController watches each node's heartbeat (its Lease,
	// or its Ready condition), marks a node that stopped posting Unknown,
	// and turns node conditions into taints: NoSchedule ones for
	// not-ready, unreachable, memory-pressure and the others, NoExecute
	// ones for not-ready and unreachable.
	NodeLifecycleController = "node-lifecycle-controller"
	// TaintEvictionController deletes the pods that do not tolerate a
	// node's NoExecute taints, at once or after their tolerationSeconds.
	// It lists a node's pods through an informer index that only the node
	// lifecycle controller (or the DaemonSet controller) registers: alone,
	// it never evicts the pods already on a node when a taint arrives.
	TaintEvictionController = "taint-eviction-controller"
	// ReplicaSetController makes a ReplicaSet's replacement pods.
	ReplicaSetController = "replicaset-controller"
	// DeploymentController makes a Deployment's ReplicaSets.
	DeploymentController = "deployment-controller"
	// DisruptionController writes each PodDisruptionBudget's status: how
	// many of its pods are healthy and how many may be disrupted now. The
	// Eviction API reads that status and nothing else.
	DisruptionController = "disruption-controller"
)

// KnownControllers is every controller kube-controller-manager v1.37.1
// knows (`kube-controller-manager --help`, under --controllers;
// TestKnownControllers holds the list to the binary's).
var KnownControllers = []string{
	"bootstrap-signer-controller", "certificatesigningrequest-approving-controller",
	"certificatesigningrequest-cleaner-controller", "certificatesigningrequest-signing-controller",
	"clusterrole-aggregation-controller", "cronjob-controller", "daemonset-controller",
	"deployment-controller", "device-taint-eviction-controller", "disruption-controller",
	"endpoints-controller", "endpointslice-controller", "endpointslice-mirroring-controller",
	"ephemeral-volume-controller", "garbage-collector-controller", "horizontal-pod-autoscaler-controller",
	"job-controller", "kube-apiserver-serving-clustertrustbundle-publisher-controller",
	"legacy-serviceaccount-token-cleaner-controller", "namespace-controller", "node-ipam-controller",
	"node-lifecycle-controller", "persistentvolume-attach-detach-controller",
	"persistentvolume-binder-controller", "persistentvolume-expander-controller",
	"persistentvolume-protection-controller", "persistentvolumeclaim-protection-controller",
	"pod-garbage-collector-controller", "podcertificaterequest-cleaner-controller",
	"podgroup-protection-controller", "replicaset-controller", "replicationcontroller-controller",
	"resourceclaim-controller", "resourcepoolstatusrequest-controller", "resourcequota-controller",
	"root-ca-certificate-publisher-controller", "selinux-warning-controller", "service-cidr-controller",
	"serviceaccount-controller", "serviceaccount-token-controller", "statefulset-controller",
	"storage-version-migrator-controller", "storageversion-garbage-collector-controller",
	"taint-eviction-controller", "token-cleaner-controller", "ttl-after-finished-controller",
	"ttl-controller", "validatingadmissionpolicy-status-controller",
	"volumeattributesclass-protection-controller",
}

// CheckControllers says whether kube-controller-manager can run these
// controllers as a story means them to, before anything starts: each name
// must be one it knows (kube-controller-manager would exit on any other,
// and a story would only learn why from its log), none may come twice, and
// the taint-eviction controller needs the node lifecycle controller beside
// it (see TaintEvictionController).
func CheckControllers(controllers []string) error {
	seen := map[string]bool{}
	for _, c := range controllers {
		if !slices.Contains(KnownControllers, c) {
			return fmt.Errorf("unknown controller %q: kube-controller-manager v1.37.1 knows %s", c,
				strings.Join(KnownControllers, ", "))
		}
		if seen[c] {
			return fmt.Errorf("controller %q is named twice", c)
		}
		seen[c] = true
	}
	if seen[TaintEvictionController] && !seen[NodeLifecycleController] {
		return fmt.Errorf("%s needs %s beside it: it finds a tainted node's pods through an index only "+
			"the node lifecycle controller registers, and alone never evicts the pods already there",
			TaintEvictionController, NodeLifecycleController)
	}
	return nil
}

// NodeMonitor is the node lifecycle controller's timing: how often it
// looks at the nodes, and how long a node may be silent before it is
// marked Unknown. Upstream's defaults are 5s, 50s and 60s: a story would
// wait a minute for a dead kubelet to be noticed.
type NodeMonitor struct {
	// Period is how often the controller checks every node's health
	// (--node-monitor-period).
	Period time.Duration
	// GracePeriod is how long a node that has posted status may stay
	// silent before it is marked Unknown (--node-monitor-grace-period).
	// KWOK must renew the node's Lease more often than this
	// (KWOKOptions.NodeLeaseDuration).
	GracePeriod time.Duration
	// StartupGracePeriod is the same for a node that never posted status
	// (--node-startup-grace-period).
	StartupGracePeriod time.Duration
}

// FastNodeMonitor is the timing the stories run the node lifecycle
// controller with: a silent node is noticed within about six seconds.
var FastNodeMonitor = NodeMonitor{Period: time.Second, GracePeriod: 5 * time.Second,
	StartupGracePeriod: 10 * time.Second}

// Flags are kube-controller-manager's flags for this timing.
func (m NodeMonitor) Flags() []string {
	return []string{
		"--node-monitor-period=" + m.Period.String(),
		"--node-monitor-grace-period=" + m.GracePeriod.String(),
		"--node-startup-grace-period=" + m.StartupGracePeriod.String(),
	}
}
