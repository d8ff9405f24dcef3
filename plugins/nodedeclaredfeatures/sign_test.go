// Tests for NodeDeclaredFeatures' SignPod.
package nodedeclaredfeatures

import (
	"errors"
	"testing"

	ndf "k8s.io/component-helpers/nodedeclaredfeatures"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// featuresFragment is the features fragment for the set whose string form
// is bits: one per feature of the library's registry, in the order of their
// names (DRANodeAllocatableResources, DRAOptionalNodeOperations,
// ExtendWebSocketsToKubelet, InPlacePodLevelResourcesVerticalScaling,
// InPlacePodVerticalScalingInitContainers,
// InPlacePodVerticalScalingMemoryBackedVolumes,
// RestartAllContainersOnContainerExits, UserNamespacesHostNetworkSupport,
// VolumeBindMountOptions).
func featuresFragment(bits string) []framework.SignFragment {
	return []framework.SignFragment{{Key: "v1.Pod.Spec.RequiredFeatures()", Value: bits}}
}

func TestSignPod(t *testing.T) {
	no := false
	plugintesting.RunSignCases(t, newPlugin(t), []plugintesting.SignCase{
		{
			Name: "no feature required",
			Pod:  plainPod(),
			Want: featuresFragment("000000000"),
		},
		{
			Name: "host network without user namespaces: no feature required",
			Pod:  hostNetworkPod(nil),
			Want: featuresFragment("000000000"),
		},
		{
			Name: featureUserNSHostNetwork,
			Pod:  hostNetworkPod(&no),
			Want: featuresFragment("000000010"),
		},
		{
			Name: featureRestartAll,
			Pod:  withRestartAll(plainPod()),
			Want: featuresFragment("000000100"),
		},
		{
			Name: "both",
			Pod:  withRestartAll(userNSPod()),
			Want: featuresFragment("000000110"),
		},
	})
}

func TestSignPodError(t *testing.T) {
	// Without a version the library cannot tell which features still count.
	pl := &NodeDeclaredFeatures{features: ndf.DefaultFramework}
	plugintesting.RunSignCases(t, pl, []plugintesting.SignCase{
		{
			Name:       "no scheduler version",
			Pod:        plainPod(),
			WantStatus: framework.AsStatus(errors.New("target version cannot be nil")),
		},
	})
}

func TestSignPodPairs(t *testing.T) {
	plugintesting.RunSignPairs(t, newPlugin(t), []plugintesting.SignPair{
		{
			Name: "both require the same feature, for other reasons of the spec",
			A:    withRestartAll(plainPod()),
			B:    withRestartAll(hostNetworkPod(nil)),
			Same: true,
		},
		{
			Name: "a feature and none",
			A:    userNSPod(),
			B:    hostNetworkPod(nil),
		},
	})
}
