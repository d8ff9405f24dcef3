// The DeviceClasses stories use with this driver's devices.

package dradriver

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// DeviceClass is a class of every device of driver, narrowed by the CEL
// expressions of more, each a selector of its own (all must hold), such as
// ModelSelector's.
func DeviceClass(name, driver string, more ...string) *resourceapi.DeviceClass {
	selectors := []resourceapi.DeviceSelector{celSelector(fmt.Sprintf("device.driver == %q", driver))}
	for _, expr := range more {
		selectors = append(selectors, celSelector(expr))
	}
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       resourceapi.DeviceClassSpec{Selectors: selectors},
	}
}

// ExtendedResourceClass is DeviceClass(name, driver) that also serves the
// extended resource resource (spec.extendedResourceName, "example.com/gpu"):
// a pod asking for it in its containers' resources, on a node whose
// allocatable does not have it, gets one of the class's devices through a
// claim the scheduler makes.
func ExtendedResourceClass(name, driver, resource string) *resourceapi.DeviceClass {
	c := DeviceClass(name, driver)
	c.Spec.ExtendedResourceName = ptr.To(resource)
	return c
}

// ModelSelector is the CEL expression that selects driver's devices of
// model, for DeviceClass or a request's selectors.
func ModelSelector(driver, model string) string {
	return fmt.Sprintf("device.attributes[%q].%s == %q", driver, AttrModel, model)
}

// TypeSelector is the CEL expression that selects driver's whole GPUs
// (TypeGPU) or partitions (TypePartition).
func TypeSelector(driver, typ string) string {
	return fmt.Sprintf("device.attributes[%q].%s == %q", driver, AttrType, typ)
}

// celSelector is a device selector of one CEL expression.
func celSelector(expr string) resourceapi.DeviceSelector {
	return resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}
}
