package dra

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// Consumers returns the pods that use a claim: those in its
// status.reservedFor or, while its allocation is in flight, the pod it is
// being allocated for. Pods it cannot find are left out.
type Consumers func(claim *resourceapi.ResourceClaim) []*v1.Pod

// Issue is a claim or pod counted on the safe side, and what was counted.
type Issue struct {
	Claim string // namespace/name; "" for a pod without an allocated claim
	Pod   string // namespace/name; "" when no pod uses the claim
	What  string
	// Object is the claim, or the pod when there is no claim: what an
	// event about the issue is about.
	Object runtime.Object
}

func (i Issue) String() string {
	switch {
	case i.Claim != "" && i.Pod != "":
		return fmt.Sprintf("claim %s (pod %s): %s", i.Claim, i.Pod, i.What)
	case i.Claim != "":
		return fmt.Sprintf("claim %s: %s", i.Claim, i.What)
	}
	return fmt.Sprintf("pod %s: %s", i.Pod, i.What)
}

// Occupancy is the per-GPU occupancy of the node's shareable devices, the
// same gpuinventory.Occupancy annotation mode builds from pods, so that
// pkg/placement rates and admits GPUs alike in both modes: GPUs[i] is
// n.Devices[i], with that device's memory. Every usage of a device (any
// allocated claim, whoever allocated it) holds its memory there; each pod
// using the claim adds its model, busy share and latency-inflation limit
// from its hetsev annotations (PodShare). A claim no pod uses yet (an
// allocation in flight in another profile) holds memory only. A device
// that charges every claim other capacities (Device.Charges) is capped at
// the instances it holds plus the claims those capacities still admit
// (gpuinventory.GPU.Capped); one whose allocated claims carry the
// driver's own configuration takes none (Usage.DriverConfig), with an
// issue naming the claim.
//
// counted holds the UIDs of the pods counted through a claim, so that the
// caller can count the others with AddUnclaimedPod.
func (n *NodeDevices) Occupancy(usages map[DeviceKey][]Usage, consumers Consumers) (occ *gpuinventory.Occupancy, counted map[types.UID]bool, issues []Issue) {
	inv := gpuinventory.NodeGPUs{Count: len(n.Devices)}
	for _, d := range n.Devices {
		inv.MemoryMiB = max(inv.MemoryMiB, d.MemoryMiB())
		if inv.Product == "" {
			inv.Product = d.Product
		}
	}
	occ = gpuinventory.NewOccupancy(n.Node, inv)
	counted = map[types.UID]bool{}
	for i, d := range n.Devices {
		occ.GPUs[i].TotalMiB = d.MemoryMiB()
		consumed, whole, configured := map[resourceapi.QualifiedName]int64{}, false, ""
		for _, u := range usages[d.Key()] {
			whole = whole || u.WholeDevice
			if u.DriverConfig && configured == "" {
				configured = u.Claim.Namespace + "/" + u.Claim.Name
				issues = append(issues, Issue{Claim: configured, Object: u.Claim,
					What: fmt.Sprintf("its allocation carries %s's own configuration for device %s, which hetsev's claims do not: the driver would refuse a claim beside it, so the GPU takes no more", d.Driver, d.Name)})
			}
			for _, c := range d.Charges {
				if v, ok := u.Consumed[c.Name]; ok {
					consumed[c.Name] += v
				} else {
					consumed[c.Name] += c.PerClaim // not recorded: what a claim is charged
				}
			}
			memMiB := ToMiB(u.MemoryBytes)
			if u.WholeDevice {
				memMiB = d.MemoryMiB()
			}
			claim := u.Claim.Namespace + "/" + u.Claim.Name
			if u.Note != "" {
				issues = append(issues, Issue{Claim: claim, What: u.Note, Object: u.Claim})
			}
			pods := consumers(u.Claim)
			if len(pods) == 0 {
				occ.Place(gpuinventory.Placement{Index: i, Demand: gpuinventory.Demand{MemoryMiB: memMiB}})
				continue
			}
			for j, pod := range pods {
				dm, err := PodShare(pod)
				if err != nil {
					issues = append(issues, Issue{Claim: claim, Pod: pod.Namespace + "/" + pod.Name, What: err.Error(), Object: pod})
				}
				if j == 0 {
					dm.MemoryMiB = memMiB // the claim's memory, once
				}
				occ.Place(gpuinventory.Placement{Index: i, Demand: dm})
				counted[pod.UID] = true
			}
		}
		if left := d.ClaimsLeft(consumed); left >= 0 || configured != "" {
			// Each further instance is a claim of its own, charged the
			// defaults: the device takes left more.
			if whole || configured != "" {
				left = 0
			}
			occ.GPUs[i].Capped, occ.GPUs[i].MaxInstances = true, occ.GPUs[i].Instances+left
		}
	}
	return occ, counted, issues
}

// PodShare is what a pod using a GPU share brings to it besides memory:
// its model (hetsev.io/model), busy share (hetsev.io/busy-share) and
// latency-inflation limit (hetsev.io/max-inflation). As in annotation
// mode (gpuinventory.Occupancy.AddPod), an unreadable busy share counts as
// busy all the time and an unreadable limit as none; a model holding "/"
// (gpuinventory.CheckModel) is counted as it reads. err names the
// annotation.
func PodShare(pod *v1.Pod) (gpuinventory.Demand, error) {
	d := gpuinventory.Demand{Model: pod.Annotations[v1alpha1.AnnotationModel], Scope: gpuinventory.ModelScope(pod)}
	var errs []error
	if err := gpuinventory.CheckModel(d.Model); err != nil {
		errs = append(errs, err)
	}
	b, err := gpuinventory.ParseBusyShare(pod.Annotations)
	if err != nil {
		b = 1
		errs = append(errs, fmt.Errorf("%v: counted as %s", err, gpuinventory.CountedBusyAllTheTime))
	}
	d.BusyShare = b
	m, err := gpuinventory.ParseMaxInflation(pod.Annotations)
	if err != nil {
		errs = append(errs, fmt.Errorf("%v: counted as %s", err, gpuinventory.CountedNoInflationLimit))
	}
	d.MaxInflation = m
	return d, errors.Join(errs...)
}

// AddUnclaimedPod counts a pod bound to the node that uses a GPU share
// whose claim holds no device here (deallocated or deleted while the pod
// runs: the driver prepared the device and the pod still uses it) on the
// device of its hetsev.io/gpu-index, with memMiB of its memory (the
// claim's request, or the device's whole memory when unknown: memMiB <=
// 0). A malformed index counts the pod on every device; a pod without one,
// or with an index no device has, is not counted. It returns what was
// counted, for the caller to report ("" when nothing).
func AddUnclaimedPod(occ *gpuinventory.Occupancy, n *NodeDevices, pod *v1.Pod, memMiB int64) string {
	idx, has, err := gpuinventory.ParseGPUIndex(pod.Annotations)
	if !has {
		return ""
	}
	d, _ := PodShare(pod)
	place := func(i int) {
		d.MemoryMiB = memMiB
		if memMiB <= 0 {
			d.MemoryMiB = occ.GPUs[i].TotalMiB
		}
		occ.Place(gpuinventory.Placement{Index: i, Demand: d})
	}
	if err != nil {
		for i := range n.Devices {
			place(i)
		}
		return fmt.Sprintf("%v; its claim holds no device: counted on %s", err, gpuinventory.CountedEveryGPU)
	}
	for i, dev := range n.Devices {
		if dev.Index == idx {
			place(i)
			return fmt.Sprintf("its claim holds no device: counted on GPU %d from %s", idx, v1alpha1.AnnotationGPUIndex)
		}
	}
	return ""
}
