// Tests for NodeUnschedulable's SignPod: the cases of the plugins that sign
// tolerations (plugintesting.TolerationsSignCases).
package nodeunschedulable

import (
	"testing"

	"github.com/minisched/minisched/plugins/plugintesting"
)

func TestSignPod(t *testing.T) {
	plugintesting.RunSignCases(t, &NodeUnschedulable{}, plugintesting.TolerationsSignCases())
}

func TestSignPodPairs(t *testing.T) {
	plugintesting.RunSignPairs(t, &NodeUnschedulable{}, plugintesting.TolerationsSignPairs())
}
