package dra

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// ClaimNameOf is the name of the ResourceClaim behind a pod's
// spec.resourceClaims entry podClaim: the claim it names, or the one
// generated from its template (pod.status.resourceClaimStatuses). has is
// false when the pod has no such entry; name is "" while the claim of a
// template has not been generated yet.
func ClaimNameOf(pod *v1.Pod, podClaim string) (name string, has bool) {
	for _, rc := range pod.Spec.ResourceClaims {
		if rc.Name != podClaim {
			continue
		}
		if rc.ResourceClaimName != nil {
			return *rc.ResourceClaimName, true
		}
		for _, st := range pod.Status.ResourceClaimStatuses {
			if st.Name == podClaim && st.ResourceClaimName != nil {
				return *st.ResourceClaimName, true
			}
		}
		return "", true
	}
	return "", false
}

// ReservedFor reports whether the claim's status.reservedFor names the
// consumer with uid.
func ReservedFor(claim *resourceapi.ResourceClaim, uid types.UID) bool {
	return slices.ContainsFunc(claim.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == uid })
}

// NoClaimGenerated reports whether the pod's status records that no
// ResourceClaim was needed for its spec.resourceClaims entry podClaim (an
// entry of status.resourceClaimStatuses whose resourceClaimName is unset),
// which the API says lets the entry be ignored.
func NoClaimGenerated(pod *v1.Pod, podClaim string) bool {
	for _, st := range pod.Status.ResourceClaimStatuses {
		if st.Name == podClaim {
			return st.ResourceClaimName == nil
		}
	}
	return false
}

// HasHetsevClaim reports whether the pod has spec.resourceClaims entry
// v1alpha1.PodClaimName: in DRA mode, the pods hetsev-scheduler places.
func HasHetsevClaim(pod *v1.Pod) bool {
	_, has := ClaimNameOf(pod, v1alpha1.PodClaimName)
	return has
}

// MemoryRequest reads the GPU memory a claim asks for: the request whose
// exactly.deviceClassName is class, one device, capacity.requests of
// v1alpha1.DRAMemoryCapacity. ok is false when the claim has no request of
// class. An error names the claim and what is wrong: a request of class
// for all devices or more than one, or without a positive memory request.
func MemoryRequest(claim *resourceapi.ResourceClaim, class string) (request string, memory resource.Quantity, ok bool, err error) {
	for _, r := range claim.Spec.Devices.Requests {
		ex := r.Exactly
		if ex == nil || ex.DeviceClassName != class {
			continue
		}
		if ex.AllocationMode == resourceapi.DeviceAllocationModeAll || ex.Count > 1 {
			return r.Name, memory, true, fmt.Errorf("claim %s/%s request %q asks for more than one device of class %s; hetsev places one GPU share per claim", claim.Namespace, claim.Name, r.Name, class)
		}
		if ex.Capacity == nil {
			return r.Name, memory, true, fmt.Errorf("claim %s/%s request %q has no capacity.requests.%s: the GPU memory to consume", claim.Namespace, claim.Name, r.Name, v1alpha1.DRAMemoryCapacity)
		}
		q, has := ex.Capacity.Requests[v1alpha1.DRAMemoryCapacity]
		if !has {
			return r.Name, memory, true, fmt.Errorf("claim %s/%s request %q has no capacity.requests.%s: the GPU memory to consume", claim.Namespace, claim.Name, r.Name, v1alpha1.DRAMemoryCapacity)
		}
		if q.Sign() <= 0 {
			return r.Name, memory, true, fmt.Errorf("claim %s/%s request %q: capacity.requests.%s=%s must be positive", claim.Namespace, claim.Name, r.Name, v1alpha1.DRAMemoryCapacity, q.String())
		}
		if q.Cmp(*resource.NewQuantity(gpuinventory.MaxGPUMemoryMiB*mib, resource.BinarySI)) > 0 {
			return r.Name, memory, true, fmt.Errorf("claim %s/%s request %q: capacity.requests.%s=%s exceeds %d MiB", claim.Namespace, claim.Name, r.Name, v1alpha1.DRAMemoryCapacity, q.String(), gpuinventory.MaxGPUMemoryMiB)
		}
		return r.Name, q, true, nil
	}
	return "", memory, false, nil
}

// Usage is the GPU memory, and any other capacity, one allocated claim
// holds on one device.
type Usage struct {
	Claim  *resourceapi.ResourceClaim
	Device DeviceKey
	// MemoryBytes is what the claim holds, bytes: the larger of the
	// allocation's consumedCapacity and the claim's request (a claim whose
	// recorded consumption is below what it asks for is counted at its
	// request, so that an allocation written by hand never lets a device be
	// over-committed), or the device's whole memory when the allocation
	// consumed no capacity (the device is held exclusively), which
	// WholeDevice says.
	MemoryBytes int64
	WholeDevice bool
	// Consumed is what the allocation consumed of the device's other
	// capacities, in thousandths (Device.Charges).
	Consumed map[resourceapi.QualifiedName]int64
	// DriverConfig says the allocation carries the driver's own
	// configuration for this device (opaque parameters, e.g. NVIDIA's
	// GpuConfig with a sharing strategy): NVIDIA's driver refuses to
	// prepare a claim on a GPU whose other claims' configuration differs,
	// and hetsev's claims carry none.
	DriverConfig bool
	// Note says what was counted instead of the recorded consumption, for
	// the caller to report; "" when the consumption was counted as is.
	Note string
}

// Usages are the devices every allocated claim holds, whoever allocated
// it and whatever its class, by device: the results of driver in each
// claim's status.allocation. Claims that are not allocated hold nothing.
func Usages(claims []*resourceapi.ResourceClaim, driver string) map[DeviceKey][]Usage {
	out := map[DeviceKey][]Usage{}
	for _, c := range claims {
		if c == nil || c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver != driver {
				continue
			}
			k := DeviceKey{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
			out[k] = append(out[k], usageOf(c, r))
		}
	}
	return out
}

func usageOf(c *resourceapi.ResourceClaim, r resourceapi.DeviceRequestAllocationResult) Usage {
	u := Usage{Claim: c, Device: DeviceKey{Driver: r.Driver, Pool: r.Pool, Device: r.Device}}
	for _, cfg := range c.Status.Allocation.Devices.Config {
		if cfg.Opaque != nil && cfg.Opaque.Driver == r.Driver && (len(cfg.Requests) == 0 || slices.Contains(cfg.Requests, r.Request) || slices.Contains(cfg.Requests, strings.SplitN(r.Request, "/", 2)[0])) {
			u.DriverConfig = true
		}
	}
	consumed, has := r.ConsumedCapacity[v1alpha1.DRAMemoryCapacity]
	if !has {
		u.WholeDevice = true
		if len(r.ConsumedCapacity) > 0 {
			u.Note = fmt.Sprintf("allocation consumed no %q capacity: counted as the whole device", v1alpha1.DRAMemoryCapacity)
		}
		return u
	}
	u.MemoryBytes = max(consumed.Value(), 0)
	for name, q := range r.ConsumedCapacity {
		if name != v1alpha1.DRAMemoryCapacity {
			if u.Consumed == nil {
				u.Consumed = map[resourceapi.QualifiedName]int64{}
			}
			u.Consumed[name] = max(q.MilliValue(), 0)
		}
	}
	for _, req := range c.Spec.Devices.Requests {
		if req.Name != r.Request || req.Exactly == nil || req.Exactly.Capacity == nil {
			continue
		}
		if q, ok := req.Exactly.Capacity.Requests[v1alpha1.DRAMemoryCapacity]; ok && q.Value() > u.MemoryBytes {
			u.Note = fmt.Sprintf("allocation consumed %s of %q but the claim requests %s: counted at its request", consumed.String(), v1alpha1.DRAMemoryCapacity, q.String())
			u.MemoryBytes = q.Value()
		}
	}
	return u
}

// ToMiB is bytes in MiB, rounded up (a share is never counted smaller
// than it is).
func ToMiB(bytes int64) int64 { return (max(bytes, 0) + mib - 1) / mib }
