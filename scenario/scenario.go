// A story told against a real apiserver, and choosing stories by name.

package scenario

import (
	"context"
	"fmt"
	"slices"
	"strings"

	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/examples/dradriver"
	"github.com/minisched/minisched/minisched/features"
)

// Scenario is one story told against a real apiserver: it creates nodes and
// pods, waits for the scheduler's decisions and checks them.
type Scenario struct {
	// Name is also the scenario's namespace.
	Name string
	// Chapter is the tutorial chapter it illustrates (docs/).
	Chapter int
	// Description says in one line what it shows.
	Description string
	// Config returns the configuration the scenario needs; a nil Config
	// means the runner's base configuration (the default profile, or
	// --config). The stories of chapters 1-8 bring their chapter's
	// (chapters.ChapterConfig).
	Config func() (*configv1.KubeSchedulerConfiguration, error)
	// Run creates objects and checks outcomes; an error is a failure.
	Run func(ctx context.Context, env *Env) error
	// Parts lists what the story needs beside the apiserver and the
	// runner's scheduler, in any order: KWOK, Storage, DRA, Extender,
	// Descheduler, or OwnSchedulers instead of the runner's. Most stories
	// need none.
	Parts Parts
	// Provisioner, when set, runs the example dynamic provisioner
	// (examples/provisioner) for the scenario, with a disk of the given size
	// ("8Gi") on each named node and none on the others. It provisions
	// claims of StorageClasses whose provisioner is provisioner.Name
	// (provisioner.StorageClass builds one), publishing each node's free
	// space as CSIStorageCapacity objects. It implies Storage: the PV
	// binder does half of the provisioning handshake.
	Provisioner map[string]string
	// DRADriver, when set, runs the example DRA driver
	// (examples/dradriver) for the scenario with these options: it
	// publishes each node's devices as ResourceSlices. It implies DRA. It
	// is apart from DRA so that a story may publish slices of its own
	// without a driver of the same name deleting them as not its own.
	DRADriver *dradriver.Options
	// Controllers names kube-controller-manager controllers (by its names,
	// testenv.KnownControllers) that run for this story alone: started
	// before it, stopped after it, apart from the ones Storage and DRA keep
	// for the run. Chapter 18's stories run the node lifecycle and
	// taint-eviction controllers (with testenv.FastNodeMonitor's timing,
	// and KWOK renewing node Leases), the ReplicaSet controller and the
	// disruption controller. A story whose controllers could not run as
	// meant is refused before anything starts (testenv.CheckControllers).
	Controllers []string
	// FeatureGates are the scheduler's (kube-scheduler's --feature-gates):
	// chapter 19's stories turn on GenericWorkload, and
	// TopologyAwareWorkloadScheduling for topology. A story that sets any
	// runs the default profile of its gates unless it brings its Config,
	// and, with GenericWorkload, kube-controller-manager's PodGroup
	// protection controller. The apiserver serves PodGroups whatever the
	// story says (testenv.WorkloadFeatureGates).
	FeatureGates features.Gates
}

// Part is a piece of the cluster a story may need beside the apiserver and
// the runner's scheduler.
type Part string

// The parts a story may list in Scenario.Parts.
const (
	// KWOK runs KWOK beside the scheduler for the scenario: nodes get a
	// heartbeat, pods become Running with a start time, and deleted pods go
	// away after their grace period, as if kubelets ran.
	KWOK Part = "KWOK"
	// Storage runs kube-controller-manager's storage controllers
	// (testenv.StorageControllers: the PV binder, PV and PVC protection,
	// the ephemeral-volume controller) beside the scheduler, so that claims
	// get bound, generic ephemeral volumes get their claims, and deleted
	// claims and volumes go away. The runner starts it for the first
	// scenario of a run that asks, keeps it for the rest of the run, and
	// stops it when the run ends.
	Storage Part = "storage"
	// DRA runs kube-controller-manager's DRA controllers
	// (testenv.DRAControllers: the resourceclaim controller and the
	// garbage collector) beside the scheduler, so that a pod's claim
	// templates become claims, and claims are released when their pods go.
	// Like Storage, kube-controller-manager is started once and kept for
	// the rest of the run (with the union of what the run's scenarios
	// asked for).
	DRA Part = "DRA"
	// Extender runs the example extender (examples/extender/server) beside
	// the scheduler: configuration entries whose urlPrefix is ExtenderURL
	// are pointed at it.
	Extender Part = "extender"
	// OwnSchedulers says that Run starts the schedulers itself, from
	// Env.RestConfig (several replicas electing a leader, say): the runner
	// starts none, Config only names Env.SchedulerName, Extender and
	// Env.MetricsURL are unused, and Env.Attempts is empty unless Run
	// feeds it.
	OwnSchedulers Part = "own schedulers"
	// Descheduler lets the story run the descheduler once, or more, with
	// Env.RunDescheduler (`make descheduler` builds it).
	Descheduler Part = "descheduler"
)

// Parts is the list of parts a story needs (Scenario.Parts).
type Parts []Part

// Has says whether the list holds p.
func (ps Parts) Has(p Part) bool { return slices.Contains(ps, p) }

// Select returns the scenarios of all with the given names, in the order
// of names (all when names is empty), or an error listing the known names.
func Select(all []Scenario, names []string) ([]Scenario, error) {
	if len(names) == 0 {
		return all, nil
	}
	byName := map[string]Scenario{}
	known := make([]string, 0, len(all))
	for _, s := range all {
		byName[s.Name] = s
		known = append(known, s.Name)
	}
	var out []Scenario
	for _, n := range names {
		s, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("unknown scenario %q; known scenarios: %s", n, strings.Join(known, ", "))
		}
		out = append(out, s)
	}
	return out, nil
}
