// Command outoftree is a scheduler binary of your own: minisched with one
// more plugin, RequireNodeLabel, compiled in. It has every subcommand of
// minisched; a configuration enables the plugin and gives it its args:
//
//	profiles:
//	- schedulerName: labelled-nodes
//	  plugins:
//	    multiPoint:
//	      enabled:
//	      - name: RequireNodeLabel
//	  pluginConfig:
//	  - name: RequireNodeLabel
//	    args:
//	      label: example.com/pool
//
// Build it with `go build ./examples/outoftree` and run it with
// `outoftree run --kubeconfig FILE --config FILE`.
package main

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/minisched/minisched/app"
	"github.com/minisched/minisched/minisched/framework"
)

func main() {
	app.NewCommand(app.WithPlugin(Name, New)).Main()
}

// Name is the plugin's name in configurations.
const Name = "RequireNodeLabel"

// RequireNodeLabelArgs are the plugin's args, decoded from pluginConfig.
type RequireNodeLabelArgs struct {
	metav1.TypeMeta `json:",inline"`

	// Label is the node label a node must carry (any value) to take pods.
	Label string `json:"label"`
}

// RequireNodeLabel keeps pods off nodes that lack a label.
type RequireNodeLabel struct {
	label string
}

var _ framework.FilterPlugin = &RequireNodeLabel{}

// New decodes the args strictly (an unknown field is an error) and checks
// that label is set.
func New(_ context.Context, raw *runtime.RawExtension, _ framework.Handle) (framework.Plugin, error) {
	args := &RequireNodeLabelArgs{}
	if err := framework.DecodeArgs(raw, args); err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	if args.Label == "" {
		return nil, fmt.Errorf("%s args: label: Required value", Name)
	}
	return &RequireNodeLabel{label: args.Label}, nil
}

// Name returns Name.
func (pl *RequireNodeLabel) Name() string { return Name }

// Filter rejects a node without the label. Preemption cannot add a label,
// so the rejection is UnschedulableAndUnresolvable.
func (pl *RequireNodeLabel) Filter(_ context.Context, _ *framework.CycleState, _ *v1.Pod,
	nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, "node not found")
	}
	if _, ok := node.Labels[pl.label]; !ok {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable,
			fmt.Sprintf("node(s) didn't have label %s", pl.label))
	}
	return nil
}
