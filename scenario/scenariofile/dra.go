// Devices in a scenario file: the draDriver field (the example DRA
// driver's options), the DRA kinds a create step checks strictly, and the
// steps that wait for slices and allocations.

package scenariofile

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"

	"github.com/minisched/minisched/examples/dradriver"
	"github.com/minisched/minisched/scenario"
)

// draKinds are the resource.k8s.io kinds a create step may leave apiVersion
// out of (defaultAPIVersions names them too); each is decoded strictly into its API type before it is created,
// so that a misspelt field is an error at its line, not a field the
// apiserver drops.
var draKinds = map[string]func() any{
	"DeviceClass":           func() any { return &resourceapi.DeviceClass{} },
	"ResourceClaim":         func() any { return &resourceapi.ResourceClaim{} },
	"ResourceClaimTemplate": func() any { return &resourceapi.ResourceClaimTemplate{} },
	"ResourceSlice":         func() any { return &resourceapi.ResourceSlice{} },
	"DeviceTaintRule":       func() any { return &resourceapi.DeviceTaintRule{} },
}

// checkDRAObject decodes the JSON of a DRA object strictly into its type;
// other kinds pass.
func (p *parser) checkDRAObject(gvk schema.GroupVersionKind, js []byte, line int, where string) error {
	newObj, ok := draKinds[gvk.Kind]
	if !ok || gvk.GroupVersion() != resourceapi.SchemeGroupVersion {
		return nil
	}
	return p.strict(js, newObj(), line, where)
}

// draDriver reads the example DRA driver's options, as dradriver.Options
// spells them in JSON: {driverName, devices: {gpus: 2, ...}, perNode:
// {node-1: {...}}}.
func (p *parser) draDriver(n *yaml.Node) (*dradriver.Options, error) {
	if _, err := p.mapping(n, "draDriver"); err != nil {
		return nil, err
	}
	var raw any
	if err := n.Decode(&raw); err != nil {
		return nil, p.errorf(n.Line, "draDriver: %v", err)
	}
	js, err := json.Marshal(raw)
	if err != nil {
		return nil, p.errorf(n.Line, "draDriver: %v", err)
	}
	opts := &dradriver.Options{}
	strictErrs, err := sigsjson.UnmarshalStrict(js, opts)
	if err != nil {
		return nil, p.errorf(n.Line, "draDriver: %v", err)
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return nil, p.errorf(n.Line, "draDriver: %s", strings.Join(msgs, "; "))
	}
	return opts, nil
}

// waitSlices reads {nodes, driver}: wait until the driver (the file's
// draDriver's, unless named) has published slices for each of the nodes.
func (p *parser) waitSlices(arg *yaml.Node, where string) (stepFunc, error) {
	f, err := p.mapping(arg, where, "nodes", "driver")
	if err != nil {
		return nil, err
	}
	if f["nodes"] == nil {
		return nil, p.errorf(arg.Line, "%s: nodes are missing", where)
	}
	nodes, err := p.strList(f["nodes"], where+".nodes")
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, p.errorf(f["nodes"].Line, "%s.nodes: the list is empty", where)
	}
	for i, n := range nodes {
		if !p.nodes[n] {
			return nil, p.errorf(resolve(f["nodes"]).Content[i].Line, "%s.nodes[%d]: no earlier step creates node %q",
				where, i, n)
		}
	}
	driver := p.driverName
	if n := f["driver"]; n != nil {
		if driver, err = p.str(n, where+".driver"); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context, env *scenario.Env) error {
		got, err := env.WaitForSlices(ctx, driver, nodes...)
		if err != nil {
			return err
		}
		env.Logf("driver %s publishes %s", driver, got)
		return nil
	}, nil
}

// waitAllocated reads {claim} or {pod, podClaim} (the claim made from the
// pod's template of that entry), and timeout: wait until the claim is
// allocated, and tell it (scenario.DescribeClaim).
func (p *parser) waitAllocated(arg *yaml.Node, where string) (stepFunc, error) {
	f, err := p.mapping(arg, where, "claim", "pod", "podClaim", "timeout")
	if err != nil {
		return nil, err
	}
	if (f["claim"] == nil) == (f["pod"] == nil) {
		return nil, p.errorf(arg.Line, "%s: give claim, or pod and podClaim", where)
	}
	if f["claim"] != nil {
		if f["podClaim"] != nil {
			return nil, p.errorf(f["podClaim"].Line, "%s: podClaim goes with pod, not claim", where)
		}
		claim, err := p.str(f["claim"], where+".claim")
		if err != nil {
			return nil, err
		}
		timeout, err := p.timeout(f["timeout"], where)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, env *scenario.Env) error {
			return waitAllocated(ctx, env, claim, timeout)
		}, nil
	}
	podF, pod, timeout, err := p.podStep(arg, where, "podClaim", "claim")
	if err != nil {
		return nil, err
	}
	if podF["podClaim"] == nil {
		return nil, p.errorf(arg.Line, "%s: podClaim is missing (the pod's entry in spec.resourceClaims)", where)
	}
	entry, err := p.str(podF["podClaim"], where+".podClaim")
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, env *scenario.Env) error {
		claim, err := env.WaitForPodClaim(ctx, pod, entry, timeout)
		if err != nil {
			return err
		}
		return waitAllocated(ctx, env, claim, timeout)
	}, nil
}

// waitAllocated waits for the claim's allocation and tells it.
func waitAllocated(ctx context.Context, env *scenario.Env, claim string, timeout time.Duration) error {
	c, err := env.WaitForClaimAllocated(ctx, claim, timeout)
	if err != nil {
		return err
	}
	env.Logf("%s", scenario.DescribeClaim(c))
	return nil
}
