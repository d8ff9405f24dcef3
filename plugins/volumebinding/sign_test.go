// Tests for VolumeBinding's SignPod: the volume plugins' shared cases
// (plugintesting.VolumesSignCases).
package volumebinding

import (
	"testing"

	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestSignPod(t *testing.T) {
	plugintesting.RunSignCases(t, &VolumeBinding{}, plugintesting.VolumesSignCases())
}

func TestSignPodPairs(t *testing.T) {
	plugintesting.RunSignPairs(t, &VolumeBinding{}, plugintesting.VolumesSignPairs())
}
