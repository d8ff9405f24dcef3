// Creating and changing a story's objects: one code path, with one set of
// rules, for the Go stories and the scenario files alike (nodes, pods,
// priority classes, PodDisruptionBudgets, and any other kind the apiserver
// serves).

package scenario

import (
	"context"
	"fmt"
	"path"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/builders"
)

// CreateNodes creates nodes, keeping their status (allocatable, conditions).
func (e *Env) CreateNodes(ctx context.Context, nodes ...*v1.Node) error {
	for _, n := range nodes {
		created, err := e.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating node %s: %w", n.Name, err)
		}
		created.Status = n.Status
		if _, err := e.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("setting status of node %s: %w", n.Name, err)
		}
	}
	return nil
}

// CreatePods creates pods, giving each what its builder or manifest left
// out: the scenario's namespace and scheduler name, terminationGracePeriodSeconds
// 0 (no kubelet runs to stop it), a container if it has none (the apiserver
// requires one), and containers named c0, c1… (init0…) running
// builders.PauseImage. What a pod says itself is kept.
func (e *Env) CreatePods(ctx context.Context, pods ...*v1.Pod) error {
	for _, p := range pods {
		e.defaultPod(p)
		if _, err := e.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
}

// defaultPod gives a pod what CreatePods says it gives.
func (e *Env) defaultPod(p *v1.Pod) {
	if p.Namespace == "" {
		p.Namespace = e.Namespace
	}
	if p.Spec.SchedulerName == "" {
		p.Spec.SchedulerName = e.SchedulerName
	}
	if p.Spec.TerminationGracePeriodSeconds == nil {
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	}
	if len(p.Spec.Containers) == 0 {
		p.Spec.Containers = []v1.Container{{}}
	}
	for i := range p.Spec.InitContainers {
		defaultContainer(&p.Spec.InitContainers[i], fmt.Sprintf("init%d", i))
	}
	for i := range p.Spec.Containers {
		defaultContainer(&p.Spec.Containers[i], fmt.Sprintf("c%d", i))
	}
}

// defaultContainer names a container and gives it the pause image, unless
// it has them.
func defaultContainer(c *v1.Container, name string) {
	if c.Name == "" {
		c.Name = name
	}
	if c.Image == "" {
		c.Image = builders.PauseImage
	}
}

// DeletePod deletes a pod at once (no kubelet runs to wait for); a pod
// that is gone already is no error.
func (e *Env) DeletePod(ctx context.Context, name string) error {
	err := e.Client.CoreV1().Pods(e.Namespace).Delete(ctx, name,
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting pod %s: %w", name, err)
	}
	return nil
}

// SetUnschedulable cordons or uncordons a node.
func (e *Env) SetUnschedulable(ctx context.Context, node string, unschedulable bool) error {
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, unschedulable)
	_, err := e.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// LabelNode sets one label on a node.
func (e *Env) LabelNode(ctx context.Context, node, key, value string) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	if _, err := e.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("labelling node %s: %w", node, err)
	}
	return nil
}

// CreatePriorityClass creates a priority class. Priority classes outlive
// scenarios (the runner cleans nodes and pods only), so one that exists
// already is fine if it is the same (value, preemptionPolicy,
// globalDefault), and an error naming both if not.
func (e *Env) CreatePriorityClass(ctx context.Context, pc *schedulingv1.PriorityClass) error {
	_, err := e.Client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating priority class %s: %w", pc.Name, err)
	}
	old, err := e.Client.SchedulingV1().PriorityClasses().Get(ctx, pc.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading priority class %s: %w", pc.Name, err)
	}
	policy := func(pc *schedulingv1.PriorityClass) v1.PreemptionPolicy {
		return ptr.Deref(pc.PreemptionPolicy, v1.PreemptLowerPriority)
	}
	if old.Value != pc.Value || policy(old) != policy(pc) || old.GlobalDefault != pc.GlobalDefault {
		return fmt.Errorf("priority class %s exists already (an earlier scenario made it) with value %d, "+
			"preemptionPolicy %s, globalDefault %t; this one has %d, %s, %t: give it another name", pc.Name,
			old.Value, policy(old), old.GlobalDefault, pc.Value, policy(pc), pc.GlobalDefault)
	}
	return nil
}

// CreatePDB creates a PodDisruptionBudget, in the scenario's namespace
// unless it names one, and, if it carries a status, writes that status as
// the disruption controller would (none runs unless the story's Controllers
// name it; then leave the status out, or the two write over each other),
// with observedGeneration the budget's generation unless it says otherwise.
func (e *Env) CreatePDB(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error {
	if pdb.Namespace == "" {
		pdb.Namespace = e.Namespace
	}
	status := pdb.Status
	created, err := e.Client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).Create(ctx, pdb, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating PodDisruptionBudget %s/%s: %w", pdb.Namespace, pdb.Name, err)
	}
	if isZeroStatus(status) {
		return nil
	}
	if status.ObservedGeneration == 0 {
		status.ObservedGeneration = created.Generation
	}
	created.Status = status
	if _, err := e.Client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, created,
		metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the status of PodDisruptionBudget %s/%s: %w", pdb.Namespace, pdb.Name, err)
	}
	return nil
}

// isZeroStatus says whether a budget's status was left out.
func isZeroStatus(s policyv1.PodDisruptionBudgetStatus) bool {
	return s.ObservedGeneration == 0 && s.DisruptionsAllowed == 0 && s.CurrentHealthy == 0 &&
		s.DesiredHealthy == 0 && s.ExpectedPods == 0 && len(s.DisruptedPods) == 0 && len(s.Conditions) == 0
}

// CreateObjects creates typed objects of any kind client-go knows
// (PersistentVolumeClaims, StorageClasses, CSINodes...), each through
// CreateObject: in the scenario's namespace if the kind is namespaced and
// the object names none.
func (e *Env) CreateObjects(ctx context.Context, objs ...runtime.Object) error {
	for _, obj := range objs {
		gvks, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil {
			return fmt.Errorf("creating a %T: %w", obj, err)
		}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return fmt.Errorf("creating a %T: %w", obj, err)
		}
		u := &unstructured.Unstructured{Object: content}
		u.SetAPIVersion(gvks[0].GroupVersion().String())
		u.SetKind(gvks[0].Kind)
		if err := e.CreateObject(ctx, u); err != nil {
			return err
		}
	}
	return nil
}

// CreateObject creates an object of any kind the apiserver serves, in the
// scenario's namespace if the kind is namespaced and it names none.
func (e *Env) CreateObject(ctx context.Context, u *unstructured.Unstructured) error {
	p, ns, err := e.ObjectPath(ctx, u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), "")
	if err != nil {
		return err
	}
	u.SetNamespace(ns)
	body, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	err = e.Client.Discovery().RESTClient().Post().AbsPath(p).SetHeader("Content-Type", "application/json").
		Body(body).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("creating %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// ObjectPath asks the apiserver's discovery where it serves kind and returns
// the path of the collection (of the object, if name is given) and the
// namespace it is in: namespace, or the scenario's if that is empty; empty
// for a cluster-scoped kind.
func (e *Env) ObjectPath(ctx context.Context, apiVersion, kind, namespace, name string) (string, string, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return "", "", err
	}
	groups, err := restmapper.GetAPIGroupResourcesWithContext(ctx,
		discovery.ToDiscoveryInterfaceWithContext(e.Client.Discovery()))
	if err != nil {
		return "", "", fmt.Errorf("discovering the apiserver's resources: %w", err)
	}
	m, err := restmapper.NewDiscoveryRESTMapperWithContext(groups).RESTMappingWithContext(ctx,
		gv.WithKind(kind).GroupKind(), gv.Version)
	if err != nil {
		return "", "", fmt.Errorf("the apiserver does not serve %s %s: %w", apiVersion, kind, err)
	}
	segs := []string{"/apis", gv.Group, gv.Version}
	if gv.Group == "" {
		segs = []string{"/api", gv.Version}
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if namespace == "" {
			namespace = e.Namespace
		}
		segs = append(segs, "namespaces", namespace)
	} else {
		namespace = ""
	}
	segs = append(segs, m.Resource.Resource)
	if name != "" {
		segs = append(segs, name)
	}
	return path.Join(segs...), namespace, nil
}
