// Package features holds the feature gates minisched reads, spelt, staged
// and defaulted as kube-scheduler v1.37.1's (k8s.io/kubernetes'
// pkg/features), and parses kube-scheduler's --feature-gates syntax:
// "GenericWorkload=true,TopologyAwareWorkloadScheduling=true".
//
// Two gates can be set either way, because minisched implements both
// sides: GenericWorkload (Beta, off by default), which makes a pod group one
// queue entity with a scheduling cycle of its own (chapter 19), and
// TopologyAwareWorkloadScheduling (Alpha, off; it needs GenericWorkload),
// which tries a group in each topology domain and keeps the best. Every
// other gate kube-scheduler's code reads is held at its v1.37.1 default:
// minisched behaves as kube-scheduler does with that default, so it accepts
// the default and refuses the other value, naming the gate. A gate
// kube-scheduler's code does not read is unrecognized.
//
// The gates are parsed by component-base's featuregate, the library
// kube-scheduler parses them with: its syntax, its AllAlpha and AllBeta,
// its dependency check and its messages.
package features

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
)

// The gates minisched can set either way.
const (
	// GenericWorkload makes the members of a PodGroup
	// (pod.spec.schedulingGroup.podGroupName, scheduling.k8s.io/v1beta1)
	// one queue entity, scheduled all or nothing by the pod-group cycle.
	GenericWorkload featuregate.Feature = "GenericWorkload"
	// TopologyAwareWorkloadScheduling places a pod group within one
	// domain of its PodGroup's topology key (PlacementGenerate,
	// PlacementScore). It needs GenericWorkload.
	TopologyAwareWorkloadScheduling featuregate.Feature = "TopologyAwareWorkloadScheduling"
)

// Version is the Kubernetes version whose gates these are: their stages and
// defaults are those of kube-scheduler at this version.
var Version = version.MustParse("1.37")

// settable are the specs of the gates minisched can set either way.
var settable = map[featuregate.Feature]featuregate.VersionedSpecs{
	GenericWorkload:                 {{Version: Version, Default: false, PreRelease: featuregate.Beta}},
	TopologyAwareWorkloadScheduling: {{Version: Version, Default: false, PreRelease: featuregate.Alpha}},
}

// dependencies are kube-scheduler's between the settable gates.
var dependencies = map[featuregate.Feature][]featuregate.Feature{
	TopologyAwareWorkloadScheduling: {GenericWorkload},
}

// held lists the other gates kube-scheduler v1.37.1's scheduler code reads,
// each with its stage and its default there, which minisched holds: it does
// what kube-scheduler does with the default, and nothing else.
var held = []struct {
	name featuregate.Feature
	spec featuregate.FeatureSpec
}{
	// On by default, and what minisched does.
	{"DRAAdminAccess", ga(true)},
	{"DRAConsumableCapacity", beta(true)},
	{"DRADeviceBindingConditions", beta(true)},
	{"DRADeviceTaintRules", ga(true)},
	{"DRADeviceTaints", ga(true)},
	{"DRAExtendedResource", ga(true)},
	{"DRAPartitionableDevices", beta(true)},
	{"DRAPrioritizedList", ga(true)},
	{"DRAResourceClaimDeviceStatus", ga(true)},
	{"DRASchedulerFilterTimeout", beta(true)},
	{"DynamicResourceAllocation", ga(true)},
	{"InPlacePodLevelResourcesVerticalScaling", beta(true)},
	{"InPlacePodVerticalScaling", ga(true)},
	{"MatchLabelKeysInPodTopologySpread", beta(true)},
	{"NodeDeclaredFeatures", ga(true)},
	{"NodeInclusionPolicyInPodTopologySpread", ga(true)},
	{"NominatedNodeNameForExpectation", beta(true)},
	{"OpportunisticBatching", beta(true)},
	{"PodLevelResources", beta(true)},
	{"SchedulerAsyncPreemption", beta(true)},
	{"SchedulerPopFromBackoffQ", beta(true)},
	{"StorageCapacityScoring", beta(true)},
	{"VolumeAttributesClass", ga(true)},
	{"VolumeLimitScaling", beta(true)},
	// Off by default, and minisched does not implement them.
	{"CompositePodGroup", alpha()},
	{"DRADerivedAttributes", alpha()},
	{"DRADeviceCompatibilityGroups", alpha()},
	{"DRAFractionalCapacityRange", beta(false)},
	{"DRAListTypeAttributes", alpha()},
	{"DRANodeAllocatableResources", alpha()},
	{"DRAOptionalNodeOperations", alpha()},
	{"DRAWorkloadResourceClaims", beta(false)},
	{"InPlacePodVerticalScalingSchedulerPreemption", alpha()},
	{"InterPodAffinityHostnameFastPath", alpha()},
	{"PodGroupPreemptionPolicy", alpha()},
	{"SchedulerAsyncAPICalls", beta(false)},
	{"SchedulerPreQueueingHints", alpha()},
	{"TaintTolerationComparisonOperators", alpha()},
}

// alpha, beta and ga are the specs of held gates at each stage.
func alpha() featuregate.FeatureSpec { return featuregate.FeatureSpec{PreRelease: featuregate.Alpha} }
func beta(on bool) featuregate.FeatureSpec {
	return featuregate.FeatureSpec{Default: on, PreRelease: featuregate.Beta}
}
func ga(on bool) featuregate.FeatureSpec {
	return featuregate.FeatureSpec{Default: on, PreRelease: featuregate.GA}
}

// Gates are the gates one scheduler runs with. The zero value is
// kube-scheduler v1.37.1's defaults.
type Gates struct {
	// GenericWorkload: see the constant.
	GenericWorkload bool
	// TopologyAwareWorkloadScheduling: see the constant.
	TopologyAwareWorkloadScheduling bool
}

// Parse reads kube-scheduler's --feature-gates value ("A=true,B=false",
// AllAlpha and AllBeta included) over the v1.37.1 defaults. It refuses an
// unknown gate, a value minisched cannot honour and a gate turned on
// without one it depends on, naming the gate.
func Parse(value string) (Gates, error) {
	fg, err := newGate()
	if err != nil {
		return Gates{}, err
	}
	// featuregate logs a warning for a GA gate set explicitly; minisched's
	// caller says what it runs with, so the library's logger is silenced.
	err = fg.SetWithLogger(klog.Background().V(10), value)
	if err == nil {
		err = checkHeld(fg)
	}
	if err != nil {
		return Gates{}, fmt.Errorf("--feature-gates %q: %w (minisched sets %s either way and holds every "+
			"other gate kube-scheduler v1.37.1 reads at its default)", value, err, settableNames())
	}
	return Gates{
		GenericWorkload:                 fg.Enabled(GenericWorkload),
		TopologyAwareWorkloadScheduling: fg.Enabled(TopologyAwareWorkloadScheduling),
	}, nil
}

// String is the gates in --feature-gates syntax, the settable ones only, in
// name order: what kube-scheduler is given to run with the same gates.
func (g Gates) String() string {
	return fmt.Sprintf("%s=%t,%s=%t", GenericWorkload, g.GenericWorkload,
		TopologyAwareWorkloadScheduling, g.TopologyAwareWorkloadScheduling)
}

// checkHeld refuses a held gate moved off its default. Named, the library
// refuses it itself (it is locked); AllAlpha and AllBeta set locked gates
// too, so they are checked here.
func checkHeld(fg featuregate.FeatureGate) error {
	for _, h := range held {
		if on := fg.Enabled(h.name); on != h.spec.Default {
			return fmt.Errorf("it sets %s to %t, which minisched does not implement", h.name, on)
		}
	}
	return nil
}

// gate is the library's feature gate as Parse uses it.
type gate interface {
	featuregate.MutableVersionedFeatureGate
	SetWithLogger(logger klog.Logger, value string) error
}

// newGate builds a feature gate at Version with every gate minisched knows.
func newGate() (gate, error) {
	fg := featuregate.NewVersionedFeatureGate(Version)
	specs := map[featuregate.Feature]featuregate.VersionedSpecs{}
	for name, s := range settable {
		specs[name] = s
	}
	for _, h := range held {
		spec := h.spec
		spec.Version, spec.LockToDefault = Version, true
		specs[h.name] = featuregate.VersionedSpecs{spec}
	}
	if err := fg.AddVersioned(specs); err != nil {
		return nil, err
	}
	if err := fg.AddDependencies(dependencies); err != nil {
		return nil, err
	}
	return fg, nil
}

// settableNames lists the settable gates in prose, in name order.
func settableNames() string {
	var names []string
	for name := range settable {
		names = append(names, string(name))
	}
	sort.Strings(names)
	return strings.Join(names, " and ")
}
