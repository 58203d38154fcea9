package draplugin

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"
)

// DriverResources is what the plugin publishes through the kubeletplugin
// helper for slice (internal/sim/dradriver.Slice of the node): one pool,
// named as slice's pool (the node), holding one slice with slice's
// devices unchanged, so hetsev-scheduler reads the same GPUs (index,
// productName, memory capacity) as in the demo. The helper's
// ResourceSlice controller names the published slice, sets its
// spec.nodeName to the node and numbers the pool's generation itself.
func DriverResources(slice *resourceapi.ResourceSlice) resourceslice.DriverResources {
	devices := make([]resourceapi.Device, len(slice.Spec.Devices))
	for i := range slice.Spec.Devices {
		slice.Spec.Devices[i].DeepCopyInto(&devices[i])
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		slice.Spec.Pool.Name: {Slices: []resourceslice.Slice{{Devices: devices}}},
	}}
}
