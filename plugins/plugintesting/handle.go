// This file gives a framework what plugin factories read from their
// handle beyond the snapshot.

package plugintesting

import (
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/dynamicresources/dramanager"
)

// InformerOptions returns an informer factory over an empty fake
// clientset and the shared DRA state over the same factory, as framework
// options: what every in-tree plugin's factory may ask its handle for
// (DynamicResources refuses to be built without the DRA state). The DRA
// state's slice tracker is stopped when the test ends.
func InformerOptions(t testing.TB) []framework.Option {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	draManager := dramanager.New(ktesting.NewLogger(t, ktesting.NewConfig()), factory, client)
	t.Cleanup(draManager.Stop)
	return []framework.Option{framework.WithInformerFactory(factory), framework.WithSharedDRAManager(draManager)}
}
