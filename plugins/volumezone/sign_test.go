// Tests for VolumeZone's SignPod: the volume plugins' shared cases
// (plugintesting.VolumesSignCases).
package volumezone

import (
	"testing"

	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestSignPod(t *testing.T) {
	plugintesting.RunSignCases(t, &VolumeZone{}, plugintesting.VolumesSignCases())
}

func TestSignPodPairs(t *testing.T) {
	plugintesting.RunSignPairs(t, &VolumeZone{}, plugintesting.VolumesSignPairs())
}
