package evaluate

import (
	"math"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/placement"
)

// PolicyHAMiCores is what a platform team runs when it shares GPUs with
// HAMi: per service a Deployment on the single cheapest GPU type that meets
// the SLO, pods that each ask for their model's GPU memory and a compute
// share sized from the service's history, which HAMi-core enforces, a
// HorizontalPodAutoscaler on requests/s per pod scaled to that share, and
// HAMi's default scheduler policy.
const PolicyHAMiCores = "hami-gpucores-hpa"

// hamiDeviceSplitCount is the most pods HAMi puts on one GPU: the device
// plugin's deviceSplitCount, 10 in the chart's values
// (Project-HAMi/HAMi charts/hami/values.yaml).
const hamiDeviceSplitCount = 10

// hamiCoresPolicy is PolicyHAMiCores.
//
// Sources:
//   - resources: a pod asks nvidia.com/gpu 1, nvidia.com/gpumem (MiB) and
//     nvidia.com/gpucores (percent of the GPU's compute), the chart's
//     resourceMem and resourceCores (Project-HAMi/HAMi
//     charts/hami/values.yaml). A pod here asks for its model's profiled
//     GPU memory and the compute share hamiCores sizes;
//   - the compute share: kai-fraction-hpa's fraction read off the
//     history (plannedPeakRPS / T_i, at least the model's share of the
//     GPU's memory: a GPU full of such pods by memory has no compute left
//     to sell below it), rounded up to a whole percent, as gpucores is an
//     integer. A service with no history gets 100 (a whole GPU);
//   - enforcement: HAMi-core holds back a container's kernel launches
//     while it runs above its gpucores (modelserver.Config.ComputeShare),
//     so a pod never takes more of the GPU's time than its share, even
//     beside idle neighbours;
//   - placement: HAMi's default scheduler policy, nodeSchedulerPolicy
//     binpack and gpuSchedulerPolicy spread (charts/hami/values.yaml
//     scheduler.defaultSchedulerPolicy): the node with the most of its
//     GPUs' memory in use first, then on it the GPU with the least. A GPU
//     fits while it has the memory free, its pods' gpucores stay within
//     100, and it holds fewer than deviceSplitCount pods;
//   - scaling: the HorizontalPodAutoscaler's replica rule, as
//     kai-fraction-hpa, with target cores x SaturationThreshold x T_i
//     requests/s per pod.
//
// Where it simplifies: HAMi-core's limiter samples the GPU's utilisation
// and lets short bursts through; the replay's hold is per batch (a strict
// pace). HAMi scores a node by its devices' count, memory and cores in use
// together; here by memory in use, which orders nodes of one GPU type the
// same way when the pods on them are alike.
type hamiCoresPolicy struct {
	*hpaBestTypePolicy
	// pl only estimates co-location inflation for the view; placement is
	// pickGPU's.
	pl placement.Placer
	// cores is each service's compute share, in (0, 1], whole percent.
	cores []float64
}

// hamiCores is the compute share an operator gives service s's pods on
// gpuType (catalog name): kaiFraction rounded up to a whole percent.
func hamiCores(cfg *Config, s Service, gpuType string) float64 {
	return min(1, math.Ceil(100*kaiFraction(cfg, s, gpuType)-1e-9)/100)
}

func newHAMiCoresPolicy(cfg *Config) (*hamiCoresPolicy, error) {
	p := &hamiCoresPolicy{pl: placement.Placer{Colocation: cfg.Colocation, Mode: cfg.GPUSharing}}
	// As many pods as the type's GPUs hold by memory, cores and count.
	h, err := newSingleTypeHPA(cfg, func(s Service, name string, gpus int) int {
		g, okg := cfg.Catalog.ByName(name)
		prof, okp := cfg.Profiles.Get(s.Model, name)
		if !okg || !okp || prof.GPUMemoryMiB <= 0 {
			return gpus
		}
		per := min(int(g.MemoryMiB/prof.GPUMemoryMiB), int(math.Floor(1/hamiCores(cfg, s, name)+1e-9)), hamiDeviceSplitCount)
		return gpus * max(per, 1)
	}, func(s Service, name string) float64 { return hamiCores(cfg, s, name) })
	if err != nil {
		return nil, err
	}
	p.hpaBestTypePolicy = h
	for k, s := range cfg.Services {
		p.cores = append(p.cores, hamiCores(cfg, s, h.gpuType[k]))
	}
	return p, nil
}

// hamiFits reports whether GPU g takes one more pod of d under HAMi's
// rules: its memory, gpucores within 100 (d.BusyShare carries the pod's
// share) and fewer than deviceSplitCount pods.
func hamiFits(g gpuinventory.GPU, d gpuinventory.Demand) bool {
	return g.Instances < hamiDeviceSplitCount && d.MemoryMiB <= g.FreeMiB() && g.BusyShare+d.BusyShare <= 1+1e-9
}

// pickGPU is HAMi's binpack of nodes and spread of GPUs: among nodes of
// type t with room for cpu and mem and a GPU that fits, the one with the
// most GPU memory in use (ties to the first), and on it the fitting GPU
// with the least (ties to the lowest index).
func (p *hamiCoresPolicy) pickGPU(c *cluster, t string, d gpuinventory.Demand, cpu, mem int64) (node, gpu int, ok bool) {
	var bestUsed int64
	for i, nd := range c.nodes {
		if !hostFits(nd, t, cpu, mem) {
			continue
		}
		var used int64
		g, fits := -1, false
		var gUsed int64
		for _, x := range nd.gpus() {
			used += x.UsedMiB
			if hamiFits(x, d) && (!fits || x.UsedMiB < gUsed) {
				g, gUsed, fits = x.Index, x.UsedMiB, true
			}
		}
		if fits && (!ok || used > bestUsed) {
			node, gpu, bestUsed, ok = i, g, used, true
		}
	}
	return node, gpu, ok
}

// slots is how many more pods of d fit the type's nodes under hamiFits,
// bounded by each node's free CPU and memory.
func (p *hamiCoresPolicy) slots(c *cluster, t string, d gpuinventory.Demand, cpu, mem int64) int {
	return sharedSlots(c, t, cpu, mem, func(g gpuinventory.GPU) int64 {
		per := int64(hamiDeviceSplitCount - g.Instances)
		if d.MemoryMiB > 0 {
			per = min(per, max(g.FreeMiB(), 0)/d.MemoryMiB)
		}
		if d.BusyShare > 0 {
			per = min(per, int64(math.Floor((1-g.BusyShare)/d.BusyShare+1e-9)))
		}
		return per
	})
}

func (p *hamiCoresPolicy) wholeGPU() bool { return false }
func (p *hamiCoresPolicy) instant() bool  { return false }

func (p *hamiCoresPolicy) placer() placement.Placer { return p.pl }

// demand is the model, its GPU memory, and its gpucores as the busy share
// the GPU's accounting sums: no inflation limit.
func (p *hamiCoresPolicy) demand(svc int, _ string, base gpuinventory.Demand) gpuinventory.Demand {
	if svc < len(p.cores) {
		base.BusyShare = p.cores[svc]
	}
	return base
}

// computeShare is HAMi-core's cap on service svc's servers.
func (p *hamiCoresPolicy) computeShare(svc int) float64 {
	if svc < len(p.cores) {
		return p.cores[svc]
	}
	return 0
}
