package evaluate

import (
	"slices"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/placement"
)

// PolicyINFaaS is reactive scaling with GPUs shared by memory only:
// hetsev's scaler and scheduler without their interference awareness.
const PolicyINFaaS = "infaas-packing"

// infaasPolicy is PolicyINFaaS.
//
// Source: INFaaS (F. Romero, Q. Li, N. J. Yadwadkar, C. Kozyrakis,
// "INFaaS: Automated Model-less Inference Serving", USENIX ATC 2021), whose
// worker shares a GPU among model instances and scales each one reactively:
// stanford-mast/INFaaS src/worker/autoscaler.cc (checkModvar) adds
// ceil((load - replicas x throughput) / throughput) replicas when the load
// exceeds what the replicas serve, removes one when the load fits in one
// fewer, and admits a new replica when its peak GPU memory fits the GPU's
// free memory; nothing there predicts the slowdown a neighbour causes.
//
// Our version is hetsev's decision and placement with the interference
// awareness taken out, so the gap to hetsev-heuristic is the worth of that
// awareness alone:
//   - scaling: heterogeneity.Autoscaler with the paper's heuristic solver
//     (scale out by the deficit at the saturation threshold, scale in one
//     instance at a time, hetsev's cool-downs), counting every instance's
//     capacity at its solo T_i (no co-location inflation);
//   - what a pod declares: its model and GPU memory only (no busy share, no
//     inflation limit), and free slots count GPU memory and anti-affinity
//     only (no busy-share cap);
//   - placement: best fit by GPU memory with hard anti-affinity
//     (interference weight 0): GPUs in use fill up before an empty one is
//     taken, as INFaaS starts a worker VM only when no running one has the
//     memory.
//
// Co-located instances are then slowed in the replay by the co-location
// model at their measured busy shares, as every policy's are.
//
// Where it simplifies: INFaaS also picks a model variant and hardware per
// query and scales VMs; here each service has one model, its GPU types
// are the cluster's, and the VMs are the fixed node groups. INFaaS loads
// a variant on the least-loaded running worker that has the memory, and a
// new worker only when none has; on a fixed cluster whose idle GPUs cost
// nothing, best fit by memory is the nearest rule of hetsev's placer (it
// packs a GPU in use before it opens an empty one, though by least rather
// than most free memory).
type infaasPolicy struct {
	*hetsevPolicy
}

func newINFaaSPolicy(cfg *Config) (*infaasPolicy, error) {
	// Without a declared busy share an instance counts its profile's T_i
	// (scaler's instanceShare) and declares none.
	c := *cfg
	c.Services = slices.Clone(cfg.Services)
	for i := range c.Services {
		c.Services[i].BusyShare = 0
	}
	h, err := newHetsevPolicy(&c, heterogeneity.SolverHeuristic, 0)
	if err != nil {
		return nil, err
	}
	h.pl.Choice.MaxBusyShare = 0 // memory only
	h.pl.Choice.Fit = gpuinventory.FitBest
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
