package dra

import (
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// The lookups hetsev-scheduler's DRA mode and hetsev-scaler's DRA view
// both make, from whatever cache each reads (the scheduler's DRA manager
// and pod lister, the scaler's listed claims and pods).

// PodGetter returns the pod namespace/name, as a lister's
// Pods(namespace).Get(name) does.
type PodGetter func(namespace, name string) (*v1.Pod, error)

// ReservedPods are the pods in the claim's status.reservedFor that get
// finds with the UID reservedFor names (a pod deleted and recreated under
// the same name is not the consumer). Consumers of other kinds, and pods
// get does not find, are left out.
func ReservedPods(claim *resourceapi.ResourceClaim, get PodGetter) []*v1.Pod {
	var out []*v1.Pod
	for _, r := range claim.Status.ReservedFor {
		if r.Resource != "pods" || r.APIGroup != "" {
			continue
		}
		pod, err := get(claim.Namespace, r.Name)
		if err != nil || pod == nil || pod.UID != r.UID {
			continue
		}
		out = append(out, pod)
	}
	return out
}

// PodClaim is the ResourceClaim behind the pod's spec.resourceClaims entry
// podClaim (ClaimNameOf) as get finds it; nil when the pod has no such
// entry, its claim is not generated yet, or get does not find it.
func PodClaim(pod *v1.Pod, podClaim string, get ClaimGetter) *resourceapi.ResourceClaim {
	name, _ := ClaimNameOf(pod, podClaim)
	if name == "" {
		return nil
	}
	c, err := get(pod.Namespace, name)
	if err != nil {
		return nil
	}
	return c
}

// RequestedMiB is the GPU memory the claim's request of hetsev's
// DeviceClass asks for (MemoryRequest), in MiB rounded up; 0 when the
// claim is nil or has no valid such request.
func RequestedMiB(claim *resourceapi.ResourceClaim) int64 {
	if claim == nil {
		return 0
	}
	if _, q, ok, err := MemoryRequest(claim, v1alpha1.DeviceClassName); ok && err == nil {
		return ToMiB(q.Value())
	}
	return 0
}

// AllocatedDevices are the devices of driver in the claim's
// status.allocation, in result order; none when it is not allocated.
func AllocatedDevices(claim *resourceapi.ResourceClaim, driver string) []DeviceKey {
	if claim == nil || claim.Status.Allocation == nil {
		return nil
	}
	var out []DeviceKey
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver == driver {
			out = append(out, DeviceKey{Driver: r.Driver, Pool: r.Pool, Device: r.Device})
		}
	}
	return out
}

// Position is the position in n.Devices of the device k names (as
// Occupancy's GPUs are ordered); false when the node has no such
// shareable device.
func (n *NodeDevices) Position(k DeviceKey) (int, bool) {
	for i, d := range n.Devices {
		if d.Key() == k {
			return i, true
		}
	}
	return 0, false
}
