// This file builds a framework around one plugin under test, the shape most
// plugin packages' tests share.

package plugintesting

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/defaultbinder"
	"github.com/minisched/minisched/plugins/prioritysort"
)

// NewPluginFramework builds the runtime of one profile (NewFramework) that
// runs the plugin under test, registered as name with factory, at the
// extension points points enables it at (multiPoint included), between
// PrioritySort and DefaultBinder: a profile needs exactly one QueueSort and
// at least one Bind plugin, so points' QueueSort and Bind are set to those
// two and the rest of points is kept. args, unless nil, are the plugin's
// PluginConfig. It returns the framework and the instance of the plugin the
// framework built, so tests reach the plugin's own state; an error if
// NewFramework fails or the factory built something that is not a P.
func NewPluginFramework[P framework.Plugin](ctx context.Context, name string, factory framework.PluginFactory,
	points *configv1.Plugins, args *runtime.RawExtension, opts ...framework.Option) (*framework.Framework, P, error) {
	var pl P
	var built framework.Plugin
	registry := framework.Registry{
		prioritysort.Name:  prioritysort.New,
		defaultbinder.Name: defaultbinder.New,
		name: func(ctx context.Context, raw *runtime.RawExtension, h framework.Handle) (framework.Plugin, error) {
			p, err := factory(ctx, raw, h)
			built = p
			return p, err
		},
	}
	profilePoints := &configv1.Plugins{}
	if points != nil {
		profilePoints = points.DeepCopy()
	}
	profilePoints.QueueSort = Enable(prioritysort.Name)
	profilePoints.Bind = Enable(defaultbinder.Name)
	var pluginConfig []configv1.PluginConfig
	if args != nil {
		pluginConfig = []configv1.PluginConfig{{Name: name, Args: *args}}
	}
	fw, err := NewFramework(ctx, registry, profilePoints, pluginConfig, opts...)
	if err != nil {
		return nil, pl, err
	}
	if built == nil {
		return nil, pl, fmt.Errorf("plugin %q was not built: no extension point enables it", name)
	}
	pl, ok := built.(P)
	if !ok {
		return nil, pl, fmt.Errorf("plugin %q is a %T, want a %T", name, built, pl)
	}
	return fw, pl, nil
}
