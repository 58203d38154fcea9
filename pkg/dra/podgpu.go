package dra

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// ClaimNamesOf returns, in the order of the pod's spec.resourceClaims
// entries, the names of the ResourceClaims behind them (ClaimNameOf), and
// the entries from a template whose claim has not been generated yet (no
// pod.status.resourceClaimStatuses entry). An entry whose status entry
// names no claim needed none (the API's words: the entry "can be
// ignored") and is in neither list.
func ClaimNamesOf(pod *v1.Pod) (names, ungenerated []string) {
	for _, rc := range pod.Spec.ResourceClaims {
		name, _ := ClaimNameOf(pod, rc.Name)
		if name != "" {
			names = append(names, name)
			continue
		}
		if !slices.ContainsFunc(pod.Status.ResourceClaimStatuses, func(st v1.PodResourceClaimStatus) bool { return st.Name == rc.Name }) {
			ungenerated = append(ungenerated, rc.Name)
		}
	}
	return names, ungenerated
}

// ClaimGetter returns the ResourceClaim namespace/name, as a lister's
// ResourceClaims(namespace).Get(name) does.
type ClaimGetter func(namespace, name string) (*resourceapi.ResourceClaim, error)

// PodGPU is the GPU on the pod's node that the pod holds through its
// ResourceClaims: every claim behind the pod's spec.resourceClaims entries
// (not only v1alpha1.PodClaimName, so that pods whose claims another
// scheduler allocated are found too), the results of driver in each
// claim's status.allocation, and each such device as the newest generation
// of its pool publishes it in a ResourceSlice bound to the pod's node
// (slices: all the ResourceSlices known; PublishedGPU). When the claims
// hold several GPUs of driver, the one with the lowest index is returned
// (by device name when none has an index): one pod, one DCGM series.
//
// The error says what is missing: the pod is not bound, a claim is not
// generated yet, not found or not allocated, no claim holds a device of
// driver, a device is not published for the pod's node, or it has neither
// an index nor a uuid attribute. Every claim must be readable and
// allocated, or the GPUs the pod holds are not known.
func PodGPU(pod *v1.Pod, getClaim ClaimGetter, slices []*resourceapi.ResourceSlice, driver string) (GPUID, error) {
	if pod.Spec.NodeName == "" {
		return GPUID{}, errors.New("not bound to a node")
	}
	names, ungenerated := ClaimNamesOf(pod)
	if len(ungenerated) > 0 {
		return GPUID{}, fmt.Errorf("the ResourceClaim of pod claim %q (from a template) is not generated yet", ungenerated[0])
	}
	if len(names) == 0 {
		return GPUID{}, errors.New("no ResourceClaims (spec.resourceClaims)")
	}
	var devices []DeviceKey
	for _, name := range names {
		c, err := getClaim(pod.Namespace, name)
		if err != nil {
			return GPUID{}, fmt.Errorf("ResourceClaim %s/%s: %w", pod.Namespace, name, err)
		}
		if c == nil || c.Status.Allocation == nil {
			return GPUID{}, fmt.Errorf("ResourceClaim %s/%s is not allocated", pod.Namespace, name)
		}
		devices = append(devices, AllocatedDevices(c, driver)...)
	}
	if len(devices) == 0 {
		return GPUID{}, fmt.Errorf("none of its ResourceClaims (%v) is allocated a device of driver %s", names, driver)
	}
	var best GPUID
	var bestKey DeviceKey
	for i, k := range devices {
		id, err := PublishedGPU(slices, pod.Spec.NodeName, k)
		if err != nil {
			return GPUID{}, err
		}
		better := i == 0
		switch {
		case better:
		case id.Index >= 0 && (best.Index < 0 || id.Index < best.Index):
			better = true
		case id.Index < 0 && best.Index < 0 && k.String() < bestKey.String():
			better = true
		}
		if better {
			best, bestKey = id, k
		}
	}
	return best, nil
}

// GPUID is what names a GPU in DCGM's series: its index on its node
// (AttributeIndex; -1 when the driver publishes none, as NVIDIA's driver
// does not) and its UUID (AttributeUUID; "" when none).
type GPUID struct {
	Index int
	UUID  string
}

// PublishedGPU is device k's index and UUID as the newest generation of
// its pool publishes them, in a ResourceSlice bound to node
// (spec.nodeName). Each attribute may be written unqualified (in the
// driver's domain) or qualified with the driver's name; an index must be a
// non-negative int. Unlike Inventory, any device counts, shareable or not;
// a device with neither attribute is an error: it names no DCGM series (a
// position among devices does not).
func PublishedGPU(all []*resourceapi.ResourceSlice, node string, k DeviceKey) (GPUID, error) {
	var pool []*resourceapi.ResourceSlice
	for _, s := range all {
		if s != nil && s.Spec.Driver == k.Driver && s.Spec.Pool.Name == k.Pool {
			pool = append(pool, s)
		}
	}
	if len(pool) == 0 {
		return GPUID{}, fmt.Errorf("device %s is not published: no ResourceSlice of driver %s has pool %q", k, k.Driver, k.Pool)
	}
	newest := slices.MaxFunc(pool, func(a, b *resourceapi.ResourceSlice) int {
		return cmp.Compare(a.Spec.Pool.Generation, b.Spec.Pool.Generation)
	}).Spec.Pool.Generation
	for _, s := range pool {
		if s.Spec.Pool.Generation != newest {
			continue
		}
		for i := range s.Spec.Devices {
			dev := &s.Spec.Devices[i]
			if dev.Name != k.Device {
				continue
			}
			if s.Spec.NodeName == nil || *s.Spec.NodeName != node {
				return GPUID{}, fmt.Errorf("device %s is published by ResourceSlice %s for %s, not for the pod's node %s", k, s.Name, sliceNode(s), node)
			}
			attr := func(name resourceapi.QualifiedName) (resourceapi.DeviceAttribute, bool) {
				a, ok := dev.Attributes[name]
				if !ok {
					a, ok = dev.Attributes[resourceapi.QualifiedName(k.Driver+"/"+string(name))]
				}
				return a, ok
			}
			id := GPUID{Index: -1}
			if a, ok := attr(AttributeIndex); ok {
				if a.IntValue == nil || *a.IntValue < 0 || *a.IntValue >= 1<<20 {
					return GPUID{}, fmt.Errorf("device %s in ResourceSlice %s: attribute %q is not a GPU index (an int from 0)", k, s.Name, AttributeIndex)
				}
				id.Index = int(*a.IntValue)
			}
			if a, ok := attr(AttributeUUID); ok && a.StringValue != nil {
				id.UUID = *a.StringValue
			}
			if id.Index < 0 && id.UUID == "" {
				return GPUID{}, fmt.Errorf("device %s in ResourceSlice %s has neither attribute %q nor %q, which name DCGM's series", k, s.Name, AttributeUUID, AttributeIndex)
			}
			return id, nil
		}
	}
	return GPUID{}, fmt.Errorf("device %s is not published: pool %q (generation %d) of driver %s has no device %q", k, k.Pool, newest, k.Driver, k.Device)
}

// sliceNode says which nodes a slice's devices are on, for errors.
func sliceNode(s *resourceapi.ResourceSlice) string {
	if s.Spec.NodeName != nil {
		return "node " + *s.Spec.NodeName
	}
	return "no single node (nodeSelector, allNodes or perDeviceNodeSelection)"
}
