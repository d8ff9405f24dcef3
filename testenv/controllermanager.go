// kube-controller-manager beside the embedded apiserver, running only the
// controllers a test names: the storage flows that the scheduler starts
// (binding a PVC, provisioning a volume, creating an ephemeral volume's
// claim) and the DRA flows (a pod's claim made from its template, a claim
// released when its pod is gone) stop half way unless these controllers
// finish them.

package testenv

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// StorageControllers are the controllers the storage plugins need beside
// them: the PV binder binds claims (immediate ones on its own, delayed ones
// after the scheduler picked a node or an external provisioner made a
// volume); the two protection controllers lift the finalizers that the
// apiserver's StorageObjectInUseProtection admission puts on every PV and
// PVC, without which deleting one hangs; the ephemeral-volume controller
// creates the PVC of a pod's generic ephemeral volume.
var StorageControllers = []string{
	"persistentvolume-binder-controller",
	"persistentvolume-protection-controller",
	"persistentvolumeclaim-protection-controller",
	"ephemeral-volume-controller",
}

// DRAControllers are the controllers the DynamicResources plugin needs
// beside it. The resourceclaim controller creates the claim of each of a
// pod's ResourceClaimTemplates (the scheduler's PreEnqueue holds the pod
// until it exists) and records it in pod.status.resourceClaimStatuses; it
// drops from a claim's status.reservedFor the pods that are gone or done,
// and once none is left clears the allocation the scheduler wrote, so that
// the devices are free again; and it deletes the generated claim of a pod
// that is done. The claims of deleted pods it leaves to the garbage
// collector, which deletes the objects whose owner is gone: without it a
// deleted pod's generated claim stays (released, but there). The garbage
// collector discovers every resource the apiserver serves and watches each
// before it deletes anything, which on envtest's small, empty cluster costs
// nothing one can measure: kube-controller-manager is ready in about 0.1s
// with or without it, and TestDRAControllers sees a claim collected within
// 0.3s of its pod's deletion, right after the start.
//
// The device-taint-eviction controller, which evicts pods from devices
// with NoExecute taints, is not here: only a story about such taints needs
// it, and it can name it.
var DRAControllers = []string{
	"resourceclaim-controller",
	"garbage-collector-controller",
}

// WorkloadControllers are the controllers pod groups need beside the
// scheduler: the apiserver's PodGroupProtection admission puts a finalizer
// on every PodGroup, and podgroup-protection-controller lifts it once no
// pod of the group is left; without it, deleting a PodGroup hangs. It runs
// only with GenericWorkload, which StartControllerManager turns on when
// the apiserver serves the workload API.
var WorkloadControllers = []string{"podgroup-protection-controller"}

// controllerGates are kube-controller-manager's feature gates: the
// apiserver's, so that the workload controllers run where the workload API
// is served.
func (e *Environment) controllerGates() []string {
	if !e.Workloads {
		return nil
	}
	return []string{"--feature-gates=" + WorkloadFeatureGates}
}

// controllerManagerStartTimeout bounds StartControllerManager's wait. It
// is generous: kube-controller-manager itself waits up to 10s for the
// apiserver's /healthz, and the machine may be busy with parallel tests.
const controllerManagerStartTimeout = time.Minute

// ControllerManager is a running kube-controller-manager.
type ControllerManager struct {
	proc *process
}

// StartControllerManager starts kube-controller-manager against the
// environment's apiserver with only the named controllers (canonical names,
// as `kube-controller-manager --help` lists them under --controllers), and
// returns once each of them has started. The binary is
// $KUBE_CONTROLLER_MANAGER, or kube-controller-manager in AssetsDir (where
// `make kube-controller-manager` builds it).
//
// Flags: no leader election, which would need a Lease and delay the start;
// the kubeconfig's identity for every controller instead of minted
// service-account tokens; no serving port, so that parallel environments
// do not clash over 10257; and a PV binder resync of a second instead of
// 15s. The binder keeps its own cache of volumes, fed by one work queue
// while claims come through another, so a claim created in the same instant
// as its PV is often examined before that cache has the PV, and then waits
// for the next resync (measured here: 13-15s about every other run).
//
// Ready means that kube-controller-manager logged "Controller starting..."
// for every named controller (at -v=1). With --secure-port=0 there is no
// /healthz to poll, and a settle period would only guess. Once that line
// is out, everything that can fail at start has passed: flag validation
// (an unknown name exits at once), the wait for the apiserver, building
// each controller. Its caches may not have synced yet, but that loses
// nothing: an informer lists what exists before it watches, so objects a
// test creates from now on are seen either way. An error (the process
// exited, or not ready within a minute) names its log file, kept under
// os.TempDir().
func (e *Environment) StartControllerManager(controllers ...string) (*ControllerManager, error) {
	return e.StartControllerManagerWithFlags(nil, controllers...)
}

// StartControllerManagerWithFlags is StartControllerManager with flags
// passed after its own. kube-controller-manager takes the last of a
// repeated flag, so they may override those: `make bench`, which keeps a
// thousand claims pending, lifts the client's rate limit (--kube-api-qps,
// 20 by default, paces the PV binder's writes and its events alike) and
// sets the binder's resync back to upstream's 15s (each resync examines
// every pending claim against every volume, and reports an event for each).
func (e *Environment) StartControllerManagerWithFlags(flags []string, controllers ...string) (*ControllerManager, error) {
	if len(controllers) == 0 {
		return nil, errors.New("StartControllerManager: no controller named (try StorageControllers)")
	}
	bin, err := binary("KUBE_CONTROLLER_MANAGER", "kube-controller-manager", "kube-controller-manager", AssetsDir)
	if err != nil {
		return nil, err
	}
	proc, err := e.startProcess("kube-controller-manager", bin, func(kubeconfig string) []string {
		return append([]string{
			"--kubeconfig=" + kubeconfig,
			"--controllers=" + strings.Join(controllers, ","),
			"--leader-elect=false",
			"--use-service-account-credentials=false",
			"--secure-port=0",
			"--pvclaimbinder-sync-period=1s",
			"--v=1", // for the "Controller starting..." lines waited for below
		}, append(e.controllerGates(), flags...)...)
	})
	if err != nil {
		return nil, err
	}
	err = proc.waitReady(controllerManagerStartTimeout, func(output string) bool {
		for _, c := range controllers {
			if !strings.Contains(output, fmt.Sprintf("%q controller=%q", "Controller starting...", c)) {
				return false
			}
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager with controllers %s: %w", strings.Join(controllers, ","), err)
	}
	return &ControllerManager{proc: proc}, nil
}

// KeepLog makes Stop leave kube-controller-manager's log in place, and
// returns its path: a test that failed calls it to have the controllers'
// side of the story.
func (c *ControllerManager) KeepLog() string {
	c.proc.keepLog.Store(true)
	return c.proc.logPath
}

// Stop ends kube-controller-manager and removes its files (its log too,
// unless KeepLog was called). What its controllers did stays done. The
// error says so if it had exited on its own, and names its log, which is
// then kept.
func (c *ControllerManager) Stop() error { return c.proc.stop() }
