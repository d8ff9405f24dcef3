// Tests for CSILimits's SignPod: the volume plugins' shared cases
// (plugintesting.VolumesSignCases).
package nodevolumelimits

import (
	"testing"

	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestSignPod(t *testing.T) {
	plugintesting.RunSignCases(t, &CSILimits{}, plugintesting.VolumesSignCases())
}

func TestSignPodPairs(t *testing.T) {
	plugintesting.RunSignPairs(t, &CSILimits{}, plugintesting.VolumesSignPairs())
}
