// What a driver reports about the devices of a claim: the conditions of
// status.devices that binding conditions wait for.

package dradriver

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// SetDeviceCondition does what driver does once it has prepared the
// devices of an allocated claim (attached them to the node, say): it sets
// cond on each of the driver's allocated devices in the claim's
// status.devices, adding an entry for a device that has none. The
// scheduler's PreBind, which waits for every binding condition of the
// claim's devices to be True, sees it and binds the pod; a binding failure
// condition set True makes it give up and free the claim instead. A
// conflict with another writer (the scheduler) is retried on a fresh copy.
func SetDeviceCondition(ctx context.Context, client kubernetes.Interface, driver, namespace, claim string,
	cond metav1.Condition) error {
	claims := client.ResourceV1().ResourceClaims(namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := claims.Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c.Status.Allocation == nil {
			return fmt.Errorf("claim %s/%s is not allocated", namespace, claim)
		}
		n := 0
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver != driver {
				continue
			}
			n++
			i := deviceStatusIndex(c, r)
			if i < 0 {
				c.Status.Devices = append(c.Status.Devices, resourceapi.AllocatedDeviceStatus{
					Driver: r.Driver, Pool: r.Pool, Device: r.Device, ShareID: shareID(r)})
				i = len(c.Status.Devices) - 1
			}
			cond.ObservedGeneration = c.Generation
			meta.SetStatusCondition(&c.Status.Devices[i].Conditions, cond)
		}
		if n == 0 {
			return fmt.Errorf("claim %s/%s has no device of driver %s", namespace, claim, driver)
		}
		_, err = claims.UpdateStatus(ctx, c, metav1.UpdateOptions{})
		return err
	})
}

// deviceStatusIndex is the index of the allocated device r in the claim's
// status.devices, or -1.
func deviceStatusIndex(c *resourceapi.ResourceClaim, r resourceapi.DeviceRequestAllocationResult) int {
	for i, d := range c.Status.Devices {
		if d.Driver == r.Driver && d.Pool == r.Pool && d.Device == r.Device && ptr.Equal(d.ShareID, shareID(r)) {
			return i
		}
	}
	return -1
}

// shareID is the share of a device allocated more than once
// (allowMultipleAllocations), as its status entry names it.
func shareID(r resourceapi.DeviceRequestAllocationResult) *string {
	if r.ShareID == nil {
		return nil
	}
	return ptr.To(string(*r.ShareID))
}
