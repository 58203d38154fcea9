package gpuinventory

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// Occupancy is what the pods on one node hold of its GPUs: the node's GPU
// inventory (GFD labels) and, per GPU, the GPU memory claimed (MiB) and the
// models placed there. hetsev-scheduler's HetsevGPUShare plugin, the
// placement rating, hetsev-scaler's free-slot count and the trace-driven
// evaluator all read occupancy from here, so all of them count a GPU the
// same way. Build it with NewOccupancy and AddPod (pods) or Place
// (simulated instances), or with Account.
type Occupancy struct {
	NodeName string
	Node     NodeGPUs
	// GPUs has one entry per GPU of the node, GPUs[i].Index == i.
	// GPUs[i].UsedMiB may exceed TotalMiB when pods were counted
	// conservatively (see AddPod): such a GPU fits nothing.
	GPUs []GPU
	// Issues are the pods whose annotations could not be read as they are,
	// and what was counted for each instead; for the caller to log.
	Issues []Issue
}

// Issue is a pod AddPod counted conservatively, or not at all because the
// GPU it names does not exist.
type Issue struct {
	Pod *v1.Pod
	Err error // names the annotation
	// Counted says what was counted for the pod: CountedWholeGPU,
	// CountedEveryGPU or CountedNothing.
	Counted string
}

// What AddPod counted for a pod with an Issue.
const (
	// CountedWholeGPU: the pod's GPU memory is unreadable; it holds all of
	// its GPU's memory (and its model, if named).
	CountedWholeGPU = "the whole GPU"
	// CountedEveryGPU: the pod's GPU index is unreadable; its demand is
	// counted on every GPU of the node.
	CountedEveryGPU = "every GPU of the node"
	// CountedNothing: the pod's GPU index is beyond the node's GPU count;
	// the container sees no GPU.
	CountedNothing = "nothing (no such GPU)"
	// CountedBusyAllTheTime: the pod's busy share is unreadable; it counts
	// as busy all the time (busy share 1) with its GPU memory as declared.
	CountedBusyAllTheTime = "busy share 1"
	// CountedNoInflationLimit: the pod's hetsev.io/max-inflation is
	// unreadable; it is counted without a limit (neighbours are never
	// refused for it).
	CountedNoInflationLimit = "no inflation limit"
)

// Reservations says which GPU the scheduler reserved for a pod that does
// not yet carry hetsev.io/gpu-index: node name and GPU index. ok is false
// when it reserved none. A nil Reservations knows of none (hetsev-scaler
// sees the API only, where a pod gets its index together with its node).
type Reservations func(uid types.UID) (node string, index int, ok bool)

// NewOccupancy is the occupancy of node name with inventory n and nothing
// on its GPUs.
func NewOccupancy(name string, n NodeGPUs) *Occupancy {
	o := &Occupancy{NodeName: name, Node: n, GPUs: make([]GPU, n.Count)}
	for i := range o.GPUs {
		o.GPUs[i] = GPU{Index: i, TotalMiB: n.MemoryMiB, Models: map[string]int{}}
	}
	return o
}

// Terminal reports whether pod has finished (phase Succeeded or Failed): it
// holds no GPU, CPU or memory any more. A pod being deleted
// (deletionTimestamp set) but not yet terminal still runs and still holds
// them, as the scheduler counts it.
func Terminal(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

// AddPod counts pod, one of the pods bound or assumed to the node, on the
// node's GPUs. This is the one occupancy rule:
//
//   - A terminal pod (Terminal) holds nothing.
//   - A pod with none of hetsev.io/model, hetsev.io/gpu-memory and
//     hetsev.io/gpu-index holds nothing.
//   - Its GPU is hetsev.io/gpu-index (written by hetsev-scheduler in the
//     binding) or, while the pod does not carry it yet, the GPU reserved
//     for it on this node (reserved; an assumed pod between Reserve and
//     binding). A pod with neither sees no GPU (its NVIDIA_VISIBLE_DEVICES,
//     from the absent annotation, is empty) and holds nothing.
//   - It holds hetsev.io/gpu-memory (MiB, rounded up) of that GPU's memory,
//     hetsev.io/busy-share of its time (absent: 1) and, when
//     hetsev.io/model names a model, one instance of that model there
//     (anti-affinity).
//
// Malformed annotations never make a pod that may be using a GPU vanish
// from the occupancy (which would let another instance over-commit its
// GPU); each is counted on the safe side and reported in Issues:
//
//   - hetsev.io/gpu-memory malformed, not positive, too large or missing
//     (on a pod with hetsev.io/model or hetsev.io/gpu-index): the pod holds
//     its GPU's whole memory (CountedWholeGPU);
//   - hetsev.io/gpu-index not a non-negative integer (the NVIDIA runtime may
//     read it as several GPUs, or "all"): its demand is counted on every GPU
//     of the node (CountedEveryGPU);
//   - hetsev.io/gpu-index beyond the node's GPU count: no such GPU for the
//     container to see; counted nowhere (CountedNothing);
//   - hetsev.io/busy-share malformed or outside (0, 1]: the pod counts as
//     busy all the time (CountedBusyAllTheTime);
//   - hetsev.io/max-inflation malformed or below 1: no limit
//     (CountedNoInflationLimit).
func (o *Occupancy) AddPod(pod *v1.Pod, reserved Reservations) {
	if pod == nil || Terminal(pod) {
		return
	}
	d, isGPU, demandErr := DemandOf(pod)
	idx, hasIdx, idxErr := ParseGPUIndex(pod.Annotations)
	if !isGPU && !hasIdx {
		return
	}
	if !hasIdx {
		if reserved == nil {
			return
		}
		node, i, ok := reserved(pod.UID)
		if !ok || node != o.NodeName {
			return
		}
		idx = i
	}
	if !isGPU {
		demandErr = fmt.Errorf("pod on a GPU (%s) has no %s", v1alpha1.AnnotationGPUIndex, v1alpha1.AnnotationGPUMemory)
	}
	var gte *GPUTimeError
	if errors.As(demandErr, &gte) {
		counted := CountedNoInflationLimit
		if _, err := ParseBusyShare(pod.Annotations); err != nil {
			d.BusyShare = 1 // counted as busy all the time, under the cap too
			counted = CountedBusyAllTheTime
		}
		o.Issues = append(o.Issues, Issue{Pod: pod, Err: demandErr, Counted: counted})
		demandErr = nil
	}
	if demandErr != nil {
		d = Demand{Model: pod.Annotations[v1alpha1.AnnotationModel], Scope: ModelScope(pod), MemoryMiB: o.Node.MemoryMiB}
		o.Issues = append(o.Issues, Issue{Pod: pod, Err: demandErr, Counted: CountedWholeGPU})
	}
	if idxErr != nil {
		for i := range o.GPUs {
			o.Place(Placement{Index: i, Demand: d})
		}
		o.Issues = append(o.Issues, Issue{Pod: pod, Err: idxErr, Counted: CountedEveryGPU})
		return
	}
	if !o.Place(Placement{Index: idx, Demand: d}) {
		o.Issues = append(o.Issues, Issue{Pod: pod, Counted: CountedNothing,
			Err: fmt.Errorf("annotation %s=%d: the node has %d GPUs", v1alpha1.AnnotationGPUIndex, idx, o.Node.Count)})
	}
}

// Place counts one instance on GPU p.Index: p.Demand.MemoryMiB of its
// memory, its declared busy share (p.Demand.BusyShare > 0; an undeclared
// one counts as 1 in GPU.Shares only) and, when p.Demand.Model is not
// empty, one instance of its identity (Demand.Identity) in GPU.Models.
// It is false, and counts nothing, when the node has no GPU p.Index.
func (o *Occupancy) Place(p Placement) bool {
	if p.Index < 0 || p.Index >= len(o.GPUs) {
		return false
	}
	g := &o.GPUs[p.Index]
	g.UsedMiB += p.Demand.MemoryMiB
	if p.Demand.BusyShare > 0 {
		g.BusyShare += p.Demand.Busy()
	}
	g.Shares = append(g.Shares, InstanceShare{Model: p.Demand.Model, Scope: p.Demand.Scope, BusyShare: p.Demand.Busy(), MaxInflation: p.Demand.MaxInflation})
	g.Instances++
	if p.Demand.Model != "" {
		g.Models[p.Demand.Identity()]++
	}
	return true
}

// Placement is a placed instance: which GPU index holds which demand.
type Placement struct {
	Index  int
	Demand Demand
}

// Account is the per-GPU occupancy of a node with inventory n from the
// instances placed on it (Occupancy.Place). Placements whose index is out
// of range are returned in stray so the caller can log them; they are not
// counted.
func Account(n NodeGPUs, placed []Placement) (gpus []GPU, stray []Placement) {
	o := NewOccupancy("", n)
	for _, p := range placed {
		if !o.Place(p) {
			stray = append(stray, p)
		}
	}
	return o.GPUs, stray
}
