package placement

import (
	"fmt"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// Why a GPU refuses an instance (Refusal.Reason), in the order Admit
// checks them.
const (
	// RefusedGPUMemory: the GPU has less free GPU memory than the instance
	// declares (hetsev.io/gpu-memory).
	RefusedGPUMemory = "GPUMemory"
	// RefusedCapacity: the GPU's DRA device has no room for another claim
	// in a capacity other than memory that every claim is charged
	// (gpuinventory.GPU.Capped: NVIDIA's shares, HAMi's cores).
	RefusedCapacity = "Capacity"
	// RefusedBusyShare: the GPU's summed declared busy share with the
	// instance's would exceed maxBusyShare (Choice.MaxBusyShare).
	RefusedBusyShare = "BusyShare"
	// RefusedAntiAffinity: the GPU hosts an instance of the same model
	// (HetSev 4.2). Under soft anti-affinity Pick still takes such a GPU
	// when no GPU admits the instance.
	RefusedAntiAffinity = "AntiAffinity"
	// RefusedInflationLimit: the co-location model predicts, for the
	// instance or a neighbour, a latency inflation above its
	// hetsev.io/max-inflation.
	RefusedInflationLimit = "InflationLimit"
)

// Refusal says why a GPU does not admit an instance.
type Refusal struct {
	// Reason is one of the Refused* constants.
	Reason string
	// Message says it for humans, naming the annotation or argument.
	Message string
}

func (r *Refusal) Error() string { return r.Message }

// Admit is hetsev's admission rule for one instance d on GPU g, the one
// rule both hetsev-scheduler's HetsevGPUShare Filter (through Pick) and
// hetsev-scaler's free slots (Slots) apply. It is nil when g admits d, else
// the first rule g breaks:
//
//  1. GPU memory: d.MemoryMiB fits g's free GPU memory, and g has room
//     for one more instance under its cap (GPU.HasRoom);
//  2. busy share: g's summed declared busy share plus d's stays within
//     pl.Choice.MaxBusyShare (gpuinventory.GPU.FitsBusyShare; <= 0: no cap);
//  3. anti-affinity: g hosts no instance of d's model identity
//     (d.Identity: the model in d's namespace, or cluster-wide; HetSev 4.2);
//  4. inflation limits: the predicted latency inflation of d and of every
//     instance on g stays within its hetsev.io/max-inflation (Admits).
//
// Under soft anti-affinity (Choice.SoftAntiAffinity) a GPU refused for
// rule 3 alone is a fallback Pick takes when no GPU of the node admits d.
func (pl Placer) Admit(g gpuinventory.GPU, d gpuinventory.Demand) *Refusal {
	reason := pl.refusal(g, d, false)
	if reason == "" {
		return nil
	}
	return &Refusal{reason, pl.refusalMessage(reason, g, d, false)}
}

// refusal is the Reason Admit gives, "" when g admits d, without building
// its message: Pick and Slots ask it for every GPU of every node. With
// hosting the anti-affinity rule is reversed: only a GPU that hosts d's
// model passes (the soft anti-affinity fallback).
func (pl Placer) refusal(g gpuinventory.GPU, d gpuinventory.Demand, hosting bool) string {
	switch {
	case d.MemoryMiB > g.FreeMiB():
		return RefusedGPUMemory
	case !g.HasRoom():
		return RefusedCapacity
	case !g.FitsBusyShare(d, pl.Choice.MaxBusyShare):
		return RefusedBusyShare
	case (d.Model != "" && g.Models[d.Identity()] > 0) != hosting:
		return RefusedAntiAffinity
	case !pl.Admits(g, d):
		return RefusedInflationLimit
	}
	return ""
}

// refusalMessage says reason for humans, naming the annotation or argument.
func (pl Placer) refusalMessage(reason string, g gpuinventory.GPU, d gpuinventory.Demand, hosting bool) string {
	switch reason {
	case RefusedGPUMemory:
		return fmt.Sprintf("GPU %d has %d MiB of free GPU memory, the instance needs %d MiB (%s)", g.Index, g.FreeMiB(), d.MemoryMiB, v1alpha1.AnnotationGPUMemory)
	case RefusedCapacity:
		return fmt.Sprintf("GPU %d holds %d claims, all its capacities other than memory admit (the DRA driver charges each claim them)", g.Index, g.Instances)
	case RefusedBusyShare:
		return fmt.Sprintf("GPU %d carries busy share %g; with the instance's %s %g it would exceed maxBusyShare %g", g.Index, g.BusyShare, v1alpha1.AnnotationBusyShare, d.Busy(), pl.Choice.MaxBusyShare)
	case RefusedAntiAffinity:
		if hosting {
			return fmt.Sprintf("GPU %d hosts no instance of model %q", g.Index, d.Identity())
		}
		return fmt.Sprintf("GPU %d already hosts model %q (anti-affinity)", g.Index, d.Identity())
	}
	return fmt.Sprintf("on GPU %d the instance's or a neighbour's predicted latency inflation would exceed its %s", g.Index, v1alpha1.AnnotationMaxInflation)
}

// Refusal is Admit's Reason alone ("" when g admits d), for callers that
// tally reasons over many GPUs and need no message.
func (pl Placer) Refusal(g gpuinventory.GPU, d gpuinventory.Demand) string {
	return pl.refusal(g, d, false)
}

// MaxSlotsPerGPU bounds how many instances Slots counts on one GPU: a
// bound on the work for demands that are tiny against the GPU's memory and
// carry no model (hence no anti-affinity). Our choice.
const MaxSlotsPerGPU = 16

// Slots is how many more instances of d fit one node (HetSev 4.1
// constraint 2) by the scheduler's rule: instances are placed one after
// another where Pick places them (Admit; under soft anti-affinity also on
// GPUs hosting the model) and each is counted on its GPU before the next
// is placed, so its GPU memory, busy share, model and predicted inflation
// bear on the next one's fit. The count is bounded by the node's free CPU
// and memory: freeCPU and cpu are millicores, freeMem and mem any one unit
// (bytes, MiB); a request <= 0 does not bound. gpus is not modified.
// hetsev-scaler counts its free slots (MaxAdditional) with it.
func (pl Placer) Slots(gpus []gpuinventory.GPU, d gpuinventory.Demand, freeCPU, cpu, freeMem, mem int64) int {
	limit := MaxSlotsPerGPU * len(gpus)
	if cpu > 0 {
		limit = min(limit, int(max(freeCPU/cpu, 0)))
	}
	if mem > 0 {
		limit = min(limit, int(max(freeMem/mem, 0)))
	}
	if limit == 0 {
		return 0
	}
	occ := &gpuinventory.Occupancy{GPUs: cloneGPUs(gpus)}
	perGPU := make([]int, len(gpus))
	n := 0
	for n < limit {
		idx, _, _, ok := pl.Pick(occ.GPUs, d)
		if !ok {
			break
		}
		pos := positionOf(occ.GPUs, idx)
		if pos < 0 || perGPU[pos] >= MaxSlotsPerGPU {
			break
		}
		occ.Place(gpuinventory.Placement{Index: pos, Demand: d})
		perGPU[pos]++
		n++
	}
	return n
}

// cloneGPUs copies gpus deeply enough to place instances on the copy.
func cloneGPUs(gpus []gpuinventory.GPU) []gpuinventory.GPU {
	out := make([]gpuinventory.GPU, len(gpus))
	for i, g := range gpus {
		g.Models = make(map[string]int, len(gpus[i].Models))
		for m, k := range gpus[i].Models {
			g.Models[m] = k
		}
		g.Shares = append([]gpuinventory.InstanceShare(nil), gpus[i].Shares...)
		out[i] = g
	}
	return out
}

// positionOf is the position in gpus of the GPU with index idx, -1 if none.
func positionOf(gpus []gpuinventory.GPU, idx int) int {
	for i := range gpus {
		if gpus[i].Index == idx {
			return i
		}
	}
	return -1
}
