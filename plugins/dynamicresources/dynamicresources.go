// Package dynamicresources is kube-scheduler's DynamicResources plugin as far
// as minisched has come: the part every pod meets. kube-scheduler v1.37.1
// runs it in the default profile just before DefaultPreemption, so that
// freeing an idle ResourceClaim is tried before evicting pods; for a pod
// without claims it records "no claims" in PreFilter and does nothing else.
//
// That record is why it matters to pods with no claims at all. Its
// PostFilter reads the record back; when an earlier PreFilter (a missing
// PersistentVolumeClaim, say) rejected the pod as unresolvable, this
// plugin's PreFilter never ran, the read fails with "not found", and the
// Error stops the PostFilter chain: preemption is not tried, and ". not found"
// ends the FailedScheduling message. kube-scheduler does exactly that, so
// minisched does too (chapter 16 tells the story).
//
// Allocating devices to claims (ResourceSlices, DeviceClasses, CEL) is not
// here yet: a pod with resource claims is refused with a reason saying so,
// instead of being bound with claims nobody allocated.
package dynamicresources

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "DynamicResources"

// ErrReasonClaimsNotSupported is the reason a pod with resource claims gets.
const ErrReasonClaimsNotSupported = "minisched does not allocate ResourceClaims yet"

// stateKey is where PreFilter leaves its stateData.
const stateKey framework.StateKey = Name

// stateData is what PreFilter found: the pod's claims, by name.
type stateData struct {
	claims []string
}

// Clone shares the data: nothing changes it after PreFilter.
func (s *stateData) Clone() framework.StateData { return s }

// DynamicResources records each pod's claims in PreFilter and reads them
// back in PostFilter.
type DynamicResources struct{}

var (
	_ framework.PreFilterPlugin  = &DynamicResources{}
	_ framework.PostFilterPlugin = &DynamicResources{}
)

// New returns the plugin. Its args, if given, are kube-scheduler's
// DynamicResourcesArgs, validated as kube-scheduler does although neither
// timeout is used yet.
func New(_ context.Context, raw *runtime.RawExtension, _ framework.Handle) (framework.Plugin, error) {
	args := &configv1.DynamicResourcesArgs{}
	if err := framework.DecodeArgs(raw, args); err != nil {
		return nil, fmt.Errorf("decoding DynamicResourcesArgs: %w", err)
	}
	if err := validateArgs(field.NewPath("args"), args).ToAggregate(); err != nil {
		return nil, err
	}
	return &DynamicResources{}, nil
}

// validateArgs checks DynamicResourcesArgs as kube-scheduler v1.37.1 does
// with its default gates: filterTimeout ≥ 0 (0 turns it off),
// bindingTimeout ≥ 1s.
func validateArgs(path *field.Path, args *configv1.DynamicResourcesArgs) field.ErrorList {
	var errs field.ErrorList
	if args.FilterTimeout != nil && args.FilterTimeout.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("filterTimeout"), args.FilterTimeout.Duration.String(),
			"must be zero or positive"))
	}
	if args.BindingTimeout != nil && args.BindingTimeout.Duration < time.Second {
		errs = append(errs, field.Invalid(path.Child("bindingTimeout"), args.BindingTimeout.Duration.String(),
			"must be at least 1s"))
	}
	return errs
}

// Name returns Name.
func (pl *DynamicResources) Name() string { return Name }

// PreFilter records the pod's claims. A pod without claims is done with:
// Skip, so Filter never runs for it. A pod with claims is rejected as
// unresolvable, since nothing here can allocate them.
func (pl *DynamicResources) PreFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	_ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	s := &stateData{}
	for _, c := range pod.Spec.ResourceClaims {
		s.claims = append(s.claims, c.Name)
	}
	state.Write(stateKey, s)
	if len(s.claims) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	klog.FromContext(ctx).V(5).Info("Pod has resource claims", "pod", klog.KObj(pod), "claims", s.claims)
	return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonClaimsNotSupported)
}

// PreFilterExtensions returns nil: claims do not change with the pods on a
// node.
func (pl *DynamicResources) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// PostFilter would free an idle claim of the pod so it can be allocated
// elsewhere; with no claims allocated there is none to free, and the pod is
// left to preemption. If PreFilter never ran (an earlier PreFilter rejected
// the pod as unresolvable), reading its record fails, and that Error, as in
// kube-scheduler, stops the PostFilter chain.
func (pl *DynamicResources) PostFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod,
	_ *framework.NodeToStatus) (*framework.PostFilterResult, *framework.Status) {
	if _, err := state.Read(stateKey); err != nil {
		return nil, framework.AsStatus(err)
	}
	klog.FromContext(ctx).V(5).Info("No claims to deallocate", "pod", klog.KObj(pod))
	return nil, framework.NewStatus(framework.Unschedulable)
}
