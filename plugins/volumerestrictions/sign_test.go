// Tests for VolumeRestrictions's SignPod: the volume plugins' shared cases
// (plugintesting.VolumesSignCases).
package volumerestrictions

import (
	"testing"

	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestSignPod(t *testing.T) {
	plugintesting.RunSignCases(t, &VolumeRestrictions{}, plugintesting.VolumesSignCases())
}

func TestSignPodPairs(t *testing.T) {
	plugintesting.RunSignPairs(t, &VolumeRestrictions{}, plugintesting.VolumesSignPairs())
}
