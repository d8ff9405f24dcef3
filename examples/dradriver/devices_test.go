package dradriver

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// TestPool checks the layout of a node's pool for each option: one line
// per slice, its counter sets or its devices (describeDevice).
func TestPool(t *testing.T) {
	taint := resourceapi.DeviceTaint{Key: "example.com/unhealthy", Value: "true", Effect: resourceapi.DeviceTaintEffectNoSchedule}
	tests := []struct {
		name string
		opts Options
		node string
		want []string
	}{
		{name: "no devices: one empty slice", node: "n1",
			want: []string{"devices:"}},
		{name: "defaults: model, memory, attributes", node: "n1", opts: Options{Devices: NodeDevices{GPUs: 2}},
			want: []string{"devices: gpu-0(example-gpu #0 gpu v1.0.0 16Gi) gpu-1(example-gpu #1 gpu v1.0.0 16Gi)"}},
		{name: "a node PerNode names has its own", node: "n2", opts: Options{Devices: NodeDevices{GPUs: 2},
			PerNode: map[string]NodeDevices{"n2": {GPUs: 1, Model: "big", Memory: resource.MustParse("80Gi")}}},
			want: []string{"devices: gpu-0(big #0 gpu v1.0.0 80Gi)"}},
		{name: "partitions share a counter set with their GPU, in a slice of its own", node: "n1",
			opts: Options{Devices: NodeDevices{GPUs: 2, Partitions: 2}},
			want: []string{
				"counters: gpu-0(memory=16Gi) gpu-1(memory=16Gi)",
				"devices: gpu-0(example-gpu #0 gpu v1.0.0 16Gi uses gpu-0:16Gi) " +
					"gpu-0-part-0(example-gpu #0 partition v1.0.0 8Gi uses gpu-0:8Gi) " +
					"gpu-0-part-1(example-gpu #0 partition v1.0.0 8Gi uses gpu-0:8Gi) " +
					"gpu-1(example-gpu #1 gpu v1.0.0 16Gi uses gpu-1:16Gi) " +
					"gpu-1-part-0(example-gpu #1 partition v1.0.0 8Gi uses gpu-1:8Gi) " +
					"gpu-1-part-1(example-gpu #1 partition v1.0.0 8Gi uses gpu-1:8Gi)",
			}},
		{name: "shared, with a request policy", node: "n1", opts: Options{Devices: NodeDevices{GPUs: 1, Shared: true,
			MemoryPolicy: &resourceapi.CapacityRequestPolicy{Default: ptr.To(resource.MustParse("1Gi"))}}},
			want: []string{"devices: gpu-0(example-gpu #0 gpu v1.0.0 16Gi shared default=1Gi)"}},
		{name: "binding conditions", node: "n1", opts: Options{Devices: NodeDevices{GPUs: 1, BindsToNode: true,
			BindingConditions: []string{"attached"}, BindingFailureConditions: []string{"failed"}}},
			want: []string{"devices: gpu-0(example-gpu #0 gpu v1.0.0 16Gi bindsToNode when=[attached] unless=[failed])"}},
		{name: "taints by device", node: "n1", opts: Options{Devices: NodeDevices{GPUs: 2,
			Taints: map[string][]resourceapi.DeviceTaint{"gpu-1": {taint}}}},
			want: []string{"devices: gpu-0(example-gpu #0 gpu v1.0.0 16Gi) " +
				"gpu-1(example-gpu #1 gpu v1.0.0 16Gi taint example.com/unhealthy=true:NoSchedule)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range tt.opts.Pool(tt.node).Slices {
				if len(s.SharedCounters) > 0 {
					var sets []string
					for _, c := range s.SharedCounters {
						sets = append(sets, fmt.Sprintf("%s(memory=%s)", c.Name, ptr.To(c.Counters[CapMemory].Value)))
					}
					got = append(got, "counters: "+strings.Join(sets, " "))
					continue
				}
				line := "devices:"
				for _, d := range s.Devices {
					line += " " + describeDevice(d)
				}
				got = append(got, line)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("slices (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPoolChunks checks that a pool of many devices is cut into slices of
// at most maxDevicesPerSlice, in order.
func TestPoolChunks(t *testing.T) {
	pool := Options{Devices: NodeDevices{GPUs: maxDevicesPerSlice + 2}}.Pool("n1")
	var got []int
	var names []string
	for _, s := range pool.Slices {
		got = append(got, len(s.Devices))
		for _, d := range s.Devices {
			names = append(names, d.Name)
		}
	}
	if diff := cmp.Diff([]int{maxDevicesPerSlice, 2}, got); diff != "" {
		t.Errorf("devices per slice (-want +got):\n%s", diff)
	}
	if names[maxDevicesPerSlice] != fmt.Sprintf("gpu-%d", maxDevicesPerSlice) || len(slices.Compact(names)) != len(names) {
		t.Errorf("devices out of order or repeated: %v", names)
	}
}

// describeDevice is a device in one word: its name, then in brackets its
// attributes, memory and options.
func describeDevice(d resourceapi.Device) string {
	a := d.Attributes
	parts := []string{*a[AttrModel].StringValue, fmt.Sprintf("#%d", *a[AttrIndex].IntValue), *a[AttrType].StringValue,
		"v" + *a[AttrDriverVersion].VersionValue}
	memory := d.Capacity[CapMemory]
	parts = append(parts, memory.Value.String())
	for _, c := range d.ConsumesCounters {
		parts = append(parts, fmt.Sprintf("uses %s:%s", c.CounterSet, ptr.To(c.Counters[CapMemory].Value)))
	}
	if ptr.Deref(d.AllowMultipleAllocations, false) {
		parts = append(parts, "shared")
		if p := memory.RequestPolicy; p != nil && p.Default != nil {
			parts = append(parts, "default="+p.Default.String())
		}
	}
	if ptr.Deref(d.BindsToNode, false) {
		parts = append(parts, "bindsToNode")
	}
	if len(d.BindingConditions) > 0 {
		parts = append(parts, fmt.Sprintf("when=%v", d.BindingConditions))
	}
	if len(d.BindingFailureConditions) > 0 {
		parts = append(parts, fmt.Sprintf("unless=%v", d.BindingFailureConditions))
	}
	for _, t := range d.Taints {
		parts = append(parts, fmt.Sprintf("taint %s=%s:%s", t.Key, t.Value, t.Effect))
	}
	return d.Name + "(" + strings.Join(parts, " ") + ")"
}
