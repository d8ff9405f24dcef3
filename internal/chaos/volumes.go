// This file holds the run's volumes: claims of three StorageClasses (the
// example provisioner's node-local volumes and static node-affine PVs, both
// WaitForFirstConsumer, and static PVs bound at once), claims that one pod
// at a time may use (ReadWriteOncePod), PV and claim deletions, and what
// must hold of claims and volumes.

package chaos

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/examples/provisioner"
)

// The run's StorageClasses.
const (
	// classLocal is the example provisioner's: a volume made on the node
	// the scheduler picks (WaitForFirstConsumer).
	classLocal = "chaos-local"
	// classStatic is WaitForFirstConsumer with static volumes, each on one
	// node: the scheduler picks the volume with the node.
	classStatic = "chaos-static"
	// classImmediate is Immediate, with static volumes on no node in
	// particular: the PV binder binds the claim before any pod comes.
	classImmediate = "chaos-immediate"
)

// annSelectedNode is the annotation VolumeBinding's PreBind puts on a claim
// to be provisioned: the node its pod is going to.
const annSelectedNode = "volume.kubernetes.io/selected-node"

// volumeSize is every claim's and volume's size; the provisioner gives each
// node room for many.
const volumeSize = "1Gi"

// startVolumes creates the StorageClasses and starts the example
// provisioner, until ctx ends.
func (r *Run) startVolumes(ctx context.Context) error {
	for _, sc := range []*storagev1.StorageClass{
		provisioner.StorageClass(classLocal),
		builders.MakeStorageClass().Name(classStatic).WaitForFirstConsumer().Obj(),
		builders.MakeStorageClass().Name(classImmediate).Obj(),
	} {
		if _, err := r.client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating storage class %s: %w", sc.Name, err)
		}
	}
	p := provisioner.New(r.client, provisioner.Options{DefaultCapacity: resource.MustParse("100Gi"),
		Namespace: r.cfg.Namespace})
	go func() {
		if err := p.Run(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logf("the example provisioner stopped: %v", err)
		}
	}()
	return nil
}

// volumeOperations are the volume operations.
var volumeOperations = []operation{
	{name: "createVolumePod", weight: 5, applies: always, draw: drawCreateVolumePod},
	{name: "deleteClaim", weight: 1, applies: func(r *Run) bool { return len(r.claims) > 0 }, draw: drawDeleteClaim},
	{name: "deleteVolume", weight: 1, applies: func(r *Run) bool { return len(r.volumes) > 0 }, draw: drawDeleteVolume},
}

// drawCreateVolumePod draws a claim of one of the classes (with its static
// volume, on a drawn node for classStatic) and a pod using it; a
// ReadWriteOncePod claim gets two pods, of which one at a time may run.
func drawCreateVolumePod(r *Run) step {
	claim := fmt.Sprintf("pvc-%d", r.claimSeq)
	r.claimSeq++
	r.claims = append(r.claims, claim)
	class := []string{classLocal, classLocal, classStatic, classImmediate}[r.rng.IntN(4)]
	rwop := class == classLocal && r.rng.IntN(3) == 0
	volume, node := "", ""
	if class != classLocal {
		volume = "pv-" + claim
		r.volumes = append(r.volumes, volume)
		if class == classStatic && len(r.nodes) > 0 {
			node = r.drawNode()
		}
	}
	small := map[v1.ResourceName]string{v1.ResourceCPU: "100m"}
	pods := []podSpec{{name: r.newPodName(), requests: small, class: priorityClasses[r.rng.IntN(2)].Name, pvc: claim}}
	if rwop {
		pods = append(pods, podSpec{name: r.newPodName(), requests: small, class: priorityClasses[0].Name, pvc: claim})
	}
	what := fmt.Sprintf("create claim %s (%s", claim, class)
	if rwop {
		what += ", ReadWriteOncePod"
	}
	if volume != "" {
		what += ", volume " + volume
		if node != "" {
			what += " on " + node
		}
	}
	what += ") used by"
	for _, p := range pods {
		what += " " + p.String()
	}
	return step{what: what, apply: func(ctx context.Context) (string, error) {
		if volume != "" {
			pv := builders.MakePV().Name(volume).Class(class).Capacity(volumeSize).
				AccessModes(v1.ReadWriteOnce)
			if node != "" {
				pv.NodeAffinityIn(v1.LabelHostname, node)
			}
			if _, err := r.client.CoreV1().PersistentVolumes().Create(ctx, pv.Obj(), metav1.CreateOptions{}); err != nil {
				return "", fmt.Errorf("creating volume %s: %w", volume, err)
			}
		}
		mode := v1.ReadWriteOnce
		if rwop {
			mode = v1.ReadWriteOncePod
		}
		pvc := builders.MakePVC().Namespace(r.cfg.Namespace).Name(claim).Class(class).Req(volumeSize).
			AccessModes(mode).Obj()
		if _, err := r.client.CoreV1().PersistentVolumeClaims(r.cfg.Namespace).Create(ctx, pvc,
			metav1.CreateOptions{}); err != nil {
			return "", fmt.Errorf("creating claim %s: %w", claim, err)
		}
		return "created", r.createPods(ctx, pods)
	}}
}

func drawDeleteClaim(r *Run) step {
	name := drawAndForget(r, &r.claims)
	return r.deleteStep("claim "+name+" (its pods' protection holds it while they exist)", func(ctx context.Context) error {
		return r.client.CoreV1().PersistentVolumeClaims(r.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	})
}

func drawDeleteVolume(r *Run) step {
	name := drawAndForget(r, &r.volumes)
	return r.deleteStep("volume "+name+" (its claim's protection holds it while bound)", func(ctx context.Context) error {
		return r.client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// drawAndForget draws one of the names and drops it from the bookkeeping.
func drawAndForget(r *Run, names *[]string) string {
	i := r.rng.IntN(len(*names))
	name := (*names)[i]
	*names = slices.Delete(*names, i, i+1)
	return name
}

// deleteStep is the step that deletes what with del; one gone already is
// no error.
func (r *Run) deleteStep(what string, del func(context.Context) error) step {
	return step{what: "delete " + what, apply: func(ctx context.Context) (string, error) {
		if err := ignoreNotFound(del(ctx)); err != nil {
			return "", fmt.Errorf("deleting %s: %w", what, err)
		}
		return "deleted", nil
	}}
}

// storage is the volume state the invariants read.
type storage struct {
	claims  map[string]*v1.PersistentVolumeClaim
	volumes map[string]*v1.PersistentVolume
}

// readStorage reads the namespace's claims and every volume.
func (r *Run) readStorage(ctx context.Context) (*storage, error) {
	claims, err := r.client.CoreV1().PersistentVolumeClaims(r.cfg.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing claims: %w", err)
	}
	pvs, err := r.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing volumes: %w", err)
	}
	s := &storage{claims: map[string]*v1.PersistentVolumeClaim{}, volumes: map[string]*v1.PersistentVolume{}}
	for i := range claims.Items {
		s.claims[claims.Items[i].Name] = &claims.Items[i]
	}
	for i := range pvs.Items {
		s.volumes[pvs.Items[i].Name] = &pvs.Items[i]
	}
	return s, nil
}

// volumeNode is the node a volume's affinity names ("" for none).
func volumeNode(pv *v1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == v1.LabelHostname && len(e.Values) == 1 {
				return e.Values[0]
			}
		}
	}
	return ""
}

// claimsOfPod lists the claims of p's volumes.
func claimsOfPod(p *v1.Pod) []string {
	var out []string
	for _, vol := range p.Spec.Volumes {
		if vol.PersistentVolumeClaim != nil {
			out = append(out, vol.PersistentVolumeClaim.ClaimName)
		}
	}
	return out
}

// volumesFit reports whether p's claims can be had on node, as far as the
// run can say: a bound claim only where its volume is; an unbound local
// claim anywhere (each node's disk has room to spare); an unbound static
// claim where an Available volume of its class is; an unbound Immediate
// claim nowhere yet (the PV binder binds it first). A ReadWriteOncePod
// claim that a bound pod uses fits nowhere else.
func (c *cluster) volumesFit(p *v1.Pod, node string) (bool, string) {
	for _, name := range claimsOfPod(p) {
		pvc, ok := c.storage.claims[name]
		if !ok || pvc.DeletionTimestamp != nil {
			return false, "claim " + name + " is gone"
		}
		if slices.Contains(pvc.Spec.AccessModes, v1.ReadWriteOncePod) && c.claimInUse(name, p) {
			return false, "claim " + name + " is ReadWriteOncePod and in use"
		}
		if pvc.Spec.VolumeName != "" {
			pv, ok := c.storage.volumes[pvc.Spec.VolumeName]
			if !ok {
				return false, "its volume is gone"
			}
			if n := volumeNode(pv); n != "" && n != node {
				return false, "its volume is on " + n
			}
			continue
		}
		switch ptr.Deref(pvc.Spec.StorageClassName, "") {
		case classLocal:
			if n := pvc.Annotations[annSelectedNode]; n != "" && n != node {
				return false, "claim " + name + " is being provisioned on " + n
			}
		case classStatic:
			if !c.storage.availableStaticVolumeOn(node) {
				return false, "no Available static volume on the node"
			}
		default:
			return false, "claim " + name + " is not bound yet"
		}
	}
	return true, ""
}

// availableStaticVolumeOn reports whether an Available static volume,
// bound to no claim, is on node.
func (s *storage) availableStaticVolumeOn(node string) bool {
	for _, pv := range s.volumes {
		if pv.Spec.StorageClassName == classStatic && pv.Spec.ClaimRef == nil &&
			pv.Status.Phase == v1.VolumeAvailable && pv.DeletionTimestamp == nil && volumeNode(pv) == node {
			return true
		}
	}
	return false
}

// claimInUse reports whether a bound pod other than p uses claim.
func (c *cluster) claimInUse(claim string, p *v1.Pod) bool {
	for _, pods := range c.bound {
		for _, q := range pods {
			if q.UID != p.UID && slices.Contains(claimsOfPod(q), claim) {
				return true
			}
		}
	}
	return false
}

// checkVolumes lists what is broken of claims and volumes: two claims
// bound to one volume, a volume bound to a claim that names another, two
// pods bound with one ReadWriteOncePod claim; and, once settled, a claim
// still waiting to be provisioned on the node it was selected for.
func (r *Run) checkVolumes(c *cluster, settled bool) []string {
	var out []string
	byVolume := map[string]string{}
	for _, name := range sortedKeys(c.storage.claims) {
		pvc := c.storage.claims[name]
		if pvc.Spec.VolumeName == "" || pvc.Status.Phase != v1.ClaimBound {
			continue
		}
		if other, ok := byVolume[pvc.Spec.VolumeName]; ok {
			out = append(out, fmt.Sprintf("volume %s is bound to claims %s and %s", pvc.Spec.VolumeName, other, name))
		}
		byVolume[pvc.Spec.VolumeName] = name
		if pv, ok := c.storage.volumes[pvc.Spec.VolumeName]; ok && pv.Spec.ClaimRef != nil &&
			(pv.Spec.ClaimRef.Name != name || pv.Spec.ClaimRef.UID != pvc.UID) {
			out = append(out, fmt.Sprintf("claim %s is bound to volume %s, which is bound to claim %s",
				name, pv.Name, pv.Spec.ClaimRef.Name))
		}
	}
	users := map[string][]string{}
	for _, node := range sortedKeys(c.bound) {
		for _, p := range c.bound[node] {
			for _, claim := range claimsOfPod(p) {
				users[claim] = append(users[claim], p.Name)
			}
		}
	}
	for _, name := range sortedKeys(users) {
		if pvc, ok := c.storage.claims[name]; ok && slices.Contains(pvc.Spec.AccessModes, v1.ReadWriteOncePod) &&
			len(users[name]) > 1 {
			out = append(out, fmt.Sprintf("pods %v are bound with claim %s, which is ReadWriteOncePod", users[name], name))
		}
	}
	if !settled {
		return out
	}
	for _, name := range sortedKeys(c.storage.claims) {
		pvc := c.storage.claims[name]
		node := pvc.Annotations[annSelectedNode]
		if node == "" || pvc.Status.Phase == v1.ClaimBound || pvc.DeletionTimestamp != nil {
			continue
		}
		out = append(out, fmt.Sprintf("claim %s stays annotated for node %s and unbound once settled", name, node))
	}
	return out
}
