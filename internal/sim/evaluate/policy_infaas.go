package evaluate

import (
	"slices"
	"time"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/placement"
)

// PolicyINFaaS is reactive scaling with GPUs shared by memory only:
// hetsev's scaler without its interference awareness, and INFaaS's choice
// of worker for a new instance.
const PolicyINFaaS = "infaas-packing"

// infaasPolicy is PolicyINFaaS.
//
// Source: INFaaS (F. Romero, Q. Li, N. J. Yadwadkar, C. Kozyrakis,
// "INFaaS: Automated Model-less Inference Serving", USENIX ATC 2021),
// stanford-mast/INFaaS at commit 4c5ff7b:
//   - scaling: src/worker/autoscaler.cc (checkModvar) adds
//     ceil((load - replicas x throughput) / throughput) replicas when the
//     load exceeds what the replicas serve, removes one when the load fits
//     in one fewer, and admits new replicas only when their peak GPU
//     memory fits the worker's free GPU memory; with INFaaS's own
//     autoscaler (AUTOSCALE_INFAAS) a worker holds at most one replica of
//     a GPU variant (GPU_MAX_REPLICAS = 1); nothing there predicts the
//     slowdown a neighbour causes;
//   - the worker for a new instance: src/master/queryfe_server.cc
//     (QueryOnline, when the variant is not running on a valid worker)
//     takes the workers with the least "GPU utilization"
//     (RedisMetadata::min_gpu_util_name, a sorted set,
//     src/metadata-store/redis_metadata.cc), which each worker's
//     src/worker/gpu_daemon.cc (gpuMonitor, every 2.5 s) sets to the share
//     of its GPU's memory in use (cudaMemGetInfo: "we use GPU memory usage
//     as the GPU util");
//   - a new worker: src/master/master_vm_daemon.cc starts a GPU VM only
//     when the least-utilised worker is above the utilisation threshold,
//     that is when every running worker's GPU memory is that full.
//
// Our version:
//   - scaling: heterogeneity.Autoscaler with the paper's heuristic solver
//     (scale out by the deficit at the saturation threshold, scale in one
//     instance at a time, hetsev's cool-downs), counting every instance's
//     capacity at its solo T_i (no co-location inflation);
//   - what a pod declares: its model and GPU memory only (no busy share, no
//     inflation limit), and free slots count GPU memory and anti-affinity
//     (GPU_MAX_REPLICAS = 1) only, no busy-share cap;
//   - placement (pickGPU): a worker is one GPU (INFaaS's GPU workers,
//     p3.2xlarge, have one) and a running worker one that hosts an
//     instance (is billed); its load is the share of its GPU memory in
//     use. A new instance goes to the least-loaded GPU in use that has the
//     memory and no instance of its model; only when none has, to an empty
//     GPU (a new worker), on a node already in use if one has an empty GPU.
//
// Co-located instances are then slowed in the replay by the co-location
// model at their measured busy shares, as every policy's are.
//
// Where it simplifies: INFaaS also picks a model variant and hardware per
// query and scales VMs; here each service has one model, its GPU types
// are the cluster's, and the VMs are the fixed node groups. INFaaS takes
// the 10 least-utilised workers, intersects them with the 15 of least CPU
// utilisation and picks one of those at random; here the least-utilised
// one is taken (ties to the first), CPU utilisation is not counted, and a
// new worker starts when no running one has the memory, not at a
// utilisation threshold. INFaaS's load is memory in use, not the GPU's
// busy time: an instance that computes all the time and one that idles
// weigh the same.
type infaasPolicy struct {
	*hetsevPolicy
}

func newINFaaSPolicy(cfg *Config) (*infaasPolicy, error) {
	// Without a declared busy share an instance counts its profile's T_i
	// (scaler's instanceShare) and declares none.
	// INFaaS has neither instance flavors nor a seasonal forecast: both
	// are hetsev's, and the embedded hetsevPolicy would inherit them.
	c := *cfg
	c.Services = slices.Clone(cfg.Services)
	for i := range c.Services {
		c.Services[i].BusyShare = 0
	}
	c.Flavors = nil
	c.Knobs.SeasonalForecast = false
	// A peer decides every Knobs.Interval, as the others without a
	// cadence of their own; the embedded hetsevPolicy would otherwise
	// pace it at hetsev-scaler's interval.
	c.Knobs.ScalerInterval = cfg.Knobs.Interval.Truncate(time.Second)
	h, err := newHetsevPolicy(&c, heterogeneity.SolverHeuristic, 0)
	if err != nil {
		return nil, err
	}
	h.pl.Choice.MaxBusyShare = 0 // memory only
	return &infaasPolicy{h}, nil
}

func (p *infaasPolicy) decide(svc int, v view) []int {
	obs := heterogeneity.Observation{Now: at(v.now), ArrivalRate: v.arrival}
	for _, t := range v.types {
		// Solo capacity: no expected inflation for new instances, none
		// counted for the running ones.
		ts, _ := p.svc[svc].TypeState(t.gpu.Name, t.running, t.slots, 1, 1)
		obs.Types = append(obs.Types, ts)
	}
	return p.as[svc].Decide(obs).Delta
}

// demand is the model and its GPU memory, as base: no busy share, no
// inflation limit.
func (p *infaasPolicy) demand(_ int, _ string, base gpuinventory.Demand) gpuinventory.Demand {
	return base
}

func (p *infaasPolicy) placer() placement.Placer { return p.pl }

// pickGPU is INFaaS's worker for a new instance: among the GPUs of type t
// in use that fit d (GPU memory, no instance of its model) on nodes with
// room for cpu and mem, the one with the least share of its GPU memory in
// use (ties to the first); with none, an empty GPU (firstEmptyGPU).
func (p *infaasPolicy) pickGPU(c *cluster, t string, d gpuinventory.Demand, cpu, mem int64) (node, gpu int, ok bool) {
	best := -1.0
	for i, nd := range c.nodes {
		if !hostFits(nd, t, cpu, mem) {
			continue
		}
		for _, g := range nd.gpus() {
			if g.Instances == 0 || !g.Fits(d) || g.TotalMiB <= 0 {
				continue
			}
			if load := float64(g.UsedMiB) / float64(g.TotalMiB); !ok || load < best {
				node, gpu, best, ok = i, g.Index, load, true
			}
		}
	}
	if ok {
		return node, gpu, true
	}
	return c.firstEmptyGPU(t, d, cpu, mem)
}

// slots is MaxAdditional as hetsev-scaler counts it without the busy-share
// cap: one per GPU with the memory and no instance of the model.
func (p *infaasPolicy) slots(c *cluster, t string, d gpuinventory.Demand, cpu, mem int64) int {
	n := 0
	for _, nd := range c.nodes {
		if nd.gpuType.Name == t {
			n += gpuinventory.SlotsOnNode(nd.gpus(), d, 0, nd.freeCPU, cpu, nd.freeMiB, mem)
		}
	}
	return n
}
