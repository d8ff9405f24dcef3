// This file defines the DynamicSchedulerPolicy, crane-scheduler's policy
// file, and loads it: the same YAML that crane-scheduler and its annotator
// read (deploy/manifests/dynamic/policy.yaml there) loads here unchanged.

package dynamic

import (
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsyaml "sigs.k8s.io/yaml"
)

// The policy file's apiVersion and kind, as crane-scheduler registers them.
const (
	PolicyAPIVersion = "scheduler.policy.crane.io/v1alpha1"
	PolicyKind       = "DynamicSchedulerPolicy"
)

// DynamicSchedulerPolicy says which load metrics the annotator copies onto
// nodes and how often, which of them keep pods off a node, and how they rank
// nodes.
type DynamicSchedulerPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// Spec is the policy itself.
	Spec PolicySpec `json:"spec"`
}

// PolicySpec is the body of a DynamicSchedulerPolicy. The JSON names are
// crane-scheduler's, including its spelling "maxLimitPecent".
type PolicySpec struct {
	// SyncPeriod lists the metrics the annotator writes onto nodes and how
	// often. A metric's annotation counts as fresh for its period plus
	// ExtraActivePeriod; a metric with no syncPolicy entry is never read.
	SyncPeriod []SyncPolicy `json:"syncPolicy"`
	// Predicate lists the limits Filter enforces.
	Predicate []PredicatePolicy `json:"predicate"`
	// Priority lists the metrics Score weighs.
	Priority []PriorityPolicy `json:"priority"`
	// HotValue turns recent bindings into the node_hot_value annotation.
	HotValue []HotValuePolicy `json:"hotValue"`
}

// SyncPolicy is one metric and the period at which the annotator refreshes
// it on every node.
type SyncPolicy struct {
	// Name is the Prometheus metric and the node annotation key.
	Name string `json:"name"`
	// Period is how often the annotator queries and writes it.
	Period metav1.Duration `json:"period"`
}

// PredicatePolicy is one Filter limit.
type PredicatePolicy struct {
	// Name is the metric.
	Name string `json:"name"`
	// MaxLimitPecent is the highest usage (a fraction, 0.65 for 65%) a node
	// may have to accept pods; 0 switches the limit off. The spelling is
	// crane-scheduler's.
	MaxLimitPecent float64 `json:"maxLimitPecent"`
}

// PriorityPolicy is one metric's weight in Score.
type PriorityPolicy struct {
	// Name is the metric.
	Name string `json:"name"`
	// Weight is its share of the score.
	Weight float64 `json:"weight"`
}

// HotValuePolicy adds ⌊bindings to the node within TimeRange / Count⌋ to the
// node's hot value.
type HotValuePolicy struct {
	// TimeRange is how far back bindings are counted.
	TimeRange metav1.Duration `json:"timeRange"`
	// Count is how many bindings make one point of hot value.
	Count int `json:"count"`
}

// LoadPolicyFile reads and checks a DynamicSchedulerPolicy file; errors
// name the file and, for a bad policy, the field.
func LoadPolicyFile(path string) (*DynamicSchedulerPolicy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the DynamicSchedulerPolicy: %w", err)
	}
	policy, err := ParsePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	return policy, nil
}

// ParsePolicy decodes a DynamicSchedulerPolicy from YAML or JSON strictly,
// as crane-scheduler's strict codec does: an unknown or duplicated field is
// an error, and so are a wrong apiVersion or kind. It then validates it.
func ParsePolicy(data []byte) (*DynamicSchedulerPolicy, error) {
	policy := &DynamicSchedulerPolicy{}
	if err := sigsyaml.UnmarshalStrict(data, policy); err != nil {
		return nil, err
	}
	if err := ValidatePolicy(policy); err != nil {
		return nil, err
	}
	return policy, nil
}

// ValidatePolicy checks what crane-scheduler would trip over: the type,
// metric names, positive periods and time ranges, limits and weights that
// are not negative, and hot-value counts above zero (crane divides by them).
// Errors name the field, e.g. "spec.hotValue[0].count: Invalid value".
func ValidatePolicy(p *DynamicSchedulerPolicy) error {
	var errs field.ErrorList
	if p.APIVersion != PolicyAPIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), p.APIVersion, []string{PolicyAPIVersion}))
	}
	if p.Kind != PolicyKind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), p.Kind, []string{PolicyKind}))
	}
	spec := field.NewPath("spec")
	for i, s := range p.Spec.SyncPeriod {
		path := spec.Child("syncPolicy").Index(i)
		errs = append(errs, requireName(path, s.Name)...)
		if s.Period.Duration <= 0 {
			errs = append(errs, field.Invalid(path.Child("period"), s.Period.Duration.String(), "must be positive"))
		}
	}
	for i, pr := range p.Spec.Predicate {
		path := spec.Child("predicate").Index(i)
		errs = append(errs, requireName(path, pr.Name)...)
		if pr.MaxLimitPecent < 0 {
			errs = append(errs, field.Invalid(path.Child("maxLimitPecent"), pr.MaxLimitPecent,
				"must not be negative (0 switches the limit off)"))
		}
	}
	for i, pr := range p.Spec.Priority {
		path := spec.Child("priority").Index(i)
		errs = append(errs, requireName(path, pr.Name)...)
		if pr.Weight < 0 {
			errs = append(errs, field.Invalid(path.Child("weight"), pr.Weight, "must not be negative"))
		}
	}
	for i, h := range p.Spec.HotValue {
		path := spec.Child("hotValue").Index(i)
		if h.TimeRange.Duration <= 0 {
			errs = append(errs, field.Invalid(path.Child("timeRange"), h.TimeRange.Duration.String(), "must be positive"))
		}
		if h.Count <= 0 {
			errs = append(errs, field.Invalid(path.Child("count"), h.Count, "must be positive"))
		}
	}
	return errs.ToAggregate()
}

func requireName(path *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path.Child("name"), "the metric's name")}
	}
	return nil
}

// activeDuration is how long a metric's annotation stays fresh: its sync
// period plus ExtraActivePeriod. ok is false for a metric with no
// syncPolicy entry, which crane-scheduler then ignores.
func (s *PolicySpec) activeDuration(metric string) (time.Duration, bool) {
	for _, p := range s.SyncPeriod {
		if p.Name == metric && p.Period.Duration != 0 {
			return p.Period.Duration + ExtraActivePeriod, true
		}
	}
	return 0, false
}
