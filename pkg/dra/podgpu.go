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

// PodGPUIndex is the index (AttributeIndex) on the pod's node of the GPU
// that the pod holds through its ResourceClaims: every claim behind the
// pod's spec.resourceClaims entries (not only v1alpha1.PodClaimName, so
// that pods whose claims another scheduler allocated are found too), the
// results of driver in each claim's status.allocation, and each such
// device's index attribute as the newest generation of its pool publishes
// it in a ResourceSlice bound to the pod's node (slices: all the
// ResourceSlices known). When the claims hold several GPUs of driver, the
// lowest index is returned: one pod, one DCGM series.
//
// The error says what is missing: the pod is not bound, a claim is not
// generated yet, not found or not allocated, no claim holds a device of
// driver, a device is not published for the pod's node, or it has no
// index attribute. Every claim must be readable and allocated, or the
// GPUs the pod holds are not known.
func PodGPUIndex(pod *v1.Pod, getClaim ClaimGetter, slices []*resourceapi.ResourceSlice, driver string) (int, error) {
	if pod.Spec.NodeName == "" {
		return 0, errors.New("not bound to a node")
	}
	names, ungenerated := ClaimNamesOf(pod)
	if len(ungenerated) > 0 {
		return 0, fmt.Errorf("the ResourceClaim of pod claim %q (from a template) is not generated yet", ungenerated[0])
	}
	if len(names) == 0 {
		return 0, errors.New("no ResourceClaims (spec.resourceClaims)")
	}
	var devices []DeviceKey
	for _, name := range names {
		c, err := getClaim(pod.Namespace, name)
		if err != nil {
			return 0, fmt.Errorf("ResourceClaim %s/%s: %w", pod.Namespace, name, err)
		}
		if c == nil || c.Status.Allocation == nil {
			return 0, fmt.Errorf("ResourceClaim %s/%s is not allocated", pod.Namespace, name)
		}
		devices = append(devices, AllocatedDevices(c, driver)...)
	}
	if len(devices) == 0 {
		return 0, fmt.Errorf("none of its ResourceClaims (%v) is allocated a device of driver %s", names, driver)
	}
	gpu := -1
	for _, k := range devices {
		idx, err := PublishedIndex(slices, pod.Spec.NodeName, k)
		if err != nil {
			return 0, err
		}
		if gpu < 0 || idx < gpu {
			gpu = idx
		}
	}
	return gpu, nil
}

// PublishedIndex is device k's AttributeIndex as the newest generation of
// its pool publishes it, in a ResourceSlice bound to node (spec.nodeName).
// The attribute may be written unqualified ("index", in the driver's
// domain) or qualified with the driver's name; it must be a non-negative
// int. Unlike Inventory, any device counts, shareable or not, and a
// missing attribute is an error: the index names a DCGM series, a
// position among devices does not.
func PublishedIndex(all []*resourceapi.ResourceSlice, node string, k DeviceKey) (int, error) {
	var pool []*resourceapi.ResourceSlice
	for _, s := range all {
		if s != nil && s.Spec.Driver == k.Driver && s.Spec.Pool.Name == k.Pool {
			pool = append(pool, s)
		}
	}
	if len(pool) == 0 {
		return 0, fmt.Errorf("device %s is not published: no ResourceSlice of driver %s has pool %q", k, k.Driver, k.Pool)
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
				return 0, fmt.Errorf("device %s is published by ResourceSlice %s for %s, not for the pod's node %s", k, s.Name, sliceNode(s), node)
			}
			a, ok := dev.Attributes[AttributeIndex]
			if !ok {
				a, ok = dev.Attributes[resourceapi.QualifiedName(k.Driver+"/"+string(AttributeIndex))]
			}
			switch {
			case !ok:
				return 0, fmt.Errorf("device %s in ResourceSlice %s has no attribute %q, the GPU index DCGM's series carry", k, s.Name, AttributeIndex)
			case a.IntValue == nil || *a.IntValue < 0 || *a.IntValue >= 1<<20:
				return 0, fmt.Errorf("device %s in ResourceSlice %s: attribute %q is not a GPU index (an int from 0)", k, s.Name, AttributeIndex)
			}
			return int(*a.IntValue), nil
		}
	}
	return 0, fmt.Errorf("device %s is not published: pool %q (generation %d) of driver %s has no device %q", k, k.Pool, newest, k.Driver, k.Device)
}

// sliceNode says which nodes a slice's devices are on, for errors.
func sliceNode(s *resourceapi.ResourceSlice) string {
	if s.Spec.NodeName != nil {
		return "node " + *s.Spec.NodeName
	}
	return "no single node (nodeSelector, allNodes or perDeviceNodeSelection)"
}
