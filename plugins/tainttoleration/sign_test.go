// Tests for TaintToleration's SignPod: the cases of the plugins that sign
// tolerations (plugintesting.TolerationsSignCases).
package tainttoleration

import (
	"testing"

	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestSignPod(t *testing.T) {
	plugintesting.RunSignCases(t, &TaintToleration{}, plugintesting.TolerationsSignCases())
}

func TestSignPodPairs(t *testing.T) {
	plugintesting.RunSignPairs(t, &TaintToleration{}, plugintesting.TolerationsSignPairs())
}
