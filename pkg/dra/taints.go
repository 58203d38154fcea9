package dra

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
)

// RequestTolerations are the device tolerations of the claim's request
// named request (spec.devices.requests[].exactly.tolerations); nil when
// the claim has no such request.
func RequestTolerations(claim *resourceapi.ResourceClaim, request string) []resourceapi.DeviceToleration {
	for _, r := range claim.Spec.Devices.Requests {
		if r.Name == request && r.Exactly != nil {
			return r.Exactly.Tolerations
		}
	}
	return nil
}

// UntoleratedTaint is the first taint of d with effect NoSchedule or
// NoExecute that none of tolerations tolerates, the rule by which the
// structured allocator (with DeviceTaints) refuses a device; ok is false
// when there is none. Other effects (None, unknown ones) are ignored, as
// upstream ignores them. d's taints are those of its published device in
// d.Slice, which include DeviceTaintRules when the slices come from the
// scheduler's ListWithDeviceTaintRules.
func UntoleratedTaint(d Device, tolerations []resourceapi.DeviceToleration) (taint resourceapi.DeviceTaint, ok bool) {
	dev := d.published()
	if dev == nil {
		return taint, false
	}
	for _, t := range dev.Taints {
		if t.Effect != resourceapi.DeviceTaintEffectNoSchedule && t.Effect != resourceapi.DeviceTaintEffectNoExecute {
			continue
		}
		tolerated := false
		for _, tol := range tolerations {
			if resourceclaim.ToleratesTaint(tol, t) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return t, true
		}
	}
	return taint, false
}

// SelectTolerated keeps, on every node, the devices whose NoSchedule and
// NoExecute taints tolerations all tolerate (UntoleratedTaint), and moves
// the others to Unusable with the taint, so that hetsev picks no device
// the structured allocator would refuse for a request with those
// tolerations. Apply it only when the allocator's DeviceTaints feature is
// on: without it the allocator ignores taints.
func SelectTolerated(nodes map[string]*NodeDevices, tolerations []resourceapi.DeviceToleration) {
	for _, nd := range nodes {
		kept := nd.Devices[:0]
		for _, d := range nd.Devices {
			if t, ok := UntoleratedTaint(d, tolerations); ok {
				nd.Unusable = append(nd.Unusable, Unusable{Node: nd.Node, Pool: d.Pool, Device: d.Name,
					Reason: fmt.Sprintf("taint %s=%s:%s is not tolerated by the claim's request", t.Key, t.Value, t.Effect)})
				continue
			}
			kept = append(kept, d)
		}
		nd.Devices = kept
	}
}

// published is d's entry in its ResourceSlice, nil when it is not there.
func (d Device) published() *resourceapi.Device {
	if d.Slice == nil {
		return nil
	}
	for i := range d.Slice.Spec.Devices {
		if d.Slice.Spec.Devices[i].Name == d.Name {
			return &d.Slice.Spec.Devices[i]
		}
	}
	return nil
}

// SelectUsable applies to nodes what the structured allocator applies to
// a claim of class before it looks at capacity: class's selectors
// (SelectByClass) and, with taints (the allocator's DeviceTaints, on by
// default from Kubernetes 1.36), the NoSchedule and NoExecute taints that
// tolerations do not tolerate (SelectTolerated). A nil class (not found)
// selects nothing: every device becomes Unusable, as the scheduler
// refuses every claim of a class that does not exist.
func SelectUsable(ctx context.Context, nodes map[string]*NodeDevices, class *resourceapi.DeviceClass, className string, cache *cel.Cache, taints bool, tolerations []resourceapi.DeviceToleration) {
	if class == nil {
		for _, nd := range nodes {
			for _, d := range nd.Devices {
				nd.Unusable = append(nd.Unusable, Unusable{Node: nd.Node, Pool: d.Pool, Device: d.Name, Reason: "DeviceClass " + className + " not found"})
			}
			nd.Devices = nil
		}
		return
	}
	SelectByClass(ctx, nodes, class, cache)
	if taints {
		SelectTolerated(nodes, tolerations)
	}
}

// DefaultCELCache is a cache of compiled DeviceClass selectors with the
// CEL features of a Kubernetes 1.36 scheduler at its defaults (consumable
// capacity, list-type attributes), for programs that are not the
// scheduler and cannot read its feature gates (hetsev-scaler, kubectl
// hetsev).
func DefaultCELCache() *cel.Cache {
	return cel.NewCache(10, cel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true})
}
