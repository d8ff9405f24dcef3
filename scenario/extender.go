// The example extender (examples/extender/server), served for a story that
// asks for one (the Extender part).

package scenario

import (
	"net/http/httptest"

	"k8s.io/client-go/kubernetes"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/examples/extender/server"
)

// ExtenderURL stands, in a scenario's configuration, for the URL of the
// example extender the runner starts for a scenario that lists Extender.
const ExtenderURL = "http://example-extender.invalid"

// startExtender serves the example extender for a scenario and points the
// configuration's ExtenderURL entries at it; stop shuts it down.
func startExtender(client kubernetes.Interface, cfg *configv1.KubeSchedulerConfiguration) (
	*configv1.KubeSchedulerConfiguration, func()) {
	srv := httptest.NewServer(server.New(client, server.ClientNodes{Client: client}))
	cfg = cfg.DeepCopy()
	for i := range cfg.Extenders {
		if cfg.Extenders[i].URLPrefix == ExtenderURL {
			cfg.Extenders[i].URLPrefix = srv.URL
		}
	}
	return cfg, srv.Close
}
