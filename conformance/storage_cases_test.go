//go:build conformance

package conformance

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/examples/provisioner"
	"github.com/minisched/minisched/scenario"
)

// Storage cases run with kube-controller-manager's PV binder beside the
// apiserver (Case.Storage), and compare the claims and volumes after
// binding as well as the pods. Those that provision dynamically also run
// the example provisioner (Case.Provisioner), which serves storageClass
// "local" on every node.

// objects creates storage objects (claims, volumes, classes, CSI objects).
func objects(objs ...runtime.Object) Step {
	return func(ctx context.Context, c *Cluster) error { return c.CreateObjects(ctx, objs...) }
}

// bindTimeoutProfile is the default profile with VolumeBinding's PreBind
// waiting one second at most.
const bindTimeoutProfile = `- schedulerName: default-scheduler
  pluginConfig:
  - name: VolumeBinding
    args:
      bindTimeoutSeconds: 1
`

// The classes the cases use.
var (
	// static is for pre-created local volumes: no provisioner, binding
	// waits for the first pod.
	static = builders.MakeStorageClass().Name("static").WaitForFirstConsumer().Obj()
	// immediate binds claims as soon as they exist, with no pod involved.
	immediate = builders.MakeStorageClass().Name("immediate").Obj()
)

// localPV is a local volume of static on one node.
func localPV(name, size, node string) *builders.PVWrapper {
	return builders.MakePV().Name(name).Class("static").Capacity(size).NodeAffinityIn(hostKey, node)
}

// malformedPV is a 1Gi volume of class whose node affinity is
// "kubernetes.io/hostname Gt n1": valid to the apiserver, which checks only
// that Gt has one value, and an error to every node selector.
func malformedPV(name, class string) *v1.PersistentVolume {
	return builders.MakePV().Name(name).Class(class).Capacity("1Gi").NodeAffinity(hostKey, v1.NodeSelectorOpGt, "n1").Obj()
}

// claim is a claim of class in default.
func claim(name, class, size string) *builders.PVCWrapper {
	return builders.MakePVC().Name(name).Class(class).Req(size)
}

// gcePD is an inline GCE persistent disk.
func gcePD(name string, readOnly bool) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{
		GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: name, ReadOnly: readOnly}}}
}

func storageCases() []Case {
	const csiDriver = "ebs.csi.example.com"
	return []Case{
		// VolumeBinding: static binding for WaitForFirstConsumer. Only n2
		// has a volume big enough; the PV controller completes the bind.
		{Name: "storage-static-local-pv", Storage: true, Steps: []Step{
			nodes(node("n1"), node("n2"), node("n3")),
			objects(static, localPV("pv-small", "1Gi", "n1").Obj(), localPV("pv-big", "10Gi", "n2").Obj(),
				claim("data", "static", "5Gi").Obj()),
			pods(pod("p").PVC("data"))}},
		// The smallest volume that fits wins, and a second claim of the
		// same pod must not take the volume the first one chose.
		{Name: "storage-static-smallest-fit", Storage: true, Steps: []Step{
			nodes(node("n1"), node("n2")),
			objects(static, localPV("a-5g", "5Gi", "n1").Obj(), localPV("b-2g", "2Gi", "n1").Obj(),
				localPV("c-20g", "20Gi", "n2").Obj(),
				claim("one", "static", "1Gi").Obj(), claim("two", "static", "1Gi").Obj()),
			pods(pod("p").PVC("one").PVC("two"))}},
		// No PV controller runs: PreBind writes the claimRef and waits for
		// a bind nobody completes, for bindTimeoutSeconds; the pod goes to
		// backoff with PreBind's error, and the volume stays reserved for
		// its claim.
		{Name: "storage-prebind-timeout", Profiles: bindTimeoutProfile, Steps: []Step{
			nodes(node("n1"), node("n2")),
			objects(static, localPV("pv", "1Gi", "n2").Obj(), claim("data", "static", "1Gi").Obj()),
			pods(pod("p").PVC("data"))}},
		// No volume matches and the class cannot provision.
		{Name: "storage-no-matching-pv", Storage: true, Steps: []Step{
			nodes(node("n1"), node("n2")),
			objects(static, localPV("pv", "1Gi", "n1").Obj(), claim("data", "static", "5Gi").Obj()),
			pods(pod("p").PVC("data"))}},
		// A claim the PV controller bound at once (Immediate): the pod
		// follows its volume's node affinity.
		{Name: "storage-bound-pv-affinity", Storage: true, Steps: []Step{
			nodes(node("n1"), node("n2"), node("n3")),
			objects(immediate, builders.MakePV().Name("pv").Class("immediate").Capacity("1Gi").
				NodeAffinityIn(hostKey, "n3").Obj(), claim("data", "immediate", "1Gi").Obj()),
			waitClaimBound("data"),
			pods(pod("p").PVC("data"))}},
		// An Immediate claim nobody can bind: unresolvable in PreFilter,
		// and DynamicResources' PostFilter adds its "not found".
		{Name: "storage-unbound-immediate", Storage: true, Steps: []Step{
			nodes(node("n1"), node("n2")),
			objects(immediate, claim("data", "immediate", "1Gi").Obj()),
			pods(pod("p").PVC("data"))}},
		// Bad input: a claim that does not exist, and a claim of a class
		// that does not exist.
		{Name: "storage-missing-claim", Storage: true, Steps: []Step{
			nodes(node("n1"), node("n2")),
			pods(pod("p").PVC("nope"))}},
		{Name: "storage-missing-class", Storage: true, Steps: []Step{
			nodes(node("n1"), node("n2")),
			objects(claim("data", "no-such-class", "1Gi").Obj()),
			pods(pod("p").PVC("data"))}},
		// Bad input: a volume whose node affinity the apiserver accepts
		// but no node selector can parse (Gt wants an integer). Matching
		// it fails with an error, taken as "does not match": unbound
		// (WaitForFirstConsumer), no node finds it; bound (the PV binder
		// binds Immediate claims without looking at node affinity), no
		// node matches it. Neither message names the volume.
		{Name: "storage-pv-affinity-malformed", Storage: true, Steps: []Step{
			nodes(node("n1"), node("n2")),
			objects(static, malformedPV("pv", "static"), claim("data", "static", "1Gi").Obj()),
			pods(pod("p").PVC("data"))}},
		{Name: "storage-bound-pv-affinity-malformed", Storage: true, Steps: []Step{
			nodes(node("n1"), node("n2")),
			objects(immediate, malformedPV("pv", "immediate"), claim("data", "immediate", "1Gi").Obj()),
			waitClaimBound("data"),
			pods(pod("p").PVC("data"))}},
		// VolumeRestrictions: a ReadWriteOncePod claim in use by one pod
		// keeps every other pod off every node.
		{Name: "storage-rwop-in-use", Storage: true, Steps: []Step{
			nodes(node("n1"), node("n2")),
			objects(immediate, builders.MakePV().Name("pv").Class("immediate").Capacity("1Gi").
				AccessModes(v1.ReadWriteOncePod).Obj(),
				claim("solo", "immediate", "1Gi").AccessModes(v1.ReadWriteOncePod).Obj()),
			waitClaimBound("solo"),
			pods(pod("first").PVC("solo").NodeSelector(hostKey, "n1")), waitBound("first"),
			pods(pod("second").PVC("solo"))}},
		// VolumeRestrictions: a GCE disk mounted read-write is on one pod
		// per node; one mounted read-only by every pod may be shared.
		{Name: "storage-inline-disk-conflict", Storage: true, Steps: []Step{
			nodes(node("n1"), node("n2")),
			pods(pod("a").Volume(gcePD("disk", false)).Volume(gcePD("shared", true)).NodeSelector(hostKey, "n1")),
			waitBound("a"),
			pods(pod("b").Volume(gcePD("disk", false)),
				pod("c").Volume(gcePD("disk", false)).NodeSelector(hostKey, "n1"),
				pod("ro").Volume(gcePD("shared", true)).NodeSelector(hostKey, "n1"))}},
		// VolumeZone: the bound volume's zone decides; no node is in the
		// second volume's zone.
		{Name: "storage-volume-zone", Storage: true, Steps: []Step{
			nodes(node("a1").Zone("zone-a"), node("b1").Zone("zone-b")),
			objects(immediate, builders.MakePV().Name("pv").Class("immediate").Capacity("1Gi").
				Label(zoneKey, "zone-b").Obj(), claim("data", "immediate", "1Gi").Obj(),
				builders.MakePV().Name("pv-c").Class("immediate").Capacity("2Gi").
					Label(zoneKey, "zone-c").Obj(), claim("far", "immediate", "2Gi").Obj()),
			waitClaimBound("data", "far"),
			pods(pod("p").PVC("data"), pod("q").PVC("far"))}},
		// NodeVolumeLimits: n1 attaches one volume of the driver; the
		// second pod's volume must go to n2, the third finds no room.
		{Name: "storage-volume-limits", Storage: true, Steps: []Step{
			nodes(node("n1"), node("n2")),
			objects(immediate,
				builders.MakeCSINode("n1", map[string]int32{csiDriver: 1}),
				builders.MakeCSINode("n2", map[string]int32{csiDriver: 1}),
				builders.MakePV().Name("v1").Class("immediate").Capacity("1Gi").CSI(csiDriver, "h1").Obj(),
				builders.MakePV().Name("v2").Class("immediate").Capacity("2Gi").CSI(csiDriver, "h2").Obj(),
				builders.MakePV().Name("v3").Class("immediate").Capacity("3Gi").CSI(csiDriver, "h3").Obj(),
				claim("c1", "immediate", "1Gi").Obj(), claim("c2", "immediate", "2Gi").Obj(),
				claim("c3", "immediate", "3Gi").Obj()),
			waitClaimBound("c1", "c2", "c3"),
			pods(pod("p1").PVC("c1").NodeSelector(hostKey, "n1")), waitBound("p1"),
			pods(pod("p2").PVC("c2")), waitBound("p2"),
			pods(pod("p3").PVC("c3"))}},
		// NodeVolumeLimits with VolumeLimitScaling: a driver that must be
		// installed (preventPodSchedulingIfMissing) is on n2 only.
		{Name: "storage-csi-driver-missing", Storage: true, Steps: []Step{
			nodes(node("n1"), node("n2")),
			objects(immediate, builders.MakeCSIDriver(csiDriver, false, ptr.To(true)),
				builders.MakeCSINode("n2", map[string]int32{csiDriver: 0}),
				builders.MakePV().Name("v").Class("immediate").Capacity("1Gi").CSI(csiDriver, "h").Obj(),
				claim("c", "immediate", "1Gi").Obj()),
			waitClaimBound("c"),
			pods(pod("p").PVC("c"))}},
		// Dynamic provisioning: capacity decides the node. Only n2 has
		// room for 5Gi; the provisioner makes the volume there.
		{Name: "storage-provision-capacity", Storage: true, Provisioner: map[string]string{"n1": "2Gi", "n2": "8Gi", "n3": "4Gi"},
			Steps: []Step{
				nodes(node("n1"), node("n2"), node("n3")),
				waitCapacities(localClass, 3),
				objects(claim("data", localClass, "5Gi").Obj()),
				pods(pod("p").PVC("data"))}},
		// StorageCapacityScoring: every node has room; the emptiest wins.
		{Name: "storage-provision-capacity-scoring", Storage: true, Provisioner: map[string]string{"n1": "10Gi", "n2": "40Gi", "n3": "20Gi"},
			Steps: []Step{
				nodes(node("n1"), node("n2"), node("n3")),
				waitCapacities(localClass, 3),
				objects(claim("data", localClass, "5Gi").Obj()),
				pods(pod("p").PVC("data"))}},
		// No node has room: "did not have enough free storage".
		{Name: "storage-provision-no-capacity", Storage: true, Provisioner: map[string]string{"n1": "1Gi", "n2": "2Gi"},
			Steps: []Step{
				nodes(node("n1"), node("n2")),
				waitCapacities(localClass, 2),
				objects(claim("data", localClass, "5Gi").Obj()),
				pods(pod("p").PVC("data"))}},
		// A generic ephemeral volume: the ephemeral-volume controller
		// creates the claim, then the provisioner the volume.
		{Name: "storage-ephemeral", Storage: true, Provisioner: map[string]string{"n1": "1Gi", "n2": "8Gi"},
			Steps: []Step{
				nodes(node("n1"), node("n2")),
				waitCapacities(localClass, 2),
				pods(pod("p").EphemeralVolume("scratch", localClass, "2Gi"))}},
		// allowedTopologies keeps provisioning to zone-b.
		{Name: "storage-allowed-topologies", Storage: true, Provisioner: map[string]string{"a1": "8Gi", "b1": "8Gi"},
			Steps: []Step{
				nodes(node("a1").Zone("zone-a"), node("b1").Zone("zone-b")),
				waitCapacities(localClass, 2),
				objects(builders.MakeStorageClass().Name("zoned").Provisioner(provisionerName).WaitForFirstConsumer().
					AllowedTopologyIn(zoneKey, "zone-b").Obj(), claim("data", "zoned", "1Gi").Obj()),
				waitCapacities("zoned", 2),
				pods(pod("p").PVC("data"))}},
	}
}

// storageOutcome lists each claim ("pvc ns/name: phase, volume, selected
// node, bind annotations") and each volume ("pv name: phase, claim, node
// affinity"), sorted. A provisioned volume's name carries its claim's UID,
// which differs between runs: it is shown as "provisioned for ns/claim".
func storageOutcome(ctx context.Context, client kubernetes.Interface) ([]string, error) {
	claims, err := client.CoreV1().PersistentVolumeClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	volumes, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	provisioned := map[string]string{}
	var out []string
	for _, pv := range volumes.Items {
		name := pv.Name
		claimName := ""
		if ref := pv.Spec.ClaimRef; ref != nil {
			claimName = ref.Namespace + "/" + ref.Name
		}
		if _, ok := pv.Annotations[provisionedByAnnotation]; ok {
			name = "provisioned for " + claimName
			provisioned[pv.Name] = name
		}
		out = append(out, fmt.Sprintf("pv %s: %s, claim %q, bound-by-controller=%q, node affinity %s", name,
			pv.Status.Phase, claimName, pv.Annotations[volume.AnnBoundByController], nodeAffinity(&pv)))
	}
	for _, pvc := range claims.Items {
		vol := pvc.Spec.VolumeName
		if p, ok := provisioned[vol]; ok {
			vol = p
		}
		out = append(out, fmt.Sprintf("pvc %s/%s: %s, volume %q, selected-node %q, bind-completed=%q", pvc.Namespace,
			pvc.Name, pvc.Status.Phase, vol, pvc.Annotations[volume.AnnSelectedNode],
			pvc.Annotations[volume.AnnBindCompleted]))
	}
	sort.Strings(out)
	return out, nil
}

// nodeAffinity prints a volume's required node affinity compactly.
func nodeAffinity(pv *v1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return "none"
	}
	var terms []string
	for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range t.MatchExpressions {
			terms = append(terms, fmt.Sprintf("%s %s %v", e.Key, e.Operator, e.Values))
		}
	}
	return "[" + strings.Join(terms, "; ") + "]"
}

// waitClaimBound waits until the PV controller bound the named claims (in
// default).
func waitClaimBound(names ...string) Step {
	return func(ctx context.Context, c *Cluster) error {
		for _, n := range names {
			err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, scenario.DefaultWait, true,
				func(ctx context.Context) (bool, error) {
					pvc, err := c.Client.CoreV1().PersistentVolumeClaims("default").Get(ctx, n, metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					return pvc.Status.Phase == v1.ClaimBound, nil
				})
			if err != nil {
				return fmt.Errorf("waiting for claim %s to be bound: %w", n, err)
			}
		}
		return nil
	}
}

// The example provisioner's class in the cases that provision.
const (
	localClass      = "local"
	provisionerName = provisioner.Name
	// provisionedByAnnotation marks the volumes a provisioner made.
	provisionedByAnnotation = "pv.kubernetes.io/provisioned-by"
)

// startProvisioner creates class localClass and runs the example
// provisioner with the given capacities per node; the returned function
// stops it.
func startProvisioner(ctx context.Context, t *testing.T, c *Cluster, capacity map[string]string) func() {
	t.Helper()
	if err := c.CreateObjects(ctx, provisioner.StorageClass(localClass)); err != nil {
		t.Fatal(err)
	}
	opts := provisioner.Options{Capacity: map[string]resource.Quantity{}}
	for node, q := range capacity {
		opts.Capacity[node] = resource.MustParse(q)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- provisioner.New(c.Client, opts).Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("provisioner: %v", err)
		}
	}
}

// waitCapacities waits until the provisioner published the capacity of
// class on n nodes, so the scheduler's first look sees them all.
func waitCapacities(class string, n int) Step {
	return func(ctx context.Context, c *Cluster) error {
		return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, scenario.DefaultWait, true,
			func(ctx context.Context) (bool, error) {
				list, err := c.Client.StorageV1().CSIStorageCapacities(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, err
				}
				found := 0
				for _, cap := range list.Items {
					if cap.StorageClassName == class {
						found++
					}
				}
				return found == n, nil
			})
	}
}
