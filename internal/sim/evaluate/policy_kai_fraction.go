package evaluate

import (
	"math"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/placement"
)

// PolicyKAIFraction is what a platform team runs when it shares GPUs by
// fractions without hetsev: per service a Deployment on the single
// cheapest GPU type that meets the SLO, pods that each ask for a GPU
// fraction sized from the service's history, a HorizontalPodAutoscaler on
// requests/s per pod scaled to that fraction, and KAI Scheduler's binpack.
const PolicyKAIFraction = "kai-fraction-hpa"

// kaiFractionPolicy is PolicyKAIFraction.
//
// Sources:
//   - GPU memory per pod: KAI Scheduler's GPU sharing (NVIDIA/KAI-Scheduler
//     docs/gpu-sharing/README.md: a pod's `gpu-memory` annotation, MiB, or
//     `gpu-fraction`, a share of one GPU's memory; the rest of the GPU's
//     memory is left to other pods; no isolation), as HAMi's
//     `nvidia.com/gpumem` resource (Project-HAMi/HAMi
//     charts/hami/values.yaml resourceMem) does. A pod here asks for the
//     fraction kaiFraction sizes, and so for that share of its GPU's
//     memory, never less than its model's profiled GPU memory;
//   - the fraction: what an operator reads off the service's history
//     (Service.History) before writing the annotation: the share of the
//     GPU's time its planned peak keeps busy at the profiled throughput,
//     plannedPeakRPS / T_i, at least the model's share of the GPU's
//     memory and at most 1. A service with no history gets whole GPUs
//     (fraction 1), as an operator who cannot size it would give it;
//   - placement: KAI's binpack. Its GPU order (pkg/scheduler/plugins/gpupack
//     gpuOrderFn) scores a GPU by its used share of GPU memory
//     (NodeInfo.GetUsedGpuPortion), most used first; its node order puts
//     nodes with a shared GPU the pod fits first
//     (pkg/scheduler/plugins/gpusharingorder, scores.GpuSharing) and then
//     the most allocated node (pkg/scheduler/plugins/nodeplacement/pack.go).
//     A GPU fits on memory alone (pkg/scheduler/api/node_info/
//     gpu_sharing_node_info.go, IsTaskFitOnGpuGroup, enoughResourcesOnGpu):
//     nothing keeps two pods of one Deployment off one GPU, so two
//     instances of a service may share one here too. HAMi's GPU binpack
//     (docs/develop/scheduler-policy.md, pkg/scheduler/policy/gpu_policy.go)
//     likewise ranks the fullest card first;
//   - scaling: the HorizontalPodAutoscaler's replica rule, as
//     k8s-hpa-best-type (internal/sim/hpa), with target fraction x
//     SaturationThreshold x T_i requests/s per pod on the type
//     cheapestSuitable picks: each pod is scaled on what its slice of the
//     GPU carries, so the pods a GPU holds by memory together stay near
//     the threshold of its throughput.
//
// A pod declares its model and GPU memory only: no busy share, no inflation
// limit, and no busy-share cap; nothing is interference-aware. Co-located
// instances are slowed in the replay by the co-location model at their
// measured busy shares, as every policy's are.
//
// Where it simplifies: KAI orders nodes and then a node's GPUs; here one
// order over the type's GPUs, most GPU memory in use that still fits first
// (ties to the first), with an empty GPU on a node in use before one on an
// empty node, which is the same choice on nodes of one GPU type unless a
// node's other GPUs would change the node's rank. The HPA's maximum is the
// pods that fit the type's GPU memory; pods beyond what fits are not
// created (they would stay Pending and cost nothing); scale-in removes the
// newest pods. KAI's reservation pods and its consolidation action (moving
// running pods) are left out.
type kaiFractionPolicy struct {
	// The HPA on the pinned type: decide and serviceType.
	*hpaBestTypePolicy
	// pl only estimates co-location inflation for the view (cluster.inflation),
	// which decide does not read; placement is pickGPU's.
	pl placement.Placer
	// fraction is each service's GPU fraction (kaiFraction), in (0, 1].
	fraction []float64
	cfg      *Config
}

// kaiFraction is the GPU fraction an operator gives service s's pods on
// gpuType (catalog name): plannedPeakRPS(s) / T_i, at least the model's
// GPU memory over the GPU's, at most 1; 1 with no history (see
// kaiFractionPolicy).
func kaiFraction(cfg *Config, s Service, gpuType string) float64 {
	g, okg := cfg.Catalog.ByName(gpuType)
	prof, okp := cfg.Profiles.Get(s.Model, gpuType)
	peak := plannedPeakRPS(s)
	if !okg || !okp || !(peak > 0) || !(prof.ThroughputRPS > 0) || g.MemoryMiB <= 0 {
		return 1
	}
	memShare := float64(prof.GPUMemoryMiB) / float64(g.MemoryMiB)
	return min(1, max(memShare, peak/prof.ThroughputRPS))
}

func newKAIFractionPolicy(cfg *Config) (*kaiFractionPolicy, error) {
	p := &kaiFractionPolicy{pl: placement.Placer{Colocation: cfg.Colocation, Mode: cfg.GPUSharing}, cfg: cfg}
	// As many pods as the type's GPUs hold at the fraction's memory.
	h, err := newSingleTypeHPA(cfg, func(s Service, name string, gpus int) int {
		g, okg := cfg.Catalog.ByName(name)
		prof, okp := cfg.Profiles.Get(s.Model, name)
		if !okg || !okp {
			return gpus
		}
		mem := fractionMiB(kaiFraction(cfg, s, name), prof.GPUMemoryMiB, g.MemoryMiB)
		return gpus * int(max(g.MemoryMiB/max(mem, 1), 1))
	}, func(s Service, name string) float64 { return kaiFraction(cfg, s, name) })
	if err != nil {
		return nil, err
	}
	p.hpaBestTypePolicy = h
	for k, s := range cfg.Services {
		p.fraction = append(p.fraction, kaiFraction(cfg, s, h.gpuType[k]))
	}
	return p, nil
}

// pickGPU is KAI's binpack: among the GPUs of type t with d's GPU memory
// free, on nodes with room for cpu and mem, the one with the most GPU
// memory in use (ties to the first); with none in use that fits, an empty
// GPU (firstEmptyGPU). Instances of d's model do not keep it off a GPU.
func (p *kaiFractionPolicy) pickGPU(c *cluster, t string, d gpuinventory.Demand, cpu, mem int64) (node, gpu int, ok bool) {
	var best int64
	for i, nd := range c.nodes {
		if !hostFits(nd, t, cpu, mem) {
			continue
		}
		for _, g := range nd.gpus() {
			if g.Instances == 0 || d.MemoryMiB > g.FreeMiB() {
				continue
			}
			if !ok || g.UsedMiB > best {
				node, gpu, best, ok = i, g.Index, g.UsedMiB, true
			}
		}
	}
	if ok {
		return node, gpu, true
	}
	return c.firstEmptyGPU(t, d, cpu, mem)
}

// slots is how many more pods of d fit the type's nodes by GPU memory
// alone (several per GPU), bounded by each node's free CPU and memory.
func (p *kaiFractionPolicy) slots(c *cluster, t string, d gpuinventory.Demand, cpu, mem int64) int {
	return sharedSlots(c, t, cpu, mem, func(g gpuinventory.GPU) int64 {
		if d.MemoryMiB > 0 {
			return max(g.FreeMiB(), 0) / d.MemoryMiB
		}
		return 0
	})
}

// sharedSlots is how many more pods fit the nodes of GPU type t when GPUs
// are shared: on each GPU what perGPU admits, bounded by each node's free
// CPU (cpu millicores a pod) and memory (mem MiB a pod; 0: no bound).
func sharedSlots(c *cluster, t string, cpu, mem int64, perGPU func(gpuinventory.GPU) int64) int {
	n := 0
	for _, nd := range c.nodes {
		if nd.gpuType.Name != t {
			continue
		}
		k := int64(0)
		for _, g := range nd.gpus() {
			k += max(perGPU(g), 0)
		}
		if cpu > 0 {
			k = min(k, max(nd.freeCPU/cpu, 0))
		}
		if mem > 0 {
			k = min(k, max(nd.freeMiB/mem, 0))
		}
		n += int(k)
	}
	return n
}

func (p *kaiFractionPolicy) wholeGPU() bool { return false }
func (p *kaiFractionPolicy) instant() bool  { return false }

func (p *kaiFractionPolicy) placer() placement.Placer { return p.pl }

// demand is the model and the GPU memory its fraction holds on gpuType
// (at least base's, the model's): no busy share, no inflation limit.
func (p *kaiFractionPolicy) demand(svc int, gpuType string, base gpuinventory.Demand) gpuinventory.Demand {
	if g, ok := p.cfg.Catalog.ByName(gpuType); ok && svc < len(p.fraction) {
		base.MemoryMiB = fractionMiB(p.fraction[svc], base.MemoryMiB, g.MemoryMiB)
	}
	return base
}

// fractionMiB is the GPU memory, MiB, a pod with GPU fraction f holds on a
// GPU of gpuMiB: KAI reserves f of the GPU's memory (rounded up to a MiB),
// at least the model's modelMiB, at most the GPU's.
func fractionMiB(f float64, modelMiB, gpuMiB int64) int64 {
	return min(max(modelMiB, int64(math.Ceil(f*float64(gpuMiB)))), gpuMiB)
}
