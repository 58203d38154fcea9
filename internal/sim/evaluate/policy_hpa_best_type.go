package evaluate

import (
	"github.com/hetsev/hetsev/internal/sim/hpa"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/placement"
)

// PolicyHPABestType is what a platform team runs without hetsev when it
// picks the GPU type on purpose: per service a Deployment pinned to the
// single cheapest GPU type that meets the SLO, one instance per whole GPU,
// and a HorizontalPodAutoscaler on requests/s per pod.
const PolicyHPABestType = "k8s-hpa-best-type"

// hpaBestTypePolicy is PolicyHPABestType.
//
// Source: the HorizontalPodAutoscaler's replica rule (autoscaling/v2,
// https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/,
// "Algorithm details" and the default "behavior"), as internal/sim/hpa
// replays it: desired = ceil(current x metric / target), tolerance 0.1,
// 300 s scale-down stabilisation, scale-up max(4 pods, +100 %) per 15 s;
// evaluated every Knobs.Interval (the controller's
// --horizontal-pod-autoscaler-sync-period is 15 s, as the demo's interval).
//
// The GPU type is pinned once per service, offline, by singleType's rule:
// among the cluster's types whose profiled batch latency meets RT_max
// (L_i <= RT_max, HetSev's SLO check), the least USD per request served
// (C_i / T_i), which is what a platform team would compute from a price
// list and a benchmark, unless that type has no room left for the
// service's planned peak after the services that would lose more on their
// second choice took theirs. A pod asks for nvidia.com/gpu: 1 on a node of that
// type (a node selector on the GFD product label); the target is
// SaturationThreshold x T_i requests/s per pod, the same headroom hetsev
// scales out at (0.8 by default). The node affinity is preferred, not
// required: when the type is full, pods go to the service's next suitable
// type (spill), as a platform team configures it so that pods do not wait
// for a full type.
//
// Where it simplifies: the metric is the service's arrival rate over the
// rate window divided by its pods, launching ones included (the HPA
// averages a Pods metric over the pods that report it; an adapter
// reporting per-pod request rates behind a least-request balancer gives
// about that), also for the pods on a fallback type; pods beyond every
// suitable type's free GPUs are not created (they would stay Pending and
// cost nothing); scale-in removes the newest pods, fallback ones first.
type hpaBestTypePolicy struct {
	gpuType  []string   // per service, catalog name
	fallback [][]string // per service, fallbackTypes
	hpa      []*hpa.Autoscaler
}

func newHPABestTypePolicy(cfg *Config) (*hpaBestTypePolicy, error) {
	return newSingleTypeHPA(cfg, func(_ Service, _ string, gpus int) int { return gpus }, nil)
}

// newSingleTypeHPA is an HPA per service on the type singleTypeTarget
// picks, at its target times perPod(s, type) (1 when perPod is nil: a
// whole GPU's), with at most maxPods(s, type, its GPUs) replicas.
func newSingleTypeHPA(cfg *Config, maxPods func(s Service, gpuType string, gpus int) int, perPod func(s Service, gpuType string) float64) (*hpaBestTypePolicy, error) {
	p := &hpaBestTypePolicy{}
	for _, s := range cfg.Services {
		name, target, gpus, err := singleTypeTarget(cfg, s)
		if err != nil {
			return nil, err
		}
		if perPod != nil {
			target *= perPod(s, name)
		}
		fb := fallbackTypes(cfg, s)
		most := maxPods(s, name, gpus)
		for _, t := range fb {
			most += maxPods(s, t, gpusOf(cfg, t))
		}
		a, err := hpa.New(int32(cfg.Knobs.MinReplicas), int32(max(most, cfg.Knobs.MinReplicas)), target)
		if err != nil {
			return nil, err
		}
		p.gpuType, p.fallback, p.hpa = append(p.gpuType, name), append(p.fallback, fb), append(p.hpa, a)
	}
	return p, nil
}

func (p *hpaBestTypePolicy) decide(svc int, v view) []int {
	i := typeIndexOf(v, p.gpuType[svc])
	if i < 0 {
		return make([]int, len(v.types))
	}
	current := 0
	for _, t := range v.types {
		current += t.running
	}
	// The HPA averages the metric over the pods; each pod's requests/s is
	// its share of W.
	metric := v.arrival / float64(max(current, 1))
	want := int(p.hpa[svc].Desired(at(v.now), int32(max(current, 1)), metric))
	return spill(v, i, fallbackIndices(v, p.fallback[svc]), want-current)
}

func (p *hpaBestTypePolicy) serviceType(svc int) string { return p.gpuType[svc] }
func (p *hpaBestTypePolicy) wholeGPU() bool             { return true }
func (p *hpaBestTypePolicy) instant() bool              { return false }
func (p *hpaBestTypePolicy) placer() placement.Placer   { return placement.Placer{} }
func (p *hpaBestTypePolicy) demand(_ int, _ string, base gpuinventory.Demand) gpuinventory.Demand {
	return base
}
