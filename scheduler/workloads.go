// Pod groups need the apiserver's workload API. With the GenericWorkload
// gate on, New asks the apiserver's discovery whether it serves PodGroups:
// kube-scheduler does not ask, and against an apiserver that does not serve
// them its PodGroup informer never syncs and it schedules nothing, saying
// nothing. minisched says which kube-apiserver flags are missing, and
// schedules the pods that are in no group; the members of a group wait
// until a scheduler that sees PodGroups runs.

package scheduler

import (
	"context"
	"fmt"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/features"
)

// WorkloadAPIServerFlags are the kube-apiserver flags that serve PodGroups:
// GenericWorkload stores them (and keeps a pod's spec.schedulingGroup), and
// scheduling.k8s.io/v1beta1, a beta API version, is off unless asked for.
// Discovery cannot tell which of the two is missing: without either, the
// version is not served at all.
const WorkloadAPIServerFlags = "--feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1beta1=true"

// servesPodGroups reports whether the apiserver serves PodGroups in
// scheduling.k8s.io/v1beta1, after waiting for it to answer as Run does.
func servesPodGroups(ctx context.Context, client kubernetes.Interface, host string) (bool, error) {
	if err := waitForAPIServer(ctx, client, host, APIServerTimeout); err != nil {
		return false, fmt.Errorf("asking whether the apiserver serves PodGroups (GenericWorkload): %w", err)
	}
	gv := schedulingv1beta1.SchemeGroupVersion.String()
	resources, err := client.Discovery().ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("asking the apiserver at %s for %s: %w", host, gv, err)
	}
	for _, r := range resources.APIResources {
		if r.Name == "podgroups" {
			return true, nil
		}
	}
	return false, nil
}

// reportMissingWorkloadAPI says, at error level, that pod groups cannot be
// scheduled against this apiserver, and which flags it needs.
func reportMissingWorkloadAPI(logger klog.Logger, host string) {
	logger.Error(nil, "The apiserver does not serve PodGroups (scheduling.k8s.io/v1beta1): pods in a pod group "+
		"wait, pods in none are scheduled; start kube-apiserver with "+WorkloadAPIServerFlags,
		"apiserver", host, "featureGate", "GenericWorkload")
}

// podGroupInformer returns the informer of PodGroups, requested from
// factory, when the GenericWorkload gate is on and the apiserver serves
// them; nil otherwise (saying so when the apiserver is the reason).
func podGroupInformer(ctx context.Context, client kubernetes.Interface, host string,
	factory informers.SharedInformerFactory, gates features.Gates) (toolscache.SharedIndexInformer, error) {
	if !gates.GenericWorkload {
		return nil, nil
	}
	served, err := servesPodGroups(ctx, client, host)
	if err != nil {
		return nil, err
	}
	if !served {
		reportMissingWorkloadAPI(klog.FromContext(ctx), host)
		return nil, nil
	}
	return factory.Scheduling().V1beta1().PodGroups().Informer(), nil
}
